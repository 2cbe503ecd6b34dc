"""The Iggy conformance cases, one module per area of SPEC.md (IGG-*).

:mod:`.verify` is the client (a command by name and body, read back as its status and
decoded reply with the evidence of the exchange), :mod:`.steps` the steps the cases
share (a fresh stream and topic, send, poll), each blaming the requirement it relies on.
"""
