"""The Kafka conformance cases, one module per area of SPEC.md (KAF-*)."""
