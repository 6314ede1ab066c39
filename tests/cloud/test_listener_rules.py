"""A listener's rules, page after page: DescribeRules answers a page at a time (the sandbox 50
rules unless asked for more, as moto does; AWS up to 400), and the driver read only the first.
Past it, a web server's rule was not found: a redeploy made it again, a deletion left it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from botocore.exceptions import ClientError
from moto.elbv2.models import FakeListener

from capstan.cloud.aws import elbv2, host_rules, names
from capstan.cloud.aws.session import AwsSession, Endpoint
from tests.cloud.deploy_helpers import new_id
from tests.sandbox.aws import calls, calls_since, unthrottled, vpc_with_two_subnets
from tests.sandbox.between import second_between

SERVERS = 60  # past the sandbox's page of 50, within its quota of 100 rules


@pytest.fixture(autouse=True)
def _unthrottled(account: str) -> Iterator[None]:
    """These tests count calls and make a hundred rules: AWS's rate limits (tested elsewhere)
    would add retried calls to the counts, and a minute of waiting."""
    with unthrottled(account):
        yield


def a_listener(admin: AwsSession, project_id: str) -> tuple[str, str]:
    """A load balancer's HTTP listener in a VPC of its own, made as the account's administrator:
    the VPC and the listener."""
    ec2, client = admin.client("ec2"), admin.client("elbv2")
    vpc, subnets = vpc_with_two_subnets(ec2, 9)
    balancer = client.create_load_balancer(
        Name=names.load_balancer_name(project_id),
        Subnets=subnets,
        Tags=names.tag_list(project_id, project_id),
    )["LoadBalancers"][0]["LoadBalancerArn"]
    listener = client.create_listener(
        LoadBalancerArn=balancer,
        Protocol="HTTP",
        Port=80,
        DefaultActions=[{"Type": "fixed-response", "FixedResponseConfig": {"StatusCode": "404"}}],
    )["Listeners"][0]["ListenerArn"]
    return vpc, str(listener)


def test_every_rule_of_a_long_listener_is_found(
    sessions: tuple[AwsSession, AwsSession], access: AwsSession
) -> None:
    admin, _operator = sessions
    project_id = new_id("prj")
    vpc, listener = a_listener(admin, project_id)
    servers = {new_id("svc"): f"web{index}.example.test" for index in range(SERVERS)}
    groups = {
        resource_id: admin.client("elbv2").create_target_group(
            Name=names.target_group_name(resource_id),
            Protocol="HTTP",
            Port=80,
            TargetType="ip",
            VpcId=vpc,
            Tags=names.tag_list(project_id, resource_id),
        )["TargetGroups"][0]["TargetGroupArn"]
        for resource_id in servers
    }
    made = {
        resource_id: host_rules.ensure_host_rule(
            access, project_id, resource_id, listener, groups[resource_id], hostname
        )
        for resource_id, hostname in servers.items()
    }
    # The first page holds 50 of them: the others are found all the same.
    assert len(admin.client("elbv2").describe_rules(ListenerArn=listener)["Rules"]) == 50
    for resource_id, hostname in servers.items():
        assert host_rules.host_of(access, listener, groups[resource_id]) == hostname
    # A redeploy finds each rule again rather than making another.
    for resource_id, hostname in servers.items():
        again = host_rules.ensure_host_rule(
            access, project_id, resource_id, listener, groups[resource_id], hostname
        )
        assert again == made[resource_id]
    rules = host_rules.listener_rules(admin.client("elbv2"), listener)
    assert len([rule for rule in rules if not rule["IsDefault"]]) == SERVERS
    # Deleting every web server's rule leaves the listener with its default rule only.
    for resource_id in servers:
        host_rules.delete_host_rule(access, listener, groups[resource_id])
    assert not elbv2.has_rules(access, listener)


def test_a_page_is_at_most_400_rules(sessions: tuple[AwsSession, AwsSession]) -> None:
    """AWS refuses a page over 400 (botocore checks only the least, 1); so does the sandbox."""
    admin, _operator = sessions
    _vpc, listener = a_listener(admin, new_id("prj"))
    client = admin.client("elbv2")
    assert client.describe_rules(ListenerArn=listener, PageSize=400)["Rules"]
    for describe, asked in (
        (client.describe_rules, {"ListenerArn": listener}),
        (client.describe_load_balancers, {}),
        (client.describe_target_groups, {}),
    ):
        with pytest.raises(ClientError) as refused:
            describe(PageSize=401, **asked)
        assert refused.value.response["Error"]["Code"] == "ValidationError"


def test_two_rules_of_one_priority_made_at_once_are_one(
    sessions: tuple[AwsSession, AwsSession], monkeypatch: pytest.MonkeyPatch
) -> None:
    """ELB refuses the second of two rules with one priority (`PriorityInUse`), as two deploys
    of a project probing the same priority would make them; the second create is started between
    the first's check of the priority and its rule being kept."""
    admin, _operator = sessions
    project_id = new_id("prj")
    vpc, listener = a_listener(admin, project_id)
    client = admin.client("elbv2")
    group = client.create_target_group(
        Name=names.target_group_name(project_id), Protocol="HTTP", Port=80, VpcId=vpc
    )["TargetGroups"][0]["TargetGroupArn"]

    def create(hostname: str) -> None:
        client.create_rule(
            ListenerArn=listener,
            Priority=7,
            Conditions=[{"Field": "host-header", "HostHeaderConfig": {"Values": [hostname]}}],
            Actions=[{"Type": "forward", "TargetGroupArn": group}],
        )

    refused = second_between(
        monkeypatch,
        (FakeListener, "register"),
        lambda: create("first.example.test"),
        lambda: create("second.example.test"),
        ClientError,
    )
    assert [error.response["Error"]["Code"] for error in refused] == ["PriorityInUse"]  # type: ignore[attr-defined]
    assert len(host_rules.listener_rules(client, listener)) == 2  # the default rule and one


