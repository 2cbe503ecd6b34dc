"""``conformance serve --validate`` as a user meets it: its usage errors, --fault list,
--max-time, and the transport faults (split, slow, reset) as a client sees them."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

from conformance.protocols.kafka import codec
from tests.support.cli import conformance
from tests.support.kafka_client import KafkaConn
from tests.support.validating import validating

METADATA = codec.encode_request(3, 12, {"topics": None}, correlation_id=5)


def test_usage_mistakes_end_with_one_line_and_exit_2(tmp_path: Path) -> None:
    cases = [
        (["--all", "--validate"], "give --protocol P instead of --all"),
        (["--protocol", "kafka", "--fault", "Produce:split=2"], "go with --validate"),
        (["--protocol", "kafka", "--validate", "--fault", "Produce:error=NOPE"], "unknown error"),
        (
            [
                "--protocol",
                "kafka",
                "--validate",
                "--fault",
                "Metadata:error=REBALANCE_IN_PROGRESS",
            ],
            "REBALANCE_IN_PROGRESS is not an answer to Metadata; it answers Heartbeat",
        ),
        (
            ["--protocol", "kafka", "--validate", "--max-time", "0"],
            "--max-time must be a positive number",
        ),
        (["--protocol", "kafka", "--validate", "--fault-plan", "nope.yaml"], "cannot read fault"),
    ]
    for args, says in cases:
        done = conformance(tmp_path, "serve", "--port", "0", *args, timeout=60)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and says in lines[0], (args, done.stderr)
        assert "Traceback" not in done.stderr


def test_fault_list_names_each_error_with_its_requirement(tmp_path: Path) -> None:
    done = conformance(tmp_path, "serve", "--protocol", "kafka", "--fault", "list", timeout=60)
    assert done.returncode == 0, done.stderr
    assert "NOT_LEADER_OR_FOLLOWER" in done.stdout and "KAF-CLI-13" in done.stdout
    assert "rebalance" in done.stdout and "slow=MS, split=PIECES, reset=FRACTION" in done.stdout


def test_max_time_stops_by_itself_and_writes_the_report(tmp_path: Path) -> None:
    done = conformance(
        tmp_path, "serve", "--protocol", "kafka", "--port", "0", "--validate", "--max-time", "1",
        "--reports", "out", "--fault", "Produce:split=2", timeout=60,
    )  # fmt: skip
    # no client came: nothing was checked, which CI must not take for a pass
    assert done.returncode == 2, done.stderr
    assert "no client connected to 127.0.0.1:" in done.stderr
    assert "never fired: Produce: write the reply in 2 pieces (1)" in done.stdout
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert results["mode"] == "validate" and results["connections"] == 0
    assert {c["verdict"] for c in results["cases"]} == {"UNSUPPORTED"}  # nothing exercised
    again = results["cases"][0]["reproduce"]  # how to check the client the same way again
    assert again == (
        "conformance serve --protocol kafka --revision doc --port 0 --validate "
        "--fault Produce:split=2"
    )


def _recv_all(sock: socket.socket, deadline: float) -> tuple[bytes, int]:
    """Bytes until the peer closes or ``deadline``; and in how many reads they came."""
    data, reads = b"", 0
    sock.settimeout(0.5)
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            if data:
                break
            continue
        except ConnectionResetError:
            break
        if not chunk:
            break
        data, reads = data + chunk, reads + 1
    return data, reads


def test_split_slow_and_reset_replies_reach_the_client_as_planned(tmp_path: Path) -> None:
    args = ["--revision", "apache", "--fault", "Metadata:split=6"]
    args += ["--fault", "Metadata:slow=400,after=1"]
    args += ["--fault", "Metadata:reset=0.5,after=2"]
    with validating("kafka", tmp_path, *args) as v:
        address = (v.broker.host, v.broker.port)
        with socket.create_connection(address, timeout=5) as sock:
            sock.sendall(codec.frame(METADATA))
            split, reads = _recv_all(sock, 5)
            started = time.monotonic()
            sock.sendall(codec.frame(METADATA))
            slow, _ = _recv_all(sock, 5)
            waited = time.monotonic() - started
            sock.sendall(codec.frame(METADATA))
            cut, _ = _recv_all(sock, 5)
        k = KafkaConn(address)  # a client that reconnects gets answers again
        k.call(3, 12, {"topics": None})
        k.close()
    whole = int.from_bytes(split[:4], "big") + 4
    assert len(split) == whole and reads >= 2, (len(split), reads)
    assert len(slow) == whole and waited >= 0.4
    assert 0 < len(cut) < whole  # half the reply, then the reset
    faults = v.faults()
    assert [f["verdict"] for f in faults] == ["PASS", "PASS", "PASS"], [
        f["message"] for f in faults
    ]
    assert faults[2]["fault"]["did"][:1] == ["reconnected"]  # the reset was the broker's
    assert "reset by the broker (fault 3)" in faults[2]["fault"]["next"][0]
    assert "fault 3: Metadata: reset the connection" in v.stdout  # the terminal lists faults


def test_a_client_that_ends_inside_a_frame_broke_the_framing(tmp_path: Path) -> None:
    with validating("kafka", tmp_path, "--revision", "apache") as v:
        frame = codec.frame(METADATA)
        with socket.create_connection((v.broker.host, v.broker.port), timeout=5) as sock:
            sock.sendall(frame[:-3])  # the size promises 3 bytes more than come
        time.sleep(0.3)
    case = v.case("kafka/client/KAF-CLI-1")
    assert case["verdict"] == "FAIL", case["message"]
    assert "ended inside a frame: " in case["message"]
    assert v.broken() == {"KAF-CLI-1"}
