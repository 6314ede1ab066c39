"""A web server connects to a database through a reference in its environment: the task
definition gets the connection URL (no password) and `PGPASSWORD` from the RDS-managed secret
through ECS `secrets`, the execution role may read exactly that secret, and GET environment
shows the reference. References that cannot hold are 400s."""

from __future__ import annotations

import json
from functools import partial
from typing import Any

from capstan.cloud.aws import names
from tests.apps.helpers import Ready, new_shop
from tests.apps.processes import account_sessions
from tests.harness import Org
from tests.polling import wait_until

wait = partial(wait_until, timeout=30)


def _database(shop: Ready, name: str = "main") -> dict[str, Any]:
    created = shop.org.api.post(f"{shop.base}/databases", json={"name": name})
    assert created.status_code == 201, created.text
    return dict(created.json())


def _task_and_grants(shop: Ready, service_id: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The container the service runs now, and the execution role's policies."""
    account_id = shop.org.api.get("/api/cloud_account").json()["account_id"]
    sandbox_url = shop.org.server.settings.sandbox_cloud_url
    assert sandbox_url
    with account_sessions(sandbox_url, account_id) as (customer, _operator):
        ecs = customer.client("ecs")
        (service,) = ecs.describe_services(
            cluster=names.cluster_name(shop.project["id"]),
            services=[names.service_name(service_id)],
        )["services"]
        definition = ecs.describe_task_definition(taskDefinition=service["taskDefinition"])
        (container,) = definition["taskDefinition"]["containerDefinitions"]
        iam = customer.client("iam")
        role = names.execution_role_name(shop.project["id"])
        statements = []
        for policy in iam.list_role_policies(RoleName=role)["PolicyNames"]:
            document = iam.get_role_policy(RoleName=role, PolicyName=policy)["PolicyDocument"]
            document = json.loads(document) if isinstance(document, str) else document
            statements += document["Statement"]
        instance = customer.client("rds").describe_db_instances(
            DBInstanceIdentifier=f"capstan-{container_database(container)}"
        )["DBInstances"][0]
    return {**container, "instance": instance}, statements


def container_database(container: dict[str, Any]) -> str:
    url = next(e["value"] for e in container["environment"] if e["name"] == "DATABASE_URL")
    return str(url.split("@", 1)[1].split(".", 1)[0].removeprefix("capstan-"))


def test_a_web_server_reaches_its_database_through_the_rds_secret(connected: Org) -> None:
    shop = new_shop(connected)
    database = _database(shop)
    path = f"{shop.base}/databases/{database['id']}"
    web = shop.create_web_server()
    web_path = f"{shop.base}/web_servers/{web['id']}"
    variables = [
        {"name": "DATABASE_URL", "value_from": {"database": database["id"]}},
        {"name": "DEBUG", "value": "1"},
    ]
    put = connected.api.put(f"{web_path}/environment", json={"environment": variables})
    assert put.status_code == 202, put.text
    # GET environment shows the reference, never a password.
    assert connected.api.get(f"{web_path}/environment").json() == {"environment": variables}
    available = shop.wait_for(path, "available")
    deployed = shop.wait_for(web_path, "running", timeout=60)
    assert deployed["status"] == "running"
    container, statements = _task_and_grants(shop, web["id"])
    instance = container["instance"]
    secret_arn = instance["MasterUserSecret"]["SecretArn"]
    plain = {e["name"]: e["value"] for e in container["environment"]}
    host, port = available["endpoint"].split(":")
    assert plain["DATABASE_URL"] == f"postgresql://app@{host}:{port}/app?sslmode=require"
    secrets = {item["name"]: item["valueFrom"] for item in container["secrets"]}
    assert secrets["PGPASSWORD"] == f"{secret_arn}:password::"
    assert "DATABASE_URL" not in secrets
    # The execution role may read that secret, and no other.
    readable = [s for s in statements if "secretsmanager:GetSecretValue" in s["Action"]]
    assert [s["Resource"] for s in readable] == [[secret_arn]]


def test_references_that_cannot_hold_are_refused(connected: Org) -> None:
    shop = new_shop(connected)
    database = _database(shop, "refs")
    elsewhere = _database(new_shop(connected, stem="else"), "elsewhere")
    second = _database(shop, "second")
    web = shop.create_web_server()
    environment = f"{shop.base}/web_servers/{web['id']}/environment"

    def refused(variables: list[dict[str, Any]]) -> dict[str, Any]:
        answer = connected.api.put(environment, json={"environment": variables})
        assert answer.status_code == 400, (variables, answer.text)
        return dict(answer.json())

    def ref(name: str, database_id: str) -> dict[str, Any]:
        return {"name": name, "value_from": {"database": database_id}}

    assert refused([ref("DATABASE_URL", elsewhere["id"])])["error"] == "invalid_reference"
    assert refused([ref("DATABASE_URL", "dbs_nothing")])["error"] == "invalid_reference"
    both = [ref("DATABASE_URL", database["id"]), ref("REPORTS_URL", second["id"])]
    assert refused(both)["error"] == "invalid_reference"
    with_password = [ref("DATABASE_URL", database["id"]), {"name": "PGPASSWORD", "value": "x"}]
    assert refused(with_password)["error"] == "invalid_reference"
    for shape in (
        {"name": "DATABASE_URL"},
        {"name": "DATABASE_URL", "value": "x", "value_from": {"database": database["id"]}},
        {"name": "DATABASE_URL", "value_from": {"bucket": database["id"]}},
    ):
        assert refused([shape])["error"] == "invalid_request"
    assert connected.api.get(environment).json() == {"environment": []}
