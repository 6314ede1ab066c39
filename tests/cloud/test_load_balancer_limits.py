"""Elastic Load Balancing's limits: the sandbox refuses what AWS refuses (a host-header value over
128 characters, a target group name over 32, a rule past the quota), and the driver stays
within them (a pattern for a long hostname, names that fit, a short deregistration delay)."""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator

import pytest
from botocore.exceptions import ClientError

from capstan.cloud.aws import elbv2, host_rules, names
from capstan.cloud.aws.session import AwsSession
from capstan.cloud.deploy import Deployer, Target
from capstan.cloud.errors import QuotaExceededError
from capstan_sandbox.cloud import quotas
from tests.cloud.deploy_helpers import DOMAIN, GitHost, build, new_id, settle, task_spec
from tests.polling import wait_until

pytestmark = pytest.mark.usefixtures("fast_simulator")


def long_hostname_target(project_id: str) -> Target:
    """A web server whose hostname (a 40-character name, a 63-character suffix) is over 128."""
    resource_id = new_id("svc")
    hostname = f"{'w' * 34}-{resource_id[-5:]}.{'s' * 63}.{'d' * 20}.{DOMAIN}"
    assert len(hostname) > host_rules.HOST_HEADER_CHARS
    return Target(resource_id, project_id, "web_server", hostname)


def running(deployer: Deployer, source: GitHost, target: Target) -> str:
    """Build the target and roll it out; its image."""
    finished = deployer.describe_build(build(deployer, target, source))
    assert finished.image_uri
    settle(deployer, target, deployer.deploy(task_spec(target, finished.image_uri)))
    return finished.image_uri


def host_values(customer: AwsSession, project_id: str) -> list[str]:
    client = customer.client("elbv2")
    name = names.load_balancer_name(project_id)
    (balancer,) = client.describe_load_balancers(Names=[name])["LoadBalancers"]
    listeners = client.describe_listeners(LoadBalancerArn=balancer["LoadBalancerArn"])
    return [
        value
        for listener in listeners["Listeners"]
        for rule in client.describe_rules(ListenerArn=listener["ListenerArn"])["Rules"]
        for condition in rule["Conditions"]
        if condition["Field"] == "host-header"
        for value in condition["HostHeaderConfig"]["Values"]
    ]


def test_a_hostname_over_128_characters_is_routed_by_a_pattern(
    deployer: Deployer, sessions: tuple[AwsSession, AwsSession], source: GitHost
) -> None:
    customer, _operator = sessions
    project_id = new_id("prj")
    target = long_hostname_target(project_id)
    assert target.hostname
    running(deployer, source, target)
    (value,) = host_values(customer, project_id)
    assert len(value) == host_rules.HOST_HEADER_CHARS
    assert fnmatch.fnmatchcase(target.hostname, value)
    other = target.hostname.replace("w" * 34, "x" * 34)
    assert not fnmatch.fnmatchcase(other, value)  # another name in the project: another rule

    # What the driver did before — the whole hostname as the value — AWS refuses.
    client = customer.client("elbv2")
    rule = client.describe_rules(
        ListenerArn=client.describe_listeners(
            LoadBalancerArn=client.describe_load_balancers(
                Names=[names.load_balancer_name(project_id)]
            )["LoadBalancers"][0]["LoadBalancerArn"]
        )["Listeners"][0]["ListenerArn"]
    )["Rules"][0]
    with pytest.raises(ClientError) as refused:
        client.modify_rule(
            RuleArn=rule["RuleArn"],
            Conditions=[
                {"Field": "host-header", "HostHeaderConfig": {"Values": [target.hostname]}}
            ],
        )
    assert refused.value.response["Error"]["Code"] == "ValidationError"
    assert "limit is '128'" in refused.value.response["Error"]["Message"]
    wait_until(lambda: deployer.delete(target), timeout=10)


def test_target_groups_leave_in_30_seconds_and_their_names_fit(
    deployer: Deployer, sessions: tuple[AwsSession, AwsSession], source: GitHost
) -> None:
    customer, _operator = sessions
    project_id = new_id("prj")
    target = long_hostname_target(project_id)
    running(deployer, source, target)
    client = customer.client("elbv2")
    group = elbv2.find_target_group(customer, target.resource_id)
    assert group
    attributes = client.describe_target_group_attributes(TargetGroupArn=group)["Attributes"]
    delay = {item["Key"]: item["Value"] for item in attributes}
    assert delay["deregistration_delay.timeout_seconds"] == "30"
    wait_until(lambda: deployer.delete(target), timeout=10)

    long_id = "svc_" + "x" * 60
    assert len(names.target_group_name(long_id)) <= 32
    with pytest.raises(ClientError) as refused:
        client.create_target_group(
            Name="cp-" + long_id.replace("_", ""), Protocol="HTTP", Port=80, TargetType="ip"
        )
    assert refused.value.response["Error"]["Code"] == "ValidationError"


@pytest.fixture
def one_rule() -> Iterator[None]:
    with quotas.changed(rules_per_load_balancer=1):
        yield


def test_the_rule_past_the_quota_is_too_many_rules(
    deployer: Deployer,
    sessions: tuple[AwsSession, AwsSession],
    source: GitHost,
    one_rule: None,
) -> None:
    project_id = new_id("prj")
    first = long_hostname_target(project_id)
    second = long_hostname_target(project_id)
    image_uri = running(deployer, source, first)
    with pytest.raises(QuotaExceededError) as reached:
        deployer.deploy(task_spec(second, image_uri))
    assert "rules per load balancer" in reached.value.message
    wait_until(lambda: deployer.delete(first), timeout=10)
    wait_until(lambda: deployer.delete(second), timeout=10)
