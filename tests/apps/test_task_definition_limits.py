"""What a worker puts into its ECS task definition is bounded so that the definition fits ECS's
65,536 bytes (which the sandbox enforces): a worker at every limit deploys, and a start command or
an environment past them is 400 with nothing stored."""

from __future__ import annotations

from typing import Any

import pytest

from capstan.apps import schemas
from capstan.cloud.task_definition_size import start_command_bytes
from tests.apps.helpers import Ready, new_shop
from tests.cloud.deploy_helpers import largest_start_command, variable_names
from tests.harness import Org


@pytest.fixture
def shop(connected: Org) -> Ready:
    return new_shop(connected)


def _reference(name: str, database_id: str) -> dict[str, Any]:
    return {"name": name, "value_from": {"database": database_id}}


def test_a_worker_at_every_limit_deploys(connected: Org) -> None:
    """200 variables with 16 KiB of names, four of them references to a database whose user
    and database names are the longest allowed, and the largest start command."""
    shop = new_shop(connected)
    database = shop.org.api.post(
        f"{shop.base}/databases",
        json={"name": "main", "username": "u" * 63, "database_name": "d" * 63},
    )
    assert database.status_code == 201, database.text
    references = [
        _reference(chr(ord("A") + i), database.json()["id"])
        for i in range(schemas.MAX_DATABASE_VARIABLES)
    ]
    secrets = [
        {"name": name, "value": "v"}
        for name in variable_names(
            schemas.MAX_VARIABLES - len(references), schemas.MAX_NAMES_BYTES - len(references)
        )
    ]
    worker = shop.create_worker(start_command=largest_start_command())
    path = f"{shop.base}/workers/{worker['id']}"
    put = shop.org.api.put(f"{path}/environment", json={"environment": secrets + references})
    assert put.status_code == 202, put.text
    shop.wait_for(f"{shop.base}/databases/{database.json()['id']}", "available", timeout=120)
    shop.wait_for(path, "running", timeout=120)
    latest = shop.org.api.get(f"{path}/deployments").json()["deployments"][0]
    assert (latest["trigger"], latest["status"]) == ("environment", "running"), latest


def test_a_start_command_past_its_share_of_the_definition_is_400(shop: Ready) -> None:
    # 4096 quotes, the most any command of printable ASCII takes (8,232 bytes), is taken.
    quotes = shop.create_worker(name="quotes", start_command='"' * 4096)
    assert quotes["start_command"] == '"' * 4096
    accents = "é" * 1600  # 1600 characters, 9,600 bytes as the definition's JSON writes them
    assert start_command_bytes(accents) > schemas.START_COMMAND_BYTES
    body = {"name": "accents", "repo": quotes["repo"], "branch": "main", "cpu": 256}
    created = shop.org.api.post(
        f"{shop.base}/workers", json={**body, "memory": 512, "start_command": accents}
    )
    patched = shop.org.api.patch(
        f"{shop.base}/workers/{quotes['id']}", json={"start_command": accents}
    )
    for refused in (created, patched):
        assert refused.status_code == 400, refused.text
        assert refused.json()["error"] == "invalid_request"
        details = refused.json()["details"]
        assert {d["field"].split(".")[0] for d in details} == {"start_command"}, details
        assert any("9216" in d["message"] for d in details), details
    kept = shop.org.api.get(f"{shop.base}/workers/{quotes['id']}").json()
    assert kept["start_command"] == '"' * 4096


def test_more_variables_referencing_a_database_than_allowed_is_400(shop: Ready) -> None:
    worker = shop.create_worker()
    environment = f"{shop.base}/workers/{worker['id']}/environment"
    references = [_reference(f"URL_{i}", "dbs_any") for i in range(5)]
    refused = shop.org.api.put(environment, json={"environment": references})
    assert refused.status_code == 400, refused.text
    error = refused.json()
    assert error["error"] == "invalid_request"
    assert [d["field"] for d in error["details"]] == ["environment"]
    assert "at most 4 variables reference a database" in error["details"][0]["message"]
    assert shop.org.api.get(environment).json() == {"environment": []}


def test_a_plan_past_the_limits_is_refused_by_field(shop: Ready) -> None:
    """capstan.yaml's plan refuses what the API would, before anything is written."""
    worker = {"repo": "acme/shop", "branch": "main", "cpu": 256, "memory": 512}
    long_names = variable_names(65, schemas.MAX_NAMES_BYTES + 1)
    cases = [
        ({**worker, "start_command": "é" * 1600}, "workers.jobs.start_command"),
        (
            {
                **worker,
                "start_command": "python worker.py",
                "environment": {f"URL_{i}": {"database": "main"} for i in range(5)},
            },
            "workers.jobs.environment",
        ),
        (
            {
                **worker,
                "start_command": "python worker.py",
                "environment": dict.fromkeys(long_names, "v"),
            },
            "workers.jobs.environment",
        ),
    ]
    for spec, field in cases:
        response = shop.org.api.post(f"{shop.base}/plan", json={"workers": {"jobs": spec}})
        assert response.status_code == 400, (field, response.text)
        assert [d["field"] for d in response.json()["details"]] == [field]
