"""The V1 line conformance cases, one module per area of SPEC.md (V1L-*)."""
