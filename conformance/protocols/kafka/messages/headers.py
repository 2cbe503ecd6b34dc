"""The request and response headers that precede every Kafka body.

The request header names the API, its version, the correlation id and (from v1) the
client id; the response header repeats the correlation id.  Which header version goes
with which body version is decided in :mod:`conformance.protocols.kafka.apis`.

Versions: request header 0-2, flexible 2+; response header 0-1, flexible 1+.
"""

from __future__ import annotations

from conformance.protocols.kafka.messages import message
from conformance.wire.schema import INT16, INT32, STRING, f

REQUEST_HEADER = message(
    "RequestHeader",
    "0-2",
    "2+",
    [
        f("request_api_key", INT16),
        f("request_api_version", INT16),
        f("correlation_id", INT32),
        # always an int16 length, even in the flexible header v2: a broker must read the
        # header of an ApiVersions request of a version it does not know
        f("client_id", STRING, "1+", nullable="1+", flexible="none", default=""),
    ],
    doc="precedes every request body",
)

RESPONSE_HEADER = message(
    "ResponseHeader",
    "0-1",
    "1+",
    [f("correlation_id", INT32)],
    doc="precedes every response body",
)
