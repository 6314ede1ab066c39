"""What a listing's length costs: a project's web servers listed with none and with N, under wrk.

For each database (SQLite always; PostgreSQL when `--postgres URL` or CAPSTAN_TEST_DATABASE_URL
is given) this starts a zero-delay sandbox and `capstan server --dev` on it (as
`bench/deploy.py` does), connects the cloud account, installs the git app, makes two projects,
creates `--services` web servers in the second and waits until they run. wrk (64 connections,
`--seconds` each) then lists each project's web servers: `GET /api/projects/{id}/web_servers`.

It prints requests/s, p99 and the server's CPU a request for the empty listing and for the long
one, and their ratio: what N rows cost over none. Each listed web server shows its status (its
newest deployment) and URL (its project); read row by row that was two statements a row, and
the ratio grew with N (about 11x at N = 20); read in one statement it stays near 1-2x.

Run from the repository root:  .venv/bin/python bench/listing.py  [--services 20] [--seconds 8]
"""

from __future__ import annotations

import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.api import Load, _show, each_database, wrk, wrk_parser  # noqa: E402
from tests.apps.processes import (  # noqa: E402 (the repository root is on the path now)
    create_project,
    processes,
    ready_dev_server,
    web_server_body,
)


def measure(database: str, env: dict[str, str], services: int, seconds: int) -> tuple[Load, Load]:
    with (
        tempfile.TemporaryDirectory(prefix="capstan-bench-listing-") as tmp,
        processes(Path(tmp)) as procs,
    ):
        with ready_dev_server(procs, **env) as (dev, api):
            empty = f"/api/projects/{create_project(api, 'empty')['id']}/web_servers"
            full = f"/api/projects/{create_project(api, 'full')['id']}/web_servers"
            with ThreadPoolExecutor(max_workers=8) as pool:
                created = pool.map(
                    lambda index: api.post(full, json=web_server_body(f"web{index}")),
                    range(services),
                )
                assert all(answer.status_code == 201 for answer in created)
            deadline = time.monotonic() + 300
            while True:
                listed = api.get(full).json()["web_servers"]
                if [row["status"] for row in listed] == ["running"] * services:
                    break
                assert time.monotonic() < deadline, listed
                time.sleep(0.5)
            assert api.get(empty).json() == {"web_servers": []}
        figures = []
        for name, path in (("none", empty), (f"{services}", full)):
            wrk(dev.base_url + path, dev.token, 2, dev.server.pid)  # warm
            load = wrk(dev.base_url + path, dev.token, seconds, dev.server.pid)
            print(f"  {database} web servers listed, {name}: {_show(load)}")
            figures.append(load)
        return figures[0], figures[1]


def main() -> None:
    parser = wrk_parser(__doc__.splitlines()[0])
    parser.add_argument("--services", type=int, default=20, help="web servers in the long list")
    arguments = parser.parse_args()
    runs = each_database(
        lambda database, settings: measure(
            database, settings, arguments.services, arguments.seconds
        ),
        arguments.postgres,
        {},
    )
    print()
    print(
        f"{'database':<10} | {'none: req/s':>11} {'CPU/req':>9} | "
        f"{arguments.services:>3}: {'req/s':>6} {'CPU/req':>9} | CPU ratio (long / none)"
    )
    for database, (none, full) in runs.items():
        print(
            f"{database:<10} | {none.requests_per_second:>11,.0f} {none.cpu_ms:>7.3f}ms | "
            f"{full.requests_per_second:>11,.0f} {full.cpu_ms:>7.3f}ms | "
            f"{full.cpu_ms / none.cpu_ms:.2f}x"
        )


if __name__ == "__main__":
    main()
