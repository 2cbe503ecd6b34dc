"""The toy vector schema: ``decoded`` and ``reply`` are ``{words: [..]}``, a frame's words."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from conformance.errors import ProtocolError
from conformance.plugin import SchemaError
from conformance.vectors import mismatches


class ToyVectors:
    extra_keys: tuple[str, ...] = ()
    not_encoded: tuple[str, ...] = ()

    def check(self, raw: Mapping[str, Any], direction: str) -> dict[str, Any]:
        for key in ("decoded", "reply"):
            value = raw.get(key)
            if value is not None:
                try:
                    self.to_message(value)
                except ValueError as exc:
                    raise SchemaError(key, str(exc)) from None
        return {}

    def to_message(self, decoded: Mapping[str, Any]) -> bytes:
        words = decoded.get("words") if isinstance(decoded, Mapping) else None
        if set(decoded) != {"words"} or not isinstance(words, list) or not words:
            raise ValueError(f"must be {{words: [WORD, ...]}}, not {decoded!r}")
        return b" ".join(str(w).encode() for w in words)

    def decode(self, payload: bytes, direction: str, extras: Mapping[str, Any]) -> bytes:
        return payload  # a toy frame's payload is its words, as the message holds them

    def encode(self, message: Any, direction: str, extras: Mapping[str, Any]) -> bytes:
        return bytes(message)

    def error_name(self, exc: ProtocolError) -> str | None:
        return None  # the toy's vectors name no error code

    def from_message(self, message: Any) -> dict[str, Any]:
        return {"words": bytes(message).decode(errors="replace").split(" ")}

    def reply_mismatch(
        self, expected: Mapping[str, Any], payload: bytes, request: bytes
    ) -> str | None:
        return "; ".join(mismatches(expected, self.from_message(payload), "reply")) or None


SCHEMA = ToyVectors()
