"""The V1 line conformance cases, by area of SPEC.md (V1L-*): a module or more per area.

:mod:`.verify` is the client (a command and its args sent as one line, the reply parsed
by the codec with the evidence of the exchange), :mod:`.steps` the steps the cases share
(produce, reach a partition, play the followers through REPLICA_FETCH, join a group), each
blaming the requirement it relies on, and :mod:`.acks` acks=all while the followers report,
with when a REPLICATION_TIMEOUT can be judged.  The area "durability" has no module:
its requirements need a restart, a kill or the target's data directory (SPEC.md says so
for each; tests/v1line check them on the reference broker).
"""
