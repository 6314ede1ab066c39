"""The task role's grants policy and IAM's inline policy quota: Capstan's measure of the policy
(`task_grants_chars`, which the API refuses a bucket or a model selection by) agrees with IAM's
at the quota's edge, as the sandbox counts it (the way IAM does: characters, white space not)."""

from __future__ import annotations

import pytest

from capstan.cloud import buckets as bucket_cloud
from capstan.cloud.aws import iam
from capstan.cloud.aws.session import AwsSession
from capstan.cloud.deploy import Deployer
from capstan.cloud.errors import QuotaExceededError
from capstan.cloud.network import TASK_GRANTS_CHARS, task_grants_chars
from tests.cloud.deploy_helpers import new_id


def _grants(names: list[str]) -> list[dict[str, object]]:
    return bucket_cloud.read_write_statements(
        [bucket_cloud.arn("us-east-1", name) for name in names]
    )


def test_grants_that_measure_within_the_quota_are_held_and_just_over_it_are_refused(
    deployer: Deployer, sessions: tuple[AwsSession, AwsSession]
) -> None:
    customer, _operator = sessions
    project_id = new_id("prj")
    deployer.network.ensure_project_network(project_id)  # its task role
    # Buckets of 63-character names while they fit; then one name grown a character at a time
    # (two characters of policy each: its ARN is in both statements) across the quota.
    names = [f"capstan-{n:055d}" for n in range(200)]
    count = next(n for n in range(200) if task_grants_chars(_grants(names[: n + 1])) > 10_240)
    fitting, last = names[:count], "capstan-x"
    while task_grants_chars(_grants([*fitting, last + "x"])) <= TASK_GRANTS_CHARS:
        last += "x"
    within, over = _grants([*fitting, last]), _grants([*fitting, last + "x"])
    assert task_grants_chars(within) in (TASK_GRANTS_CHARS - 1, TASK_GRANTS_CHARS)
    assert task_grants_chars(over) in (TASK_GRANTS_CHARS + 1, TASK_GRANTS_CHARS + 2)

    iam.put_task_grants(customer, project_id, within)
    assert iam.task_grants(customer, project_id) == within
    with pytest.raises(QuotaExceededError) as refused:
        iam.put_task_grants(customer, project_id, over)
    assert "10,240 characters" in refused.value.message
    assert "Service Quotas" not in refused.value.message  # no request raises it
    assert iam.task_grants(customer, project_id) == within  # the refused policy left no trace
