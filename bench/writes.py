"""Concurrent writes through the API, measured with wrk.

For each database (SQLite always; PostgreSQL when `--postgres URL` or CAPSTAN_TEST_DATABASE_URL
is given) this starts `capstan server --dev` as its own process (as `bench/api.py` does), makes
100 projects over HTTP, and has wrk send `PATCH /api/projects/{id}` (a new name each time, the
projects in turn: a write transaction a request) on 64 connections for `--seconds`. It prints
requests/s, p99 latency and the server's CPU per request. On SQLite every write waits for the
database's one write lock: the p99 shows how fairly the writers get it.

Run from the repository root:  .venv/bin/python bench/writes.py  [--seconds 10] [--postgres URL]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.api import (  # noqa: E402
    PROJECTS,
    Load,
    _show,
    capstan_server,
    each_database,
    wrk,
    wrk_parser,
)
from tests.apps.processes import bearer_client, free_port  # noqa: E402

SCRIPT = ROOT / "bench" / "patch.lua"


def measure(database: str, env: dict[str, str], seconds: int) -> Load:
    port = free_port()
    with (
        tempfile.TemporaryDirectory(prefix="capstan-bench-writes-") as tmp,
        capstan_server(Path(tmp), port, env) as (token, pid),
    ):
        base = f"http://127.0.0.1:{port}"
        ids = []
        with bearer_client(base, token) as api:
            for index in range(PROJECTS):
                created = api.post(
                    "/api/projects", json={"name": f"Bench {index}", "hostname_suffix": f"w{index}"}
                )
                assert created.status_code == 201, created.text
                ids.append(created.json()["id"])
            renamed = api.patch(f"/api/projects/{ids[0]}", json={"name": "Renamed"})
            assert renamed.status_code == 200, renamed.text
        ids_file = Path(tmp) / "ids"
        ids_file.write_text("\n".join(ids))
        load = wrk(base, token, seconds, pid, script=SCRIPT, IDS_FILE=str(ids_file))
        print(f"  {database} patch: {_show(load)}")
        return load


def main() -> None:
    arguments = wrk_parser(__doc__.splitlines()[0]).parse_args()
    runs = each_database(
        lambda database, settings: measure(database, settings, arguments.seconds),
        arguments.postgres,
        {},
    )
    print()
    print(f"{'database':<10} {'request':<6} | {'req/s':>7} {'p99':>10} {'CPU/req':>9} | errors")
    for database, load in runs.items():
        print(
            f"{database:<10} {'patch':<6} | {load.requests_per_second:>7,.0f} "
            f"{load.p99_ms:>8.1f}ms {load.cpu_ms:>7.3f}ms | {load.errors}"
        )


if __name__ == "__main__":
    main()
