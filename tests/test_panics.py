"""conformance.panics: each kind of panic a broker prints is found, and named by a signature
that stays the same from one occurrence to the next (no addresses, no values)."""

from __future__ import annotations

import re

import pytest

from conformance import panics

GO = """2026/12/07 10:00:01 accepted 127.0.0.1:50512
panic: runtime error: slice bounds out of range [-1:]

goroutine 18 [running]:
runtime.panicSliceB(0xffffffffffffffff)
\t/usr/local/go/src/runtime/panic.go:153 +0x7b
main.(*Partition).Read(0xc000112000, 0xffffffffffffffff)
\t/src/broker/storage.go:87 +0x1d4
main.handle(...)
\t/src/broker/server.go:142 +0x2b1"""

GO_FATAL = """fatal error: concurrent map writes

goroutine 7 [running]:
main.(*Groups).Join(0xc0000a4000)
\t/src/broker/groups.go:55 +0x88"""

RUST = """2026-12-07T10:00:01Z INFO tansu: listening
thread 'tokio-runtime-worker' panicked at tansu-server/src/broker/produce.rs:211:38:
attempt to subtract with overflow
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace"""

RUST_OLD = "thread 'main' panicked at 'index out of bounds', src/log.rs:40:9"

JAVA = """Exception in thread "tcp-server" java.lang.IllegalArgumentException: bad type: 7
\tat MessageType.fromByte(MessageType.java:23)
\tat TcpServer.serve(TcpServer.java:71)
\tat java.base/java.lang.Thread.run(Thread.java:840)"""

JAVA_LOGGED = """10:00:01.123 ERROR [worker-3] failed:
java.nio.BufferUnderflowException
\tat java.base/java.nio.HeapByteBuffer.get(HeapByteBuffer.java:183)
\tat Decoder.topic(Decoder.java:40)"""

PYTHON = """INFO serving
Traceback (most recent call last):
  File "/srv/broker/server.py", line 88, in handle
    reply = dispatch(frame)
  File "/srv/broker/dispatch.py", line 12, in dispatch
    return HANDLERS[frame[0]](frame)
KeyError: 7"""

ASAN = """=================================================================
==4242==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x602000000011
READ of size 1 at 0x602000000011 thread T0
    #0 0x55d1c3 in decode_header src/codec.c:31
    #1 0x55d2a0 in main src/main.c:10"""


@pytest.mark.parametrize(
    ("text", "kind", "signature", "first"),
    [
        (GO, "Go panic", "Go panic at storage.go:87", "panic: runtime error"),
        (GO_FATAL, "Go panic", "Go panic at groups.go:55", "fatal error: concurrent"),
        (RUST, "Rust panic", "Rust panic at tansu-server/src/broker/produce.rs:211", "thread"),
        (RUST_OLD, "Rust panic", "Rust panic at src/log.rs:40", "thread 'main'"),
        (
            JAVA,
            "Java exception",
            "java.lang.IllegalArgumentException at MessageType.fromByte(MessageType.java:23)",
            "Exception in thread",
        ),
        (PYTHON, "Python traceback", "KeyError at dispatch.py:12 in dispatch", "Traceback"),
        (ASAN, "sanitizer", "AddressSanitizer heap-buffer-overflow in decode_header", "==4242=="),
        ("broker: assertion failed: offset <= hw (7 > 3)", "assertion", "assertion: broker: "
         "assertion failed: offset <= hw (N > N)", "broker: assertion"),
        ("a.out: log.c:12: append: Assertion `len > 0' failed.", "assertion", None, "a.out"),
        ("fatal: out of memory allocating 2147483647 bytes", "out of memory",
         "out of memory: fatal: out of memory allocating N bytes", "fatal: out of memory"),
    ],
)  # fmt: skip
def test_each_kind_is_found_with_a_stable_signature(
    text: str, kind: str, signature: str | None, first: str
) -> None:
    found = panics.find(text.splitlines())
    assert found is not None
    assert found.kind == kind
    assert found.line.startswith(first)
    if signature is not None:
        assert found.signature == signature
    assert found.excerpt[0] == found.line
    # the same panic with other addresses and values has the same signature
    other = re.sub(r"0x[0-9a-f]+", "0xdeadbeef", text).replace("4242", "77")
    again = panics.find(other.splitlines())
    assert again is not None and again.signature == found.signature


KAFKA_LOG = """[2026-12-07 10:00:01,123] ERROR Closing socket for 127.0.0.1:9092-127.0.0.1:5512-3 \
because of error (kafka.network.Processor)
org.apache.kafka.common.errors.InvalidRequestException: Error getting request for apiKey: PRODUCE
\tat org.apache.kafka.common.requests.RequestContext.parseRequest(RequestContext.java:90)
\tat kafka.network.RequestChannel$Request.<init>(RequestChannel.scala:113)"""


@pytest.mark.parametrize(
    "lines",
    [
        [
            "serving kafka on 127.0.0.1:9092",
            "WARN client 127.0.0.1:5512 sent an unknown API key 99: answered error 35",
            "ERROR connection reset by peer",
            "java.lang.IllegalStateException mentioned in a log line without a stack",
            "panicking is not what this line does",
            "INFO compacting early to avoid running out of memory",
            "fatal error: config file /etc/broker.conf not found, using defaults",
        ],
        KAFKA_LOG.splitlines(),  # a handled exception, logged with its stack
        JAVA_LOGGED.splitlines(),
    ],
    ids=["log lines", "kafka handled exception", "logged exception"],
)
def test_ordinary_output_is_no_panic(lines: list[str]) -> None:
    assert panics.find(lines) is None


def test_a_signature_does_not_hold_the_names_a_case_made_up() -> None:
    one = panics.find(["assertion failed: topic negative-17852e2893 has offset 3"])
    two = panics.find(["assertion failed: topic negative-a1b2e3c4d5 has offset 12"])
    uuid = panics.find(
        ["assertion failed: topic 1f0e2d3c-4b5a-6978-8796-a5b4c3d2e1f0 has offset 3"]
    )
    assert one is not None and two is not None and uuid is not None
    assert (
        one.signature
        == two.signature
        == "assertion: assertion failed: topic negative-N has offset N"
    )
    assert uuid.signature == "assertion: assertion failed: topic N has offset N"


def test_a_users_pattern_adds_a_kind_of_its_own() -> None:
    lines = ["serving", "BUG: invariant broken in segment 42"]
    assert panics.find(lines) is None
    found = panics.find(lines, panics.compile_patterns([r"^BUG: "]))
    assert found is not None
    assert (found.kind, found.signature) == (
        "pattern",
        "pattern: BUG: invariant broken in segment N",
    )


def test_a_bad_pattern_is_said_in_one_line() -> None:
    with pytest.raises(ValueError, match=r"--panic-pattern '\(' is not a regular expression"):
        panics.compile_patterns(["("])


def test_the_first_panic_is_the_one_found() -> None:
    found = panics.find([*RUST.splitlines(), *GO.splitlines()])
    assert found is not None and found.kind == "Rust panic"
