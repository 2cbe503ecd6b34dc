"""The V1 line conformance cases, one module per area of SPEC.md (V1L-*).

:mod:`.verify` is the client (a command and its args sent as one line, the reply parsed
by the codec with the evidence of the exchange), :mod:`.steps` the steps the cases share
(produce, play the followers through REPLICA_FETCH, acks=all while they report, join a
group), each blaming the requirement it relies on.  The area "durability" has no module:
its requirements need a restart, a kill or the target's data directory (SPEC.md says so
for each; tests/v1line check them on the reference broker).
"""
