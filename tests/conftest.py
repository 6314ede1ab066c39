"""Test fixtures: one real Capstan server per database backend, shared by the session.

Every API test runs against SQLite, and against PostgreSQL too when CAPSTAN_TEST_DATABASE_URL is
set (CI sets it). Without it the PostgreSQL runs are skipped, and the summary says so loudly.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from fastapi import FastAPI

from capstan.auth.secrets import use_hash_cost
from tests.harness import Org, RunningServer, start_server, test_settings

if TYPE_CHECKING:
    from capstan_sandbox.cloud.server import SandboxCloud

POSTGRES_URL = os.environ.get("CAPSTAN_TEST_DATABASE_URL")
BACKENDS = ["sqlite", "postgresql"]


def pytest_configure(config: pytest.Config) -> None:
    """Passwords made and checked in this process cost little CPU (argon2id at 1 MiB and one
    pass instead of 64 MiB and three: the suite signs in thousands of times; decision 0112).
    Not for `make load`, whose latency bounds are about the real cost; processes started by
    tests use the real cost too."""
    selected = (config.option.markexpr or "").replace("not load", "")
    if "load" not in selected:
        use_hash_cost(time_cost=1, memory_cost_kib=1024, parallelism=1)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not POSTGRES_URL:
        terminalreporter.write_sep(
            "!",
            "PostgreSQL tests SKIPPED: set CAPSTAN_TEST_DATABASE_URL "
            "(e.g. postgresql://postgres@127.0.0.1:5432/test) to run them",
            red=True,
            bold=True,
        )


@pytest.fixture(scope="session", autouse=True)
def _template_without_statements() -> Iterator[None]:
    """`CAPSTAN_TEST_DROP_STATEMENTS=KeepBuckets,Caches`: the run launches the access role from
    a template without those statements — how each statement is shown to be needed (some test
    fails without it). Unset (always, in CI): the template as it is."""
    dropped = {sid for sid in os.environ.get("CAPSTAN_TEST_DROP_STATEMENTS", "").split(",") if sid}
    if not dropped:
        yield
        return
    from capstan.cloud import access_role

    whole = access_role.access_statements
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            access_role,
            "access_statements",
            lambda: [s for s in whole() if s["Sid"] not in dropped],
        )
        yield


@pytest.fixture(scope="session")
def github_app_key(tmp_path_factory: pytest.TempPathFactory) -> Path:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    path = tmp_path_factory.mktemp("git-host") / "app.pem"
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return path


@pytest.fixture(scope="session")
def sandbox_cloud() -> Iterator[SandboxCloud]:
    """One sandbox cloud for the whole run (moto keeps its state per process anyway)."""
    from capstan.dev.sandbox_cloud import start_sandbox_cloud

    # The simulator looks at moto's state ten times a second: often enough for 0.3 s delays,
    # and half the CPU of its default when four test processes share two cores. IAM propagates
    # changes after half a second: short, but every role a test makes is used under it.
    sandbox = start_sandbox_cloud(
        build_seconds=0.3, task_start_seconds=0.3, tick_seconds=0.1, iam_propagation_seconds=0.5
    )
    yield sandbox
    sandbox.stop()


@pytest.fixture(scope="session")
def sandbox_cloud_url(sandbox_cloud: SandboxCloud) -> str | None:
    return sandbox_cloud.url


@pytest.fixture(scope="session")
def sandbox_dns_nameserver(sandbox_cloud: SandboxCloud) -> tuple[str, int]:
    """(host, port) where the sandbox's public DNS answers queries over UDP."""
    host, _, port = sandbox_cloud.dns_nameserver.rpartition(":")
    return host.strip("[]"), int(port)


def _database(backend: str, tmp: Path) -> tuple[str, str | None]:
    if backend == "sqlite":
        return f"sqlite:///{tmp / 'capstan.db'}", None
    if not POSTGRES_URL:
        pytest.skip("PostgreSQL not configured: set CAPSTAN_TEST_DATABASE_URL")
    return POSTGRES_URL, f"capstan_test_{os.getpid()}_{secrets.token_hex(3)}"


@pytest.fixture(scope="session", params=BACKENDS)
def server(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    github_app_key: Path,
    sandbox_cloud_url: str | None,
) -> Iterator[RunningServer]:
    backend = request.param
    tmp = tmp_path_factory.mktemp(backend)
    database_url, schema = _database(backend, tmp)
    running = start_server(
        lambda base_url: test_settings(
            data_dir=tmp,
            base_url=base_url,
            database_url=database_url,
            database_schema=schema,
            github_private_key_file=github_app_key,
            sandbox_cloud_url=sandbox_cloud_url,
        ),
        backend,
    )
    yield running
    running.stop()
    if schema:
        _drop_schema(database_url, schema)


def execute_once(database_url: str, statement: str) -> None:
    """Run one statement on its own connection and commit it (a schema or a role made or
    dropped around a test)."""
    import asyncio

    from sqlalchemy import text

    from capstan.config import async_database_url
    from capstan.db import make_engine

    async def execute() -> None:
        engine = make_engine(async_database_url(database_url))
        async with engine.begin() as connection:
            await connection.execute(text(statement))
        await engine.dispose()

    asyncio.run(execute())


def _drop_schema(database_url: str, schema: str) -> None:
    execute_once(database_url, f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture
def org(server: RunningServer) -> Iterator[Org]:
    member = server.new_org()
    yield member
    member.close()


@pytest.fixture(scope="module")
def connected(server: RunningServer) -> Iterator[Org]:
    """One organization, its cloud account connected and the git app installed, for a module's
    tests to share, each making its own project (`tests.apps.helpers.new_shop`): connecting
    takes seconds."""
    from tests.apps.helpers import connected_org

    with connected_org(server) as org:
        yield org


@pytest.fixture
def other_org(server: RunningServer) -> Iterator[Org]:
    member = server.new_org()
    yield member
    member.close()


@pytest.fixture
def make_server(
    tmp_path_factory: pytest.TempPathFactory, github_app_key: Path, sandbox_cloud_url: str | None
) -> Iterator[Callable[..., RunningServer]]:
    """Start an extra SQLite server with settings overridden, e.g.
    `make_server(csrf_token_seconds=1)`; `base_url=` may be a function of the real one."""
    started: list[RunningServer] = []

    def make(
        configure_app: Callable[[FastAPI], None] | None = None, **overrides: Any
    ) -> RunningServer:
        tmp = tmp_path_factory.mktemp("extra")
        base_url_of = overrides.pop("base_url", None)
        running = start_server(
            lambda base_url: test_settings(
                data_dir=tmp,
                base_url=base_url_of(base_url) if base_url_of else base_url,
                database_url=f"sqlite:///{tmp / 'capstan.db'}",
                database_schema=None,
                github_private_key_file=github_app_key,
                sandbox_cloud_url=sandbox_cloud_url,
                **overrides,
            ),
            "sqlite",
            configure_app,
        )
        started.append(running)
        return running

    yield make
    for running in started:
        running.stop()
