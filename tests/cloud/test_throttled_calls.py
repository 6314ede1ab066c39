"""What the driver does with AWS's throttling (docs/decisions/0010): the SDK retries a throttled
call with backoff and jitter; a throttle that outlasts its attempts is a retryable error in
Capstan's words, which the reconciler retries later, so a deployment is never failed for one.

The sandbox throttles the calls a test asks it to (`throttling.throttle`), so no test waits for a
real burst to empty a bucket."""

from __future__ import annotations

import pytest

from capstan.cloud.aws import ecs
from capstan.cloud.aws.session import AwsSession
from capstan.cloud.errors import RetryableCloudError
from capstan_sandbox.cloud import throttling
from tests.apps.helpers import ready
from tests.harness import RunningServer
from tests.polling import wait_until

# The driver's clients make four attempts (`cloud/aws/session.py`).
ATTEMPTS = 4


def forced(account: str) -> int:
    return sum(1 for item in throttling.throttled(account) if item.forced)


def test_a_throttled_call_is_retried_and_succeeds(access: AwsSession, account: str) -> None:
    before = forced(account)
    throttling.throttle("ecs", "DescribeClusters", account=account, times=ATTEMPTS - 1)
    assert ecs.cluster_exists(access, "p-throttled") is False  # answered, at the last attempt
    assert forced(account) - before == ATTEMPTS - 1


def test_a_throttle_past_the_retries_is_retryable_in_capstans_words(
    access: AwsSession, account: str
) -> None:
    before = forced(account)
    throttling.throttle("ecs", "DescribeClusters", account=account, times=ATTEMPTS)
    with pytest.raises(RetryableCloudError) as caught:
        ecs.cluster_exists(access, "p-throttled")
    assert forced(account) - before == ATTEMPTS
    error = caught.value
    assert error.code == "throttling"
    assert error.message == (
        "AWS is limiting the rate of Capstan's calls to your account (DescribeClusters); "
        "Capstan tries again shortly, more slowly."
    )
    assert "Rate exceeded" not in error.message and "ThrottlingException" not in error.message
    assert error.detail == "Rate exceeded"  # AWS's words, for the log only
    ecs.cluster_exists(access, "p-throttled")  # the next call goes through


def test_a_deployment_throttled_past_its_retries_is_not_failed(server: RunningServer) -> None:
    """ECS refuses the roll-out's RegisterTaskDefinition for two whole passes (every attempt of
    each): the reconciler tries again with backoff and the web server runs; its deployment is
    never `failed`, and nothing of the throttle shows on it."""
    org = server.new_org()
    try:
        shop = ready(org)
        account = org.api.get("/api/cloud_account").json()["account_id"]
        before = forced(account)
        throttling.throttle("ecs", "RegisterTaskDefinition", account=account, times=2 * ATTEMPTS)
        web = shop.create_web_server()
        path = f"{shop.base}/web_servers/{web['id']}"
        seen: set[str] = set()

        def running() -> bool:
            status = str(org.api.get(path).json()["status"])
            seen.add(status)
            return status == "running"

        wait_until(running, timeout=120, every=0.2, what=lambda: f"{path} running, saw {seen}")
        assert forced(account) - before == 2 * ATTEMPTS  # every attempt of two passes
        assert "failed" not in seen
        [deployment] = org.api.get(f"{path}/deployments").json()["deployments"]
        assert deployment["status"] == "running"
        assert deployment["error"] is None
        assert org.api.get(path).json().get("error") is None
    finally:
        throttling.limiter().clear_throttles()
        org.close()
