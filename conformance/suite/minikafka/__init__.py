"""The mini-Kafka conformance cases, one file per SPEC.md area."""