def a_group(admin: AwsSession, vpc: str, resource_id: str) -> str:
    return str(
        admin.client("elbv2").create_target_group(
            Name=names.target_group_name(resource_id),
            Protocol="HTTP",
            Port=80,
            TargetType="ip",
            VpcId=vpc,
        )["TargetGroups"][0]["TargetGroupArn"]
    )


@pytest.fixture(scope="module")
def project_listener(sessions: tuple[AwsSession, AwsSession]) -> tuple[str, str, str]:
    """A project's id, its VPC and HTTP listener, for the tests below (the sandbox, as AWS,
    holds five VPCs a region)."""
    project_id = new_id("prj")
    return project_id, *a_listener(sessions[0], project_id)


def rules_to(admin: AwsSession, listener: str, group: str) -> list[dict[str, object]]:
    return [
        rule
        for rule in host_rules.listener_rules(admin.client("elbv2"), listener)
        if any(action.get("TargetGroupArn") == group for action in rule["Actions"])
    ]


def test_a_first_roll_out_makes_its_rule_without_reading_the_listener(
    sessions: tuple[AwsSession, AwsSession],
    access: AwsSession,
    project_listener: tuple[str, str, str],
    endpoint: Endpoint,
    account: str,
) -> None:
    """Reading a listener's rules costs in proportion to the project's web servers: a target's
    first roll-out makes its rule at its own priority at once, and reads them only when that
    priority is taken — by its own rule (a retried first roll-out), found and kept, or by
    another target's, when it probes on."""
    admin, _operator = sessions
    project_id, vpc, listener = project_listener
    resource_id = new_id("svc")
    group = a_group(admin, vpc, resource_id)
    before = calls(endpoint, account)

    def first_roll_out(resource_id: str, group: str) -> str:
        return host_rules.ensure_host_rule(
            access, project_id, resource_id, listener, group, "web.example.test", first=True
        )

    made = first_roll_out(resource_id, group)
    assert calls_since(endpoint, before, account) == {"elbv2:CreateRule": 1}
    (rule,) = rules_to(admin, listener, group)
    assert rule["RuleArn"] == made
    assert host_rules.host_of(access, listener, group) == "web.example.test"
    # Retried (the pass that made it did not commit): the rule is found, not made again.
    before = calls(endpoint, account)
    assert first_roll_out(resource_id, group) == made
    assert calls_since(endpoint, before, account) == {
        "elbv2:CreateRule": 1,
        "elbv2:DescribeRules": 1,
    }
    assert len(rules_to(admin, listener, group)) == 1
    # Another target's rule at this one's priority: this one's is made at the next.
    priority = int(str(rule["Priority"]))
    host_rules.delete_host_rule(access, listener, group)
    other = a_group(admin, vpc, new_id("svc"))
    admin.client("elbv2").create_rule(
        ListenerArn=listener,
        Priority=priority,
        Conditions=[{"Field": "host-header", "HostHeaderConfig": {"Values": ["x.example.test"]}}],
        Actions=[{"Type": "forward", "TargetGroupArn": other}],
    )
    again = first_roll_out(resource_id, group)
    (rule,) = rules_to(admin, listener, group)
    assert (rule["RuleArn"], rule["Priority"]) == (again, str(priority + 1))
    assert first_roll_out(resource_id, group) == again
    assert len(rules_to(admin, listener, group)) == 1


def test_every_rule_to_a_group_is_deleted(
    sessions: tuple[AwsSession, AwsSession],
    access: AwsSession,
    project_listener: tuple[str, str, str],
) -> None:
    """Two rules forwarding to one group (a retried first roll-out that probed past another
    target's rule, which was deleted since, makes a second): deleting the host rule removes
    both, or the group could never be deleted (ELB refuses a group a rule forwards to)."""
    admin, _operator = sessions
    _project_id, vpc, listener = project_listener
    group = a_group(admin, vpc, new_id("svc"))
    for priority in (49_998, 49_999):
        admin.client("elbv2").create_rule(
            ListenerArn=listener,
            Priority=priority,
            Conditions=[
                {"Field": "host-header", "HostHeaderConfig": {"Values": ["web.example.test"]}}
            ],
            Actions=[{"Type": "forward", "TargetGroupArn": group}],
        )
    host_rules.delete_host_rule(access, listener, group)
    assert rules_to(admin, listener, group) == []


def test_a_rule_priority_is_at_most_50000(
    sessions: tuple[AwsSession, AwsSession], project_listener: tuple[str, str, str]
) -> None:
    """ELB refuses a priority over 50,000 (botocore checks only the least, 1); so does the
    sandbox, or a priority computed one too high would pass here and fail in AWS."""
    admin, _operator = sessions
    _project_id, vpc, listener = project_listener
    group = a_group(admin, vpc, new_id("svc"))
    client = admin.client("elbv2")

    def create(priority: int) -> None:
        client.create_rule(
            ListenerArn=listener,
            Priority=priority,
            Conditions=[
                {"Field": "host-header", "HostHeaderConfig": {"Values": ["p.example.test"]}}
            ],
            Actions=[{"Type": "forward", "TargetGroupArn": group}],
        )

    with pytest.raises(ClientError) as refused:
        create(50_001)
    assert refused.value.response["Error"]["Code"] == "ValidationError"
    create(50_000)
    assert [rule["Priority"] for rule in rules_to(admin, listener, group)] == ["50000"]
    host_rules.delete_host_rule(admin, listener, group)
