"""What the databases' tests share: one connected organization per worker (connecting takes
seconds; each test makes its own project), and RDS that takes a fraction of a second."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from capstan_sandbox.cloud.simulator import simulator
from tests.apps.helpers import connected_org
from tests.harness import Org, RunningServer


@pytest.fixture(autouse=True)
def quick_databases() -> Iterator[None]:
    """RDS takes minutes to create, modify or delete an instance; here 0.3 s."""
    before = simulator().configure(database_seconds=0.3)
    yield
    simulator().configure(database_seconds=before.database_seconds)


@pytest.fixture(scope="package")
def connected(server: RunningServer) -> Iterator[Org]:
    with connected_org(server) as org:
        yield org
