"""The toy protocol's conformance cases (run by `conformance run --protocol toy`)."""
