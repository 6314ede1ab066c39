"""Size limits of AWS that moto lacks, enforced by the sandbox: SSM parameter values by tier, and
the size of an ECS task definition."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from botocore.exceptions import ClientError

from capstan.cloud.aws.session import AwsSession, Endpoint
from capstan.sandbox.cloud.accounts import organization_access
from tests.sandbox.aws import new_account


@pytest.fixture
def admin(endpoint: Endpoint) -> Iterator[AwsSession]:
    with organization_access(endpoint, new_account(endpoint, "limits")) as session:
        yield session


def put(admin: AwsSession, name: str, size: int, tier: str | None) -> str:
    """The tier the parameter got, or the error code."""
    extra = {"Tier": tier} if tier else {}
    try:
        answer = admin.client("ssm").put_parameter(
            Name=name, Value="v" * size, Type="SecureString", Overwrite=True, **extra
        )
    except ClientError as error:
        return str(error.response["Error"]["Code"])
    return str(answer["Tier"])


def test_parameter_values_are_limited_by_tier(admin: AwsSession) -> None:
    assert put(admin, "/t/a", 4096, None) == "Standard"
    assert put(admin, "/t/b", 4097, None) == "ValidationException"
    assert put(admin, "/t/c", 4097, "Standard") == "ValidationException"
    assert put(admin, "/t/d", 8192, "Advanced") == "Advanced"
    assert put(admin, "/t/e", 8193, "Advanced") == "ValidationException"
    assert put(admin, "/t/f", 4096, "Intelligent-Tiering") == "Standard"
    assert put(admin, "/t/g", 4097, "Intelligent-Tiering") == "Advanced"
    assert put(admin, "/t/h", 8193, "Intelligent-Tiering") == "ValidationException"
    described = admin.client("ssm").describe_parameters()["Parameters"]
    assert {p["Name"]: p["Tier"] for p in described} == {
        "/t/a": "Standard",
        "/t/d": "Advanced",
        "/t/f": "Standard",
        "/t/g": "Advanced",
    }


def test_a_task_definition_is_at_most_64_kib(admin: AwsSession) -> None:
    ecs = admin.client("ecs")

    def register(secrets: int) -> str:
        container = {
            "name": "app",
            "image": "nginx",
            "secrets": [
                {"name": f"V{i:04}", "valueFrom": f"arn:aws:ssm:us-east-1:1:parameter/x/V{i:04}"}
                for i in range(secrets)
            ],
        }
        try:
            ecs.register_task_definition(
                family="limits", containerDefinitions=[container], cpu="256", memory="512"
            )
        except ClientError as error:
            return str(error.response["Error"]["Code"])
        return "registered"

    entry = len(
        json.dumps({"name": "V0000", "valueFrom": "arn:aws:ssm:us-east-1:1:parameter/x/V0000"})
    )
    fits = (60 * 1024) // (entry + 2)
    assert register(fits) == "registered"
    assert register(2 * fits) == "ClientException"
