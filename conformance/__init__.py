"""broker-conformance: a conformance suite and fuzzer for message-broker wire protocols."""

__version__ = "0.1.0"
