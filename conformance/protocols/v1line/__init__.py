"""The V1 line protocol (v1-line-protocol.txt): a versioned text envelope, consumer groups and
leader/follower replication; revisions ``doc`` and ``real`` (SPEC.md, FACTS.md)."""
