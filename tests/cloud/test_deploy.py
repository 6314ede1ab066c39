"""The deploy driver against the sandbox cloud over HTTP: real boto3 calls, real moto, the
sandbox simulator doing what AWS does after a call (builds, rollouts, logs, metrics, cost)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from botocore.exceptions import ClientError

from capstan.cloud.aws import names
from capstan.cloud.aws import ssm as ssm_names
from capstan.cloud.aws.session import AwsSession, Endpoint
from capstan.cloud.aws.ssm import StoredEnvironment
from capstan.cloud.credentials import utcnow
from capstan.cloud.deploy import BuildSpec, Deployer
from capstan.cloud.errors import TerminalCloudError
from capstan.cloud.pricing import bucket_monthly_usd, monthly_run_rate_usd, shared_lines
from capstan.cloud.spend import SpendDriver
from capstan_sandbox.cloud.simulator import simulator
from tests.cloud.deploy_helpers import (
    BROKEN,
    COMMIT,
    DOMAIN,
    GOOD_TOKEN,
    REPO,
    GitHost,
    build,
    leftovers,
    new_id,
    settle,
    start_build,
    task_spec,
    web_target,
    worker_target,
)
from tests.polling import wait_until
from tests.sandbox.aws import calls, calls_since, iam_propagated

pytestmark = pytest.mark.usefixtures("fast_simulator")


def test_web_server_end_to_end(
    deployer: Deployer,
    sessions: tuple[AwsSession, AwsSession],
    access: AwsSession,
    source: GitHost,
) -> None:
    customer, operator = sessions
    project_id = new_id("prj")
    target = web_target(project_id)
    deployer.network.ensure_project_network(project_id)

    build_id = build(deployer, target, source)
    finished = deployer.describe_build(build_id)
    assert finished.state == "succeeded" and finished.error is None
    assert finished.image_uri is not None and finished.image_uri.endswith(f":{COMMIT}")
    images = customer.client("ecr").list_images(repositoryName=f"capstan/{target.resource_id}")
    assert [image["imageTag"] for image in images["imageIds"]] == [COMMIT]
    messages = [line.message for line in deployer.build_log(build_id)]
    assert any("Cloning" in message for message in messages)
    assert any("docker build" in message for message in messages)
    assert not any(GOOD_TOKEN in message for message in messages)
    # The build fetched its source with its own token.
    assert (
        f"/api/repos/{REPO}/contents/capstan-sandbox.json?ref={COMMIT}",
        f"token {GOOD_TOKEN}",
    ) in source.requests

    environment = deployer.put_environment(target, {"DATABASE_URL": "postgres://db", "MODE": "a"})
    assert set(environment.parameters) == {"DATABASE_URL", "MODE"} and environment.plain == {}
    # Named by their names (the task's own Region and account), not their ARNs.
    assert environment.parameters == {
        name: f"/capstan/{target.resource_id}/{name}" for name in ("DATABASE_URL", "MODE")
    }
    # An empty value cannot be a parameter (SSM wants one character at least): it goes in plain.
    # A value over 4 KiB is an advanced parameter. (PORT is the API's to refuse; stored before
    # it did, Capstan's own PORT still wins in the container.)
    large = "x" * 5000
    environment = deployer.put_environment(
        target, {"DATABASE_URL": "postgres://db2", "DEBUG": "", "CERT": large, "PORT": "3000"}
    )
    assert set(environment.parameters) == {"DATABASE_URL", "CERT", "PORT"}
    assert environment.plain == {"DEBUG": ""}
    ssm = customer.client("ssm")
    stored = ssm.get_parameter(
        Name=f"/capstan/{target.resource_id}/DATABASE_URL", WithDecryption=True
    )["Parameter"]
    assert stored["Type"] == "SecureString" and stored["Value"] == "postgres://db2"
    names_left = [p["Name"] for p in ssm.describe_parameters()["Parameters"]]
    assert sorted(n for n in names_left if n.startswith(f"/capstan/{target.resource_id}/")) == [
        f"/capstan/{target.resource_id}/CERT",
        f"/capstan/{target.resource_id}/DATABASE_URL",
        f"/capstan/{target.resource_id}/PORT",
    ]

    # Tasks that have not started leave the rollout in progress (held back for this look, so a
    # busy machine cannot race it; released right after).
    simulator().configure(task_start_seconds=60)
    arn = deployer.deploy(task_spec(target, finished.image_uri, environment))
    assert deployer.describe_rollout(target, arn).state == "in_progress"
    simulator().configure(task_start_seconds=0.2)
    settle(deployer, target, arn)

    ecs = customer.client("ecs")
    definition = ecs.describe_task_definition(taskDefinition=arn)["taskDefinition"]
    container = definition["containerDefinitions"][0]
    assert definition["requiresCompatibilities"] == ["FARGATE"]
    assert definition["networkMode"] == "awsvpc"
    assert (definition["cpu"], definition["memory"]) == ("256", "512")
    assert container["secrets"] == [
        {"name": "CERT", "valueFrom": environment.parameters["CERT"]},
        {"name": "DATABASE_URL", "valueFrom": environment.parameters["DATABASE_URL"]},
    ]
    assert container["environment"] == [
        {"name": "DEBUG", "value": ""},
        {"name": "PORT", "value": "8080"},
    ]
    assert container["logConfiguration"]["logDriver"] == "awslogs"
    # No tool inside the image is assumed: the load balancer's check below decides health.
    assert "healthCheck" not in container
    assert ":role/capstan/capstan-task-" in definition["taskRoleArn"]
    elbv2 = customer.client("elbv2")
    group = elbv2.describe_target_groups(Names=[f"cp-{target.resource_id.replace('_', '')}"])[
        "TargetGroups"
    ][0]
    assert group["HealthCheckPath"] == "/healthz" and group["Port"] == 8080
    assert group["Matcher"] == {"HttpCode": "200-399"}
    health = elbv2.describe_target_health(TargetGroupArn=group["TargetGroupArn"])
    assert [item["TargetHealth"]["State"] for item in health["TargetHealthDescriptions"]] == [
        "healthy"
    ]
    zone = operator.client("route53").list_hosted_zones_by_name(DNSName=DOMAIN + ".")
    zone_id = zone["HostedZones"][0]["Id"]
    records = operator.client("route53").list_resource_record_sets(HostedZoneId=zone_id)
    record = next(r for r in records["ResourceRecordSets"] if r["Name"] == target.hostname + ".")
    assert record["Type"] == "A" and "AliasTarget" in record
    scaling = customer.client("application-autoscaling").describe_scaling_policies(
        ServiceNamespace="ecs"
    )["ScalingPolicies"]
    assert any(target.resource_id in policy["ResourceId"] for policy in scaling)

    lines = wait_until(lambda: len(lines := deployer.logs(target)) >= 2 and lines)
    assert lines[0].message == "listening on :8080"
    assert [line.timestamp for line in lines] == sorted(line.timestamp for line in lines)
    assert len(deployer.logs(target, limit=1)) == 1

    metrics = wait_until(lambda: (m := deployer.metrics(target))["request_count_1h"] > 0 and m)
    assert set(metrics) == {
        "cpu_utilization_percent",
        "memory_utilization_percent",
        "request_count_1h",
        "error_rate_percent",
        "series",
    }
    assert set(metrics["series"]) == set(metrics) - {"series"}
    assert 0 < metrics["cpu_utilization_percent"] < 100
    spend = SpendDriver(access)  # as the endpoints read it, through the role
    assert wait_until(lambda: (spend.month_to_date(target.resource_id, utcnow()).usd or 0) > 0)

    assert leftovers(customer, operator, target.resource_id, target.hostname)
    wait_until(lambda: deployer.delete(target), timeout=10)
    # ECS forgets a deleted service on its own time; everything else is gone at once.
    wait_until(lambda: not leftovers(customer, operator, target.resource_id, target.hostname))
    assert deployer.delete(target) is True


def test_worker_gets_no_load_balancer_and_no_dns(
    deployer: Deployer, sessions: tuple[AwsSession, AwsSession], source: GitHost
) -> None:
    customer, operator = sessions
    project_id = new_id("prj")
    target = worker_target(project_id)
    deployer.network.ensure_project_network(project_id)
    finished = deployer.describe_build(build(deployer, target, source))
    assert finished.image_uri
    arn = deployer.deploy(task_spec(target, finished.image_uri))
    settle(deployer, target, arn)

    service = customer.client("ecs").describe_services(
        cluster=f"capstan-{project_id}", services=[f"capstan-{target.resource_id}"]
    )["services"][0]
    assert service["loadBalancers"] == []
    container = customer.client("ecs").describe_task_definition(taskDefinition=arn)[
        "taskDefinition"
    ]["containerDefinitions"][0]
    # A plain command runs as its own program: no shell is assumed inside the image.
    assert (container["entryPoint"], container["command"]) == (["python"], ["-m", "worker"])
    assert "portMappings" not in container or container["portMappings"] == []
    assert "target groups" not in leftovers(customer, operator, target.resource_id, None)
    lines = wait_until(lambda: deployer.logs(target))
    assert lines[0].message == "worker started: python -m worker"
    metrics = wait_until(lambda: (m := deployer.metrics(target))["cpu_utilization_percent"] and m)
    assert set(metrics) == {"cpu_utilization_percent", "memory_utilization_percent", "series"}
    assert set(metrics["series"]) == {"cpu_utilization_percent", "memory_utilization_percent"}

    assert deployer.network.delete_project_network(project_id) is False  # the worker still runs
    wait_until(lambda: deployer.delete(target), timeout=10)
    wait_until(lambda: not leftovers(customer, operator, target.resource_id, None))


def test_a_failing_build_reports_its_error(deployer: Deployer, source: GitHost) -> None:
    target = worker_target(new_id("prj"))
    build_id = build(deployer, target, source, commit=BROKEN)
    failed = deployer.describe_build(build_id)
    assert failed.state == "failed" and failed.image_uri is None
    assert failed.error == "npm ERR! Missing script: build"
    messages = [line.message for line in deployer.build_log(build_id)]
    assert "npm ERR! Missing script: build" in messages
    assert not any("pushing" in message for message in messages)
    deployer.delete(target)


def test_starting_a_deployments_build_again_answers_the_same_build(
    deployer: Deployer, source: GitHost
) -> None:
    """A crash between StartBuild and recording its id must not start a second build."""
    target = worker_target(new_id("prj"))
    deployment = new_id("dep")
    spec = BuildSpec(target, REPO, COMMIT, source.api_url, GOOD_TOKEN, None, deployment)
    first = start_build(deployer, spec)
    assert deployer.start_build(spec) == first
    other = deployer.start_build(replace(spec, deployment_id=new_id("dep")))
    assert other != first
    deployer.delete(target)


def test_a_build_whose_token_is_refused_cannot_fetch_its_source(
    deployer: Deployer, source: GitHost
) -> None:
    target = worker_target(new_id("prj"))
    spec = BuildSpec(target, REPO, COMMIT, source.api_url, "ghs_expired", None)
    build_id = start_build(deployer, spec)
    failed = wait_until(
        lambda: (b := deployer.describe_build(build_id)).state != "in_progress" and b
    )
    assert failed.state == "failed"
    assert failed.error is not None and failed.error.startswith("fatal: Authentication failed for")
    deployer.delete(target)


def test_a_rollout_that_never_becomes_healthy_fails_and_rolls_back(
    deployer: Deployer, sessions: tuple[AwsSession, AwsSession], source: GitHost
) -> None:
    customer, _operator = sessions
    project_id = new_id("prj")
    target = web_target(project_id)
    finished = deployer.describe_build(build(deployer, target, source))
    assert finished.image_uri
    good = deployer.deploy(task_spec(target, finished.image_uri))
    settle(deployer, target, good)

    simulator().fail_rollouts(target.resource_id)
    bad = deployer.deploy(
        task_spec(target, finished.image_uri, StoredEnvironment(parameters={}, plain={"X": ""}))
    )
    assert bad != good
    rollout = wait_until(
        lambda: (r := deployer.describe_rollout(target, bad)).state != "in_progress" and r
    )
    assert rollout.state == "failed"
    assert rollout.reason is not None and "circuit breaker" in rollout.reason
    # Why, from the stopped tasks ECS keeps listed, in Capstan's words (not ECS's).
    assert "failed the load balancer's health check" in rollout.reason
    assert "target-group" not in rollout.reason
    # Rolled back: the previous task definition is PRIMARY again and still serving.
    assert deployer.describe_rollout(target, good).state == "completed"
    service = customer.client("ecs").describe_services(
        cluster=f"capstan-{project_id}", services=[f"capstan-{target.resource_id}"]
    )["services"][0]
    assert service["taskDefinition"] == good
    wait_until(lambda: deployer.delete(target), timeout=10)


def test_an_unhealthy_first_rollout_reports_its_targets_until_the_breaker_trips(
    deployer: Deployer, source: GitHost
) -> None:
    target = web_target(new_id("prj"))
    simulator().configure(circuit_breaker_seconds=30)
    simulator().fail_rollouts(target.resource_id)
    finished = deployer.describe_build(build(deployer, target, source))
    assert finished.image_uri
    arn = deployer.deploy(task_spec(target, finished.image_uri))
    rollout = wait_until(
        lambda: (
            (r := deployer.describe_rollout(target, arn)).reason and "unhealthy" in r.reason and r
        )
    )
    assert rollout.state == "in_progress"
    assert "Health checks failed" in (rollout.reason or "")
    simulator().configure(circuit_breaker_seconds=0)
    rollout = wait_until(
        lambda: (r := deployer.describe_rollout(target, arn)).state != "in_progress" and r
    )
    assert rollout.state == "failed"
    wait_until(lambda: deployer.delete(target), timeout=10)


def _inventory(customer: AwsSession, project_id: str) -> dict[str, int]:
    ec2 = customer.client("ec2")
    project = [{"Name": "tag:capstan:project", "Values": [project_id]}]
    shared = [{"Name": "tag:capstan:shared", "Values": ["network"]}]
    return {
        "vpcs": len(ec2.describe_vpcs(Filters=project)["Vpcs"]),
        "subnets": len(ec2.describe_subnets(Filters=project)["Subnets"]),
        "groups": len(ec2.describe_security_groups(Filters=project)["SecurityGroups"]),
        "gateways": len(ec2.describe_internet_gateways(Filters=project)["InternetGateways"]),
        "shared vpcs": len(ec2.describe_vpcs(Filters=shared)["Vpcs"]),
        "shared subnets": len(ec2.describe_subnets(Filters=shared)["Subnets"]),
        "shared gateways": len(ec2.describe_internet_gateways(Filters=shared)["InternetGateways"]),
        "balancers": sum(
            1
            for b in customer.client("elbv2").describe_load_balancers()["LoadBalancers"]
            if b["LoadBalancerName"] == f"cp-{project_id.replace('_', '')}"
        ),
        "clusters": len(
            [
                c
                for c in customer.client("ecs").describe_clusters(
                    clusters=[f"capstan-{project_id}"]
                )["clusters"]
                if c["status"] == "ACTIVE"
            ]
        ),
        "roles": sum(
            1
            for r in customer.client("iam").list_roles(PathPrefix="/capstan/")["Roles"]
            if r["RoleName"].endswith(project_id)
        ),
    }


def test_network_and_deploy_are_idempotent(
    deployer: Deployer,
    access: AwsSession,
    sessions: tuple[AwsSession, AwsSession],
    source: GitHost,
) -> None:
    customer, operator = sessions
    project_id = new_id("prj")
    deployer.network.ensure_project_network(project_id)
    first = _inventory(customer, project_id)
    # The project's own pieces are its two groups; the VPC is the region's shared one.
    assert first == {
        "vpcs": 0,
        "subnets": 0,
        "groups": 2,
        "gateways": 0,
        "shared vpcs": 1,
        "shared subnets": 2,
        "shared gateways": 1,
        "balancers": 1,
        "clusters": 1,
        "roles": 3,
    }
    # A fresh driver (a restarted process) finds everything by name and tag.
    again = Deployer(access, operator, domain=DOMAIN)
    again.network.ensure_project_network(project_id)
    assert _inventory(customer, project_id) == first

    target = web_target(project_id)
    finished = deployer.describe_build(build(deployer, target, source))
    assert finished.image_uri
    spec = task_spec(target, finished.image_uri)
    arn = deployer.deploy(spec)
    before = leftovers(customer, operator, target.resource_id, target.hostname)
    assert again.deploy(spec) == arn
    assert deployer.deploy(spec) == arn
    assert leftovers(customer, operator, target.resource_id, target.hostname) == before
    settle(deployer, target, arn)
    deployments = customer.client("ecs").describe_services(
        cluster=f"capstan-{project_id}", services=[f"capstan-{target.resource_id}"]
    )["services"][0]["deployments"]
    assert len(deployments) == 1

    # A new deployment is a new revision and a new rollout.
    newer = deployer.deploy(replace(spec, deployment_id=new_id("dep"), cpu=512, memory=1024))
    assert newer != arn
    settle(deployer, target, newer)
    assert deployer.describe_rollout(target, arn).state == "failed"  # replaced
    wait_until(lambda: deployer.delete(target), timeout=10)


def test_invalid_sizes_are_refused(deployer: Deployer) -> None:
    target = worker_target(new_id("prj"))
    with pytest.raises(TerminalCloudError) as raised:
        deployer.deploy(replace(task_spec(target, "x:1"), memory=8192))
    assert raised.value.code == "invalid_task_size"
    assert "512, 1024, 2048" in raised.value.message


def test_move_hostname(
    deployer: Deployer, sessions: tuple[AwsSession, AwsSession], source: GitHost
) -> None:
    customer, operator = sessions
    project_id = new_id("prj")
    target = web_target(project_id)
    finished = deployer.describe_build(build(deployer, target, source))
    assert finished.image_uri
    settle(deployer, target, deployer.deploy(task_spec(target, finished.image_uri)))

    moved = replace(
        target, hostname=target.hostname.replace(".acme.", ".acme-2.") if target.hostname else None
    )
    assert moved.hostname and target.hostname
    deployer.move_hostname(moved, target.hostname)
    route53 = operator.client("route53")
    zone_id = route53.list_hosted_zones_by_name(DNSName=DOMAIN + ".")["HostedZones"][0]["Id"]
    names = {
        r["Name"]
        for r in route53.list_resource_record_sets(HostedZoneId=zone_id)["ResourceRecordSets"]
    }
    assert moved.hostname + "." in names and target.hostname + "." not in names
    elbv2 = customer.client("elbv2")
    balancer = elbv2.describe_load_balancers(Names=[f"cp-{project_id.replace('_', '')}"])[
        "LoadBalancers"
    ][0]
    listener = elbv2.describe_listeners(LoadBalancerArn=balancer["LoadBalancerArn"])["Listeners"][0]
    hosts = [
        condition["HostHeaderConfig"]["Values"]
        for rule in elbv2.describe_rules(ListenerArn=listener["ListenerArn"])["Rules"]
        for condition in rule["Conditions"]
        if condition["Field"] == "host-header"
    ]
    assert hosts == [[moved.hostname]]
    wait_until(lambda: deployer.delete(moved), timeout=10)
    wait_until(lambda: not leftovers(customer, operator, target.resource_id, moved.hostname))
    assert leftovers(customer, operator, target.resource_id, target.hostname) == {}


def test_delete_project_network(
    deployer: Deployer, sessions: tuple[AwsSession, AwsSession], source: GitHost
) -> None:
    customer, _operator = sessions
    project_id = new_id("prj")
    target = web_target(project_id)
    deployer.network.ensure_project_network(project_id)
    finished = deployer.describe_build(build(deployer, target, source))
    assert finished.image_uri
    settle(deployer, target, deployer.deploy(task_spec(target, finished.image_uri)))
    assert deployer.network.delete_project_network(project_id) is False
    assert _inventory(customer, project_id)["groups"] == 2

    wait_until(lambda: deployer.delete(target), timeout=10)
    assert wait_until(lambda: deployer.network.delete_project_network(project_id), timeout=10)
    # Nothing of the project's is left (the shared network stays while other tests' projects of
    # this account use it).
    left = _inventory(customer, project_id)
    assert {value for key, value in left.items() if not key.startswith("shared")} == {0}
    assert deployer.network.delete_project_network(project_id) is True


def test_monthly_run_rate() -> None:
    worker = monthly_run_rate_usd(1024, 2048, "us-east-1", "worker")
    # 1 vCPU and 2 GB for 730 hours at us-east-1 prices.
    assert worker == pytest.approx((0.04048 + 2 * 0.004445) * 730, abs=0.01)
    # A web server's task costs the same: the load balancer and the public IPv4 addresses are
    # the project's lines.
    assert monthly_run_rate_usd(1024, 2048, "us-east-1", "web_server") == worker
    lines = {
        line.item: (line.quantity, line.monthly_usd)
        for line in shared_lines("us-east-1", web_servers=2, tasks=3)
    }
    assert lines == {
        "load_balancer": (1, pytest.approx((0.0225 + 0.008) * 730, abs=0.01)),
        "load_balancer_ipv4": (2, pytest.approx(2 * 0.005 * 730, abs=0.01)),
        "task_ipv4": (3, pytest.approx(3 * 0.005 * 730, abs=0.01)),
    }
    # No web server, no load balancer: only the workers' tasks' addresses.
    assert [line.item for line in shared_lines("us-east-1", web_servers=0, tasks=1)] == [
        "task_ipv4"
    ]
    assert monthly_run_rate_usd(256, 512, "xx-nowhere-1", "worker") == monthly_run_rate_usd(
        256, 512, "us-east-1", "worker"
    )
    assert monthly_run_rate_usd(4096, 8192, "eu-central-1", "worker") > monthly_run_rate_usd(
        4096, 8192, "us-east-1", "worker"
    )


def test_a_bucket_estimate_prices_storage_requests_and_request_metrics_while_in_use() -> None:
    # 1 GB stored, nothing asked: storage only (request metrics receive no data, so cost none).
    assert bucket_monthly_usd(1024**3, 0, 0, "us-east-1") == pytest.approx(0.023)
    # 100 PUTs and 1000 GETs an hour, and the 16 request metrics at $0.30 a month each.
    busy = bucket_monthly_usd(1024**3, 100, 1000, "us-east-1")
    assert busy == pytest.approx(0.023 + (0.1 * 0.005 + 1 * 0.0004) * 730 + 16 * 0.30)


def test_environment_versions_live_side_by_side_and_unneeded_ones_are_pruned(
    deployer: Deployer, sessions: tuple[AwsSession, AwsSession]
) -> None:
    customer, _operator = sessions
    target = worker_target(new_id("prj"))
    root = f"/capstan/{target.resource_id}/"
    ssm = customer.client("ssm")

    def value(name: str) -> str:
        return str(ssm.get_parameter(Name=name, WithDecryption=True)["Parameter"]["Value"])

    unversioned = deployer.put_environment(target, {"MODE": "old"})
    one = deployer.put_environment(target, {"MODE": "one", "KEY": "k"}, "dep_one")
    two = deployer.put_environment(target, {"MODE": "two"}, "dep_two")
    # Writing a version never touches another: each task definition finds its own values.
    assert [value(env.parameters["MODE"]) for env in (unversioned, one, two)] == [
        "old",
        "one",
        "two",
    ]
    assert one.parameters["MODE"].endswith(f"{root}dep_one/MODE")
    removed = deployer.prune_environments(target, {"dep_two", None})
    assert sorted(removed) == [f"{root}dep_one/KEY", f"{root}dep_one/MODE"]
    assert value(two.parameters["MODE"]) == "two" and value(unversioned.parameters["MODE"]) == "old"
    deployer.prune_environments(target, {"dep_two"})
    left = [p["Name"] for p in ssm.describe_parameters()["Parameters"] if root in p["Name"]]
    assert left == [f"{root}dep_two/MODE"]


def test_a_first_deployment_makes_no_look_before_an_idempotent_create(
    deployer: Deployer,
    sessions: tuple[AwsSession, AwsSession],
    source: GitHost,
    endpoint: Endpoint,
    account: str,
) -> None:
    """Creates answer for what exists (bench/README.md, the least calls): a new target's build,
    environment and rollout read nothing first, and the rollout's looks find its target group
    through ECS. The calls counted are this account's (the sandbox also serves other tests'
    reconcilers)."""
    customer, _operator = sessions
    project_id = new_id("prj")
    deployer.network.ensure_project_network(project_id)
    iam_propagated()  # its roles usable: no pass here is tried again for them
    target = web_target(project_id)
    deployer.describe_rollout(target, "no-such-task-definition")  # the zone, seen once before

    before = calls(endpoint, account)
    finished = deployer.describe_build(build(deployer, target, source))
    assert finished.image_uri is not None
    environment = deployer.put_environment(target, {"API_KEY": "k-1", "EMPTY": ""}, "v1")
    arn = deployer.deploy(task_spec(target, finished.image_uri, environment))
    settle(deployer, target, arn)
    made = calls_since(endpoint, before, account)
    assert made["codebuild:StartBuild"] == 1  # counted: the deployer's role is in `account`

    for look in (
        "logs:DescribeLogGroups",
        "codebuild:BatchGetProjects",
        "ecr:DescribeRepositories",
        "ssm:AddTagsToResource",
        "elbv2:DescribeTargetGroups",
        "elbv2:DescribeTargetGroupAttributes",
    ):
        assert look not in made, (look, made)
    assert made["logs:CreateLogGroup"] == 2 and made["logs:PutRetentionPolicy"] == 2
    # A new version's parameters are made without a read: the task definition names them.
    assert "ssm:GetParametersByPath" not in made
    # Made with their tags, under the name the task definition gives.
    ssm = customer.client("ssm")
    name = ssm_names.version_path(target.resource_id, "v1") + "API_KEY"
    assert environment.parameters["API_KEY"] == ssm.get_parameter(Name=name)["Parameter"]["Name"]
    token = names.build_token_parameter(project_id, target.resource_id, "git")
    for parameter in (name, token):
        tags = ssm.list_tags_for_resource(ResourceType="Parameter", ResourceId=parameter)
        assert {"Key": "capstan:resource", "Value": target.resource_id} in tags["TagList"]

    # Deployed again (a new release): what exists is found by its create, nothing is read twice.
    before = calls(endpoint)
    again = deployer.deploy(task_spec(target, finished.image_uri, environment))
    settle(deployer, target, again)
    made = calls_since(endpoint, before)
    assert "route53:ListHostedZonesByName" not in made  # the zone id is kept
    assert made.get("elbv2:DescribeTargetGroups", 0) <= 1  # after CreateTargetGroup's refusal
    wait_until(lambda: deployer.delete(target), timeout=10)


def test_parameters_made_again_after_a_crash_are_overwritten_and_keep_their_tags(
    deployer: Deployer, sessions: tuple[AwsSession, AwsSession]
) -> None:
    """Parameters are created with their tags in one call; AWS (and the sandbox) refuse tags
    together with Overwrite, so one that already exists — a crashed pass's, or a build token of
    an earlier build — is overwritten without them, and keeps the tags it was made with."""
    customer, _operator = sessions
    target = worker_target(new_id("prj"))
    ssm = customer.client("ssm")
    name = ssm_names.version_path(target.resource_id, "v1") + "API_KEY"
    tags = names.tag_list(target.project_id, target.resource_id)
    with pytest.raises(ClientError) as refused:
        ssm.put_parameter(Name=name, Value="x", Type="SecureString", Overwrite=True, Tags=tags)
    assert refused.value.response["Error"]["Code"] == "ValidationException"

    first = deployer.put_environment(target, {"API_KEY": "k-1"}, "v1")
    again = deployer.put_environment(target, {"API_KEY": "k-2"}, "v1")  # the replay
    assert again.parameters == first.parameters
    assert ssm.get_parameter(Name=name, WithDecryption=True)["Parameter"]["Value"] == "k-2"
    token = names.build_token_parameter(target.project_id, target.resource_id, "git")
    for value in ("t-1", "t-2"):  # two builds of the target
        ssm_names.put_build_token(customer, target.project_id, target.resource_id, "git", value)
    assert ssm.get_parameter(Name=token, WithDecryption=True)["Parameter"]["Value"] == "t-2"
    for parameter in (name, token):
        listed = ssm.list_tags_for_resource(ResourceType="Parameter", ResourceId=parameter)
        assert {"Key": "capstan:resource", "Value": target.resource_id} in listed["TagList"]
