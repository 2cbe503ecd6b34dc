"""The mini-Kafka conformance cases, one file per SPEC.md area (MK-*).

:mod:`.verify` is the client (a request framed with a length that counts its own 4 bytes,
the next reply frame decoded by the codec, with the evidence of the exchange) and
:mod:`.steps` the steps the cases share (produce, consume, read a topic back, flush, see
that a target goes on serving after bad input), each blaming the requirement it relies
on.  No case relies on two connections being served at once (the real server serves one
client at a time): a case that needs a second connection closes the first before opening
it.  MK-FLUSH-3 has no case: the suite cannot crash a target.
"""
