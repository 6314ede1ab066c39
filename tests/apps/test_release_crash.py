"""A release's environment survives a crash of the next one: the server (and its workers) is
killed with SIGKILL after the new release's environment was written to SSM, before its rollout
settled. The old release's task definition still finds its own values — what ECS would start
again if the new rollout failed (its circuit breaker) or the service scaled meanwhile — and after
the restart the new release converges and the old one can be rolled back to, with its values.

Before releases, environments were overwritten in place under `/capstan/<id>/`: the old task
definition would have started with the new values."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from capstan.cloud.aws import names
from capstan.cloud.aws.session import AwsSession
from tests.apps.processes import (
    account_sessions,
    bearer_client,
    capstan_env,
    connect_cloud_account,
    create_project,
    free_port,
    install_git_host,
    processes,
    wait_all_running,
    web_server_body,
)
from tests.polling import wait_until

pytestmark = pytest.mark.chaos


def values_of(customer: AwsSession, task_definition: str) -> dict[str, str]:
    """The secret variables a task of `task_definition` starts with, resolved from SSM by the
    parameter each one names (as ECS does when it starts the task)."""
    ecs, ssm = customer.client("ecs"), customer.client("ssm")
    described = ecs.describe_task_definition(taskDefinition=task_definition)["taskDefinition"]
    (container,) = described["containerDefinitions"]
    values = {}
    for secret in container.get("secrets", []):
        parameter = ssm.get_parameter(Name=secret["valueFrom"], WithDecryption=True)
        values[secret["name"]] = parameter["Parameter"]["Value"]
    return values


def task_definition_of(customer: AwsSession, deployment_id: str, resource_id: str) -> str:
    ecs = customer.client("ecs")
    family = names.service_name(resource_id)
    for arn in ecs.list_task_definitions(familyPrefix=family)["taskDefinitionArns"]:
        tags = ecs.describe_task_definition(taskDefinition=arn, include=["TAGS"]).get("tags", [])
        if {"key": names.DEPLOYMENT_TAG, "value": deployment_id} in tags:
            return str(arn)
    raise AssertionError(f"no task definition of {deployment_id}")


def test_a_crash_after_the_new_environment_is_written_leaves_the_old_release_its_values(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    with processes(tmp_path) as procs:
        _sandbox, sandbox_url = procs.sandbox(build_seconds=1.0, task_start_seconds=1.5)
        port = free_port()
        command = ["--dev", "--data-dir", str(data_dir), "--port", str(port)]
        env = capstan_env(CAPSTAN_SANDBOX_CLOUD_URL=sandbox_url, CAPSTAN_WORKER_LEASE_SECONDS="3")
        first = procs.server("server", command, env)
        token = first.wait_for_line(r"Dev API token \(shown once\): (capstan_\w+)").group(1)
        with bearer_client(f"http://127.0.0.1:{port}", token) as api:
            account_id = connect_cloud_account(api)
            install_git_host(api)
            project = create_project(api, "release-crash")
            created = api.post(
                f"/api/projects/{project['id']}/web_servers", json=web_server_body("web")
            )
            assert created.status_code == 201, created.text
            web_id = created.json()["id"]
            path = f"/api/projects/{project['id']}/web_servers/{web_id}"
            old_values = {"environment": [{"name": "GREETING", "value": "old"}]}
            assert api.put(f"{path}/environment", json=old_values).status_code == 202
            wait_all_running(api, [path], timeout=60)

            def newest() -> dict[str, Any]:
                return dict(api.get(f"{path}/deployments").json()["deployments"][0])

            old = newest()
            new_values = {"environment": [{"name": "GREETING", "value": "new"}]}
            assert api.put(f"{path}/environment", json=new_values).status_code == 202
            new = newest()
            assert new["id"] != old["id"]
            new_parameter = f"/capstan/{web_id}/{new['id']}/GREETING"
            with account_sessions(sandbox_url, account_id) as (customer, _operator):
                ssm = customer.client("ssm")
                # Kill as soon as the new release's environment is in SSM: inside the pass
                # that writes it and then registers the task definition and rolls it out.
                wait_until(
                    lambda: ssm.get_parameters(Names=[new_parameter])["Parameters"],
                    timeout=60,
                    every=0.01,
                    what="the new release's environment to be written",
                )
                first.kill()
                old_definition = task_definition_of(customer, old["id"], web_id)
                # The old release's tasks start with their own values, not the new ones.
                assert values_of(customer, old_definition) == {"GREETING": "old"}

            procs.server("server (restarted)", command, env)
            wait_until(
                lambda: newest()["status"] == "running" and newest()["id"] == new["id"],
                timeout=60,
                what="the new release to go live after the restart",
            )
            with account_sessions(sandbox_url, account_id) as (customer, _operator):
                new_definition = task_definition_of(customer, new["id"], web_id)
                assert values_of(customer, new_definition) == {"GREETING": "new"}
                assert values_of(customer, old_definition) == {"GREETING": "old"}
            # And the old release can be brought back, with its values.
            rolled = api.post(f"{path}/deployments/{old['id']}/rollback")
            assert rolled.status_code == 202, rolled.text
            wait_all_running(api, [path], timeout=60)
            with account_sessions(sandbox_url, account_id) as (customer, _operator):
                ecs = customer.client("ecs")
                (service,) = ecs.describe_services(
                    cluster=names.cluster_name(project["id"]),
                    services=[names.service_name(web_id)],
                )["services"]
                assert values_of(customer, service["taskDefinition"]) == {"GREETING": "old"}
