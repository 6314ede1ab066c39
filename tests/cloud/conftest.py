"""The cloud tests' shared fixtures: the sandbox endpoint, and for the driver's tests a customer
account with Capstan's access role, the operator's session and zone, a tiny git host and fast
simulator knobs (modules opt in: `pytestmark = pytest.mark.usefixtures("fast_simulator")`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from capstan.cloud.aws.session import AwsSession, Endpoint
from capstan.cloud.deploy import Deployer
from capstan.dev.accounts import organization_access
from capstan.dev.operator import bootstrap_control_plane, ensure_service_zone
from capstan_sandbox.cloud.simulator import simulator
from tests.cloud.deploy_helpers import BROKEN, COMMIT, DOMAIN, REPO, GitHost, git_host
from tests.sandbox.aws import access_role, new_account
from tests.sandbox.conftest import endpoint

__all__ = ["endpoint"]


@pytest.fixture
def fast_simulator() -> Iterator[None]:
    before = simulator().configure(
        build_seconds=0.2,
        task_start_seconds=0.2,
        circuit_breaker_seconds=1.0,
        log_interval_seconds=0.2,
        metrics_interval_seconds=0.2,
    )
    yield
    simulator().configure(**{k: getattr(before, k) for k in before.__dataclass_fields__})
    simulator().heal_rollouts()


@pytest.fixture(scope="module")
def source() -> Iterator[GitHost]:
    with git_host() as host:
        host.files[(REPO, COMMIT)] = {"build": "succeed"}
        host.files[(REPO, BROKEN)] = {"build": "fail", "error": "npm ERR! Missing script: build"}
        yield host


@pytest.fixture(scope="module")
def account(endpoint: Endpoint) -> str:
    return new_account(endpoint, "deploy")


@pytest.fixture(scope="module")
def sessions(endpoint: Endpoint, account: str) -> Iterator[tuple[AwsSession, AwsSession]]:
    """The account as its administrator sees it (the tests' own checks), and the operator's."""
    ensure_service_zone(endpoint, DOMAIN)  # the operator's, made before Capstan starts
    with (
        organization_access(endpoint, account) as customer,
        AwsSession(endpoint, bootstrap_control_plane(endpoint)) as operator,
    ):
        yield customer, operator


@pytest.fixture(scope="module")
def access(endpoint: Endpoint, account: str) -> Iterator[AwsSession]:
    """The access role from Capstan's template: what the driver acts through."""
    with access_role(endpoint, account) as role:
        yield role


@pytest.fixture
def deployer(access: AwsSession, sessions: tuple[AwsSession, AwsSession]) -> Deployer:
    _customer, operator = sessions
    deployer = Deployer(access, operator, domain=DOMAIN)
    # The account's shared network: its own pass makes it before any project's network.
    deployer.network.ensure_shared_network()
    return deployer
