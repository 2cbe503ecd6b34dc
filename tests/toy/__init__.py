"""A toy protocol, test-only, that plugs into the tool the way a real one does.

It proves the seam between the generic tool and a protocol: it registers itself through
an entry point (the tests write one), and runs through ``conformance run``, ``serve``,
``fuzz``, ``replay`` and the vector loader without a line of the generic code knowing it.
Its wire differs from Cursus on purpose: a u32 *little-endian* length that *counts
itself*, and a login (``HELLO <password>``) before anything else, driven by the session
opener.  Requests: ``PUT <topic> <value>`` -> ``OK <offset>``, ``GET <topic> <offset>``
-> ``VAL <value>`` or ``NONE``, ``PING`` -> ``PONG``; a refusal is ``ERR <why>``.
"""
