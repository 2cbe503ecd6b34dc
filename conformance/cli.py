"""``conformance``: the command line.

Exit codes, the same for every command: 0 clean; 1 a FAIL, ERROR or finding;
2 usage error, unreachable target, or a broker that failed to start, reported in
one line on stderr without a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from conformance.protocols import PROTOCOLS

EXIT_OK = 0
EXIT_FAIL = 1
EXIT_USAGE = 2


class UsageError(Exception):
    """Bad input from the user: printed as one line, exit code 2."""


def _add_quirk(p: argparse.ArgumentParser, help_text: str) -> None:
    p.add_argument("--quirk", action="append", default=[], metavar="NAME", help=help_text)


def _add_run(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "run",
        help="run the conformance suite against a target (default: the embedded reference broker)",
        description="Run every conformance case (or those selected) against a target broker.",
    )
    p.add_argument(
        "select",
        nargs="*",
        metavar="SELECT",
        help="case-ID prefixes (cursus/framing) or requirement IDs (CUR-FRAME-3)",
    )
    p.add_argument("--protocol", default="cursus", choices=PROTOCOLS)
    p.add_argument(
        "--target",
        metavar="HOST:PORT",
        help="broker to test; omitted: start the embedded reference broker",
    )
    p.add_argument(
        "--revision", help="protocol revision the target speaks (default: the document's)"
    )
    p.add_argument("--strict", action="store_true", help="a broken SHOULD (WARN) fails the run")
    p.add_argument(
        "--timeout",
        type=float,
        default=5.0,
        metavar="S",
        help="deadline in seconds for each read from the target (default 5)",
    )
    p.add_argument(
        "--dry-run", action="store_true", help="list the selected cases without running them"
    )
    p.add_argument(
        "--reports", default="reports", metavar="DIR", help="output folder (default ./reports)"
    )
    p.add_argument(
        "--compression",
        choices=("gzip", "none"),
        help="compression the target accepts (default: gzip for the embedded broker, "
        "none for a --target)",
    )
    _add_quirk(p, "start the embedded broker with this deliberate spec violation (repeatable)")
    p.add_argument("-j", "--jobs", type=int, default=1, help="parallel workers (pytest-xdist)")
    p.add_argument("-q", "--quiet", action="store_true", help="print only the summary")


def _add_serve(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "serve",
        help="run the reference broker",
        description="Run the reference broker.  With --port 0 the system picks a free port; the "
        "line 'serving PROTOCOL on HOST:PORT' on stdout says which.",
    )
    p.add_argument("--protocol", default="cursus", choices=PROTOCOLS)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=None, help="default: the protocol's own port")
    p.add_argument(
        "--data-dir", metavar="DIR", help="keep topics, messages, offsets and groups here"
    )
    _add_quirk(p, "misbehave on purpose (repeatable); --quirk list shows them")
    p.add_argument(
        "--compression",
        choices=("gzip", "none"),
        default="none",
        help="inflate batch bodies compressed with this algorithm",
    )
    p.add_argument(
        "--session-timeout",
        type=float,
        default=10.0,
        metavar="S",
        help="seconds without a heartbeat before a group member is expired",
    )
    p.add_argument("--assignor", choices=("range", "roundrobin"), default="range")
    p.add_argument(
        "--max-poll-records",
        type=int,
        default=100,
        help="most messages returned by one CONSUME (default 100)",
    )
    p.add_argument("--fsync", action="store_true", help="fsync every acknowledged write")


def _add_fuzz(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "fuzz",
        help="fuzz a target with malformed frames (default: the embedded reference broker)",
        description="Run cases 0..N-1 of a seeded fuzz campaign against a target; write one "
        "Parquet row per case under --out and a YAML reproducer per finding under --findings.",
    )
    p.add_argument("--protocol", default="cursus", choices=PROTOCOLS)
    p.add_argument(
        "--target", metavar="HOST:PORT", help="broker to fuzz; omitted: the embedded broker"
    )
    p.add_argument("--cases", type=int, default=10_000, help="number of cases (default 10000)")
    p.add_argument("--seed", type=int, default=0, help="campaign seed (default 0)")
    p.add_argument(
        "--out", default="reports/fuzz", metavar="DIR", help="rows and logs (default reports/fuzz)"
    )
    p.add_argument(
        "--findings",
        default="fuzz/findings",
        metavar="DIR",
        help="where reproducers are saved (default fuzz/findings)",
    )
    p.add_argument(
        "--spark-master",
        metavar="URL",
        help="run the campaign on Spark (local[*], spark://HOST:PORT); omitted: in this process",
    )
    p.add_argument(
        "--deadline",
        type=float,
        default=2.0,
        metavar="S",
        help="seconds the target has to answer or close after a case (default 2)",
    )
    p.add_argument(
        "--canary-every",
        type=int,
        default=250,
        metavar="N",
        help="run the canary round trip every N cases (default 250)",
    )
    _add_quirk(p, "start the embedded broker with this quirk (repeatable; see serve --quirk list)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")


def _add_replay(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "replay",
        help="replay a fuzz finding (exit 1 if it still reproduces, 0 if not)",
        description="Run a YAML reproducer written by 'conformance fuzz' against a target.",
    )
    p.add_argument("file", metavar="FILE", help="a reproducer (fuzz/findings/*.yaml)")
    p.add_argument(
        "--target",
        metavar="HOST:PORT",
        help="broker to replay against; omitted: the embedded broker with the reproducer's quirks",
    )
    p.add_argument("--timeout", type=float, metavar="S", help="override the reproducer's deadline")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="conformance",
        description="Conformance suite and fuzzer for message-broker wire protocols.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    _add_run(sub)
    _add_serve(sub)
    _add_fuzz(sub)
    _add_replay(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)  # argparse exits 2 on a usage error
    try:
        if args.command == "run":
            from conformance.runner import run_command

            return run_command(args)
        if args.command == "serve":
            from conformance.serve import serve_command

            return serve_command(args)
        if args.command == "fuzz":
            from conformance.fuzz.command import fuzz_command

            return fuzz_command(args)
        if args.command == "replay":
            from conformance.fuzz.command import replay_command

            return replay_command(args)
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    except UsageError as exc:
        print(f"conformance {args.command}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
