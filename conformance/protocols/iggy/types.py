"""Where Iggy's :class:`Repeated` came from; it now lives in the generic machinery
(:class:`conformance.wire.schema_fields.Repeated`: items up to the end of the data, no
count, as Iggy's replies end in records repeated to their end).  Kept so that imports of
it from here keep working."""

from __future__ import annotations

from conformance.wire.schema_fields import Repeated

__all__ = ["Repeated"]
