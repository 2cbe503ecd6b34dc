"""The conformance pytest plugin (placeholder while the suite is built; inert)."""

from __future__ import annotations
