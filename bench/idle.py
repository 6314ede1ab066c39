"""What `capstan server` costs when it has nothing to do: empty, and with 10,000 settled
resources, in one run.

This starts a zero-delay `capstan sandbox` and a `capstan server --dev` (SQLite, its in-process
reconcile workers on, the resync an hour away so the window falls between two resyncs) as
separate processes, connects the cloud account and installs the git host app over HTTP, and
measures the server process's CPU time (user + system, from /proc/<pid>/stat) over `--seconds`:

1. empty: no resource at all;
2. settled: a web server (deployed until `running`), a cache and a bucket are made over HTTP and
   left to settle, then copied in the database until there are `--resources` of them (the copies
   are rows exactly like the settled originals, with their own ids and names: nothing is due for
   them until the next resync, as for any settled resource).

It prints each figure as a percentage of one core, and the ratio of the two. The issue's goals:
an empty server under 0.5 % of one core, 10,000 settled resources under 5 %.

Run from the repository root:  .venv/bin/python bench/idle.py  [--seconds 30] [--resources 10000]
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.deploy import cpu_seconds  # noqa: E402
from tests.apps.processes import (  # noqa: E402
    create_project,
    processes,
    ready_dev_server,
    wait_all_running,
    web_server_body,
)

from capstan.db import new_id  # noqa: E402 (the repository root is on the path now)

GOAL_EMPTY, GOAL_SETTLED = 0.5, 5.0


def core_percent(pid: int, seconds: float) -> float:
    """The share of one core `pid` used over the next `seconds`."""
    before, started = cpu_seconds(pid), time.monotonic()
    time.sleep(seconds)
    return 100 * (cpu_seconds(pid) - before) / (time.monotonic() - started)


def clone(database: Path, table: str, row_id: str, copies: int) -> None:
    """`copies` rows like `row_id` of `table`: new ids, and a suffix on every text column of a
    unique index that is not a reference (so a name stays unique within its project)."""
    with sqlite3.connect(database) as db:
        columns = [info[1] for info in db.execute(f"PRAGMA table_info({table})")]
        unique: set[str] = set()
        for _seq, index, is_unique, *_ in db.execute(f"PRAGMA index_list({table})"):
            if is_unique:
                unique |= {info[2] for info in db.execute(f"PRAGMA index_info({index})")}
        varied = {c for c in unique if c != "id" and not c.endswith("_id") and c != "kind"}
        found = db.execute(f"SELECT * FROM {table} WHERE id = ?", (row_id,)).fetchone()
        original = dict(zip(columns, found, strict=True))
        prefix = row_id.split("_", 1)[0]
        rows = []
        for number in range(copies):
            row = dict(original, id=new_id(prefix))
            for column in varied:
                row[column] = f"{original[column]}-{number}"
            rows.append(tuple(row[c] for c in columns))
        marks = ", ".join("?" for _ in columns)
        db.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", rows)


def measure(seconds: float, resources: int) -> tuple[float, float, dict[str, int]]:
    with (
        tempfile.TemporaryDirectory(prefix="capstan-bench-idle-") as tmp,
        processes(Path(tmp)) as procs,
    ):
        with ready_dev_server(procs, CAPSTAN_RESYNC_SECONDS="3600") as (dev, api):
            server, data_dir = dev.server, dev.data_dir
            time.sleep(2)  # the account's and the installation's own passes end
            empty = core_percent(server.pid, seconds)
            root = f"/api/projects/{create_project(api, 'idle')['id']}"
            web = api.post(f"{root}/web_servers", json=web_server_body("web"))
            cache = api.post(f"{root}/cache", json={"storage_limit_mb": 256})
            bucket = api.post(f"{root}/storage", json={"name": "uploads"})
            for made in (web, cache, bucket):
                assert made.status_code == 201, made.text
            wait_all_running(api, [f"{root}/web_servers/{web.json()['id']}"], timeout=120)
            _wait_for(api, f"{root}/cache/{cache.json()['id']}", "available")
            _wait_for(api, f"{root}/storage/{bucket.json()['id']}", "active")
            _wait_for_empty_queue(data_dir / "capstan.db")
            each = resources // 3
            counts = {"services": resources - 2 * each, "caches": each, "buckets": each}
            originals = {
                "services": web.json()["id"],
                "caches": cache.json()["id"],
                "buckets": bucket.json()["id"],
            }
            for table, count in counts.items():
                clone(data_dir / "capstan.db", table, originals[table], count - 1)
            time.sleep(2)
            settled = core_percent(server.pid, seconds)
        return empty, settled, counts


def _wait_for(api: httpx.Client, path: str, status: str) -> None:
    deadline = time.monotonic() + 120
    while api.get(path).json().get("status") != status:
        if time.monotonic() > deadline:
            raise SystemExit(f"{path} did not become {status}")
        time.sleep(0.2)


def _wait_for_empty_queue(database: Path) -> None:
    """Until no pass is due or under way (the settled state the copies are made from)."""
    deadline = time.monotonic() + 60
    while True:
        with sqlite3.connect(database) as db:
            waiting = db.execute("SELECT kind, due_at FROM reconcile_queue").fetchall()
        if not waiting:
            return
        if time.monotonic() > deadline:
            print(f"still queued after 60 s (measured anyway): {waiting}")
            return
        time.sleep(0.2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30, help="the measuring window")
    parser.add_argument("--resources", type=int, default=10_000, help="settled resources")
    arguments = parser.parse_args()
    empty, settled, counts = measure(arguments.seconds, arguments.resources)
    made = ", ".join(f"{count:,} {table}" for table, count in counts.items())
    print()
    print(f"{'server':<34} | {'CPU, % of one core':>18} | goal")
    print(f"{'empty':<34} | {empty:>17.2f}% | < {GOAL_EMPTY}%")
    label = f"{sum(counts.values()):,} settled resources"
    print(f"{label:<34} | {settled:>17.2f}% | < {GOAL_SETTLED}%")
    print(f"({made}; settled / empty: {settled / max(empty, 0.01):.1f}x)")


if __name__ == "__main__":
    main()
