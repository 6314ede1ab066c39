"""The cloud account API through real HTTP, against the sandbox cloud, on both databases."""

from __future__ import annotations

import re
import string
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.cloud.aws.session import Endpoint
from capstan.cloud_account import service
from capstan.cloud_account.models import CloudAccount
from capstan_sandbox.cloud.simulator import simulator
from capstan_sandbox.cloud.sts import assume_role_attempts
from tests.cloud_account.flow import cloud_of, connect, launch, verify
from tests.harness import Org, RunningServer, run_db
from tests.sandbox.aws import create_role, operator_principal, set_trust_policy, trust_policy

EXTERNAL_ID_CHARS = set(string.ascii_letters + string.digits + "_-")


def stored_connection(org: Org) -> CloudAccount:
    async def read(session: AsyncSession) -> CloudAccount:
        account = await session.get(CloudAccount, org.organization_id)
        assert account is not None
        return account

    return run_db(org.server.settings, read)


def test_get_generates_the_external_id_once(org: Org, other_org: Org) -> None:
    first = org.api.get("/api/cloud_account")
    assert first.status_code == 200, first.text
    body = first.json()
    assert body == {
        "account_id": None,
        "role_name": None,
        "external_id": body["external_id"],
        "active": False,
        "connected_at": None,
        "setup_url": body["setup_url"],
        "template_url": f"{org.server.base_url}/api/cloud_account/template",
    }
    assert len(body["external_id"]) >= 32  # 192 random bits, URL-safe base64
    assert set(body["external_id"]) <= EXTERNAL_ID_CHARS
    assert org.api.get("/api/cloud_account").json() == body
    assert other_org.api.get("/api/cloud_account").json()["external_id"] != body["external_id"]

    setup = urlsplit(body["setup_url"])
    assert f"{setup.scheme}://{setup.netloc}{setup.path}" == (
        f"{org.server.base_url}/sandbox/cloud/setup"
    )
    assert parse_qs(setup.query) == {"external_id": [body["external_id"]]}


def test_concurrent_first_calls_agree(server: RunningServer) -> None:
    org = server.new_org()
    try:
        with ThreadPoolExecutor(max_workers=16) as pool:
            responses = list(pool.map(lambda _: org.api.get("/api/cloud_account"), range(16)))
        assert [r.status_code for r in responses] == [200] * 16, [r.text for r in responses]
        assert len({r.json()["external_id"] for r in responses}) == 1
    finally:
        org.close()


def test_template_trusts_only_the_operator_with_the_external_id(
    org: Org, endpoint: Endpoint
) -> None:
    external_id = org.api.get("/api/cloud_account").json()["external_id"]
    response = org.api.get("/api/cloud_account/template")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    template = response.json()

    assert template["Parameters"]["ExternalId"]["Default"] == external_id
    assert template["Parameters"]["RoleName"]["Default"] == "CapstanAccess"
    role = template["Resources"]["CapstanAccessRole"]
    assert role["Type"] == "AWS::IAM::Role"
    assert role["Properties"]["RoleName"] == {"Ref": "RoleName"}
    assert role["Properties"]["AssumeRolePolicyDocument"]["Statement"] == [
        {
            "Sid": "CapstanOnlyWithExternalId",
            "Effect": "Allow",
            "Principal": {"AWS": operator_principal(endpoint)},
            "Action": "sts:AssumeRole",
            "Condition": {"StringEquals": {"sts:ExternalId": {"Ref": "ExternalId"}}},
        }
    ]
    assert set(template["Outputs"]) == {"AccountId", "RoleName", "RoleArn", "BoundaryArn"}


def test_the_full_sandbox_flow(org: Org) -> None:
    before = datetime.now().astimezone()
    flow = launch(org)
    launched, connection = flow["launched"], flow["connection"]
    assert re.fullmatch(r"[0-9]{12}", launched["account_id"])
    assert launched["role_name"] == "CapstanAccess"
    role_arn = f"arn:aws:iam::{launched['account_id']}:role/CapstanAccess"
    assert launched["role_arn"] == role_arn
    assert org.api.get("/api/cloud_account").json()["active"] is False

    verified = verify(
        org,
        account_id=launched["account_id"],
        role_name=launched["role_name"],
        external_id=connection["external_id"],
    )
    assert verified.status_code == 200, verified.text
    assert verified.json() == {
        "verified": True,
        "account_id": launched["account_id"],
        "role_arn": role_arn,
    }
    # Verified once IAM had propagated the role the stack had just made (refused until then).
    *refused, attempt = assume_role_attempts(role_arn=role_arn)
    assert attempt.allowed and attempt.external_id == connection["external_id"]
    assert not any(earlier.allowed for earlier in refused)

    state = org.api.get("/api/cloud_account").json()
    assert state["account_id"] == launched["account_id"]
    assert state["role_name"] == "CapstanAccess"
    assert state["active"] is True
    assert state["external_id"] == connection["external_id"]
    connected_at = datetime.fromisoformat(state["connected_at"])
    assert before <= connected_at <= datetime.now().astimezone()

    # Verifying again keeps the connection's start.
    again = verify(
        org,
        account_id=launched["account_id"],
        role_name="CapstanAccess",
        external_id=connection["external_id"],
    )
    assert again.status_code == 200
    assert org.api.get("/api/cloud_account").json()["connected_at"] == state["connected_at"]


@pytest.fixture
def slow_iam() -> Iterator[None]:
    """IAM takes two seconds to make a new role usable (within what AWS takes)."""
    before = simulator().configure(iam_propagation_seconds=2.0)
    yield
    simulator().configure(iam_propagation_seconds=before.iam_propagation_seconds)


@pytest.mark.usefixtures("slow_iam")
def test_verifying_the_role_the_stack_has_just_made_waits_until_iam_lets_it_be_assumed(
    org: Org,
) -> None:
    """Verified at once after the stack, as the README's tour does: AWS refuses the new role
    for a moment (as it refuses a wrong one), and the verification tries again until it is
    assumed."""
    flow = launch(org)
    launched = flow["launched"]
    verified = verify(
        org,
        account_id=launched["account_id"],
        role_name=launched["role_name"],
        external_id=flow["connection"]["external_id"],
    )
    assert verified.status_code == 200, verified.text
    *refused, assumed = assume_role_attempts(role_arn=launched["role_arn"])
    assert refused and not any(attempt.allowed for attempt in refused)
    assert assumed.allowed
    assert org.api.get("/api/cloud_account").json()["active"] is True


def test_wrong_external_id_is_refused_without_calling_the_cloud(org: Org) -> None:
    flow = connect(org)
    launched = flow["launched"]
    role_arn = f"arn:aws:iam::{launched['account_id']}:role/CapstanAccess"
    attempts = len(assume_role_attempts(role_arn=role_arn))
    calls = cloud_of(org.server).assume_role_calls

    response = verify(
        org,
        account_id=launched["account_id"],
        role_name="CapstanAccess",
        external_id=flow["connection"]["external_id"] + "x",
    )
    assert response.status_code == 422
    body = response.json()
    assert body["verified"] is False
    assert body["error"] == "external_id_mismatch"
    assert body["message"]
    assert len(assume_role_attempts(role_arn=role_arn)) == attempts
    assert cloud_of(org.server).assume_role_calls == calls
    assert org.api.get("/api/cloud_account").json()["active"] is True


def test_an_organization_without_an_external_id_is_refused(server: RunningServer) -> None:
    org = server.new_org()
    try:
        calls = cloud_of(server).assume_role_calls
        response = verify(
            org, account_id="123456789012", role_name="CapstanAccess", external_id="guessed-id"
        )
        assert response.status_code == 422
        assert response.json()["error"] == "external_id_mismatch"
        assert cloud_of(server).assume_role_calls == calls
    finally:
        org.close()


def test_another_organizations_external_id_is_refused(org: Org, other_org: Org) -> None:
    theirs = connect(other_org)
    org.api.get("/api/cloud_account")
    calls = cloud_of(org.server).assume_role_calls
    response = verify(
        org,
        account_id=theirs["launched"]["account_id"],
        role_name="CapstanAccess",
        external_id=theirs["connection"]["external_id"],
    )
    assert response.status_code == 422
    assert response.json()["error"] == "external_id_mismatch"
    assert cloud_of(org.server).assume_role_calls == calls
    assert org.api.get("/api/cloud_account").json()["account_id"] is None


@pytest.fixture
def brief_verification_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    """A refused role is tried again for a second, not for as long as a person is given (the
    server runs in this process)."""
    monkeypatch.setattr(service, "VERIFY_WAIT_SECONDS", 1.0)


@pytest.mark.usefixtures("brief_verification_wait")
def test_a_nonexistent_role_fails_verification(org: Org, endpoint: Endpoint) -> None:
    flow = connect(org)
    account_id = flow["launched"]["account_id"]
    response = verify(
        org,
        account_id=account_id,
        role_name="NoSuchRole",
        external_id=flow["connection"]["external_id"],
    )
    assert response.status_code == 422
    body = response.json()
    assert body["verified"] is False
    assert body["error"] == "assume_role_failed"
    assert body["message"].startswith(
        f"Capstan could not assume arn:aws:iam::{account_id}:role/NoSuchRole: AWS refused "
        "AssumeRole (AccessDenied)"
    )
    # AWS's own words stay in the server's log; the principal to trust is Capstan's to say.
    assert "is not authorized" not in body["message"]
    assert f"trusts {operator_principal(endpoint)}" in body["message"]
    # A failure on another role leaves the recorded connection alone.
    state = org.api.get("/api/cloud_account").json()
    assert state["active"] is True
    assert state["role_name"] == "CapstanAccess"


@pytest.mark.usefixtures("brief_verification_wait")
def test_a_role_requiring_another_external_id_fails_verification(
    org: Org, endpoint: Endpoint
) -> None:
    flow = connect(org)
    account_id = flow["launched"]["account_id"]
    external_id = flow["connection"]["external_id"]
    create_role(
        endpoint,
        account_id,
        "SomeoneElsesId",
        trust_policy(operator_principal(endpoint), external_id="another-organizations-id"),
    )
    response = verify(
        org, account_id=account_id, role_name="SomeoneElsesId", external_id=external_id
    )
    assert response.status_code == 422
    assert response.json()["error"] == "assume_role_failed"
    attempts = assume_role_attempts(role_arn=f"arn:aws:iam::{account_id}:role/SomeoneElsesId")
    assert attempts and all(not a.allowed and a.external_id == external_id for a in attempts)


@pytest.mark.usefixtures("brief_verification_wait")
def test_a_failing_recorded_role_marks_the_connection_inactive(
    org: Org, endpoint: Endpoint
) -> None:
    flow = connect(org)
    account_id = flow["launched"]["account_id"]
    external_id = flow["connection"]["external_id"]
    body = {"account_id": account_id, "role_name": "CapstanAccess", "external_id": external_id}
    connected_at = org.api.get("/api/cloud_account").json()["connected_at"]

    # The customer edits the role's trust policy so that Capstan's external ID no longer works.
    set_trust_policy(
        endpoint,
        account_id,
        "CapstanAccess",
        trust_policy(operator_principal(endpoint), external_id="changed"),
    )
    failed = verify(org, **body)
    assert failed.status_code == 422
    assert failed.json()["error"] == "assume_role_failed"
    state = org.api.get("/api/cloud_account").json()
    assert state["active"] is False
    assert state["account_id"] == account_id
    assert state["connected_at"] == connected_at
    stored = stored_connection(org)
    assert stored.last_error == failed.json()["message"]
    assert stored.last_verified_at is not None  # the last success, kept

    set_trust_policy(
        endpoint,
        account_id,
        "CapstanAccess",
        trust_policy(operator_principal(endpoint), external_id=external_id),
    )
    assert verify(org, **body).status_code == 200
    state = org.api.get("/api/cloud_account").json()
    assert state["active"] is True
    assert state["connected_at"] == connected_at
    assert stored_connection(org).last_error is None


def test_switching_to_another_role_restarts_connected_at(org: Org, endpoint: Endpoint) -> None:
    flow = connect(org)
    account_id = flow["launched"]["account_id"]
    external_id = flow["connection"]["external_id"]
    first = org.api.get("/api/cloud_account").json()
    create_role(
        endpoint,
        account_id,
        "CapstanAccess2",
        trust_policy(operator_principal(endpoint), external_id=external_id),
    )
    switched = verify(
        org, account_id=account_id, role_name="CapstanAccess2", external_id=external_id
    )
    assert switched.status_code == 200
    assert switched.json()["role_arn"] == f"arn:aws:iam::{account_id}:role/CapstanAccess2"
    second = org.api.get("/api/cloud_account").json()
    assert second["role_name"] == "CapstanAccess2"
    assert second["connected_at"] > first["connected_at"]


VALID = {"account_id": "123456789012", "role_name": "CapstanAccess", "external_id": "abc-123"}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({k: v for k, v in VALID.items() if k != "account_id"}, "account_id"),
        ({k: v for k, v in VALID.items() if k != "role_name"}, "role_name"),
        ({k: v for k, v in VALID.items() if k != "external_id"}, "external_id"),
        ({**VALID, "account_id": 123456789012}, "account_id"),
        ({**VALID, "account_id": "12345678901"}, "account_id"),
        ({**VALID, "account_id": "1234567890123"}, "account_id"),
        ({**VALID, "account_id": "١٢٣٤٥٦٧٨٩٠١٢"}, "account_id"),  # digits, but not ASCII
        ({**VALID, "role_name": "Capstan Access"}, "role_name"),
        ({**VALID, "role_name": "a" * 65}, "role_name"),
        ({**VALID, "role_name": ""}, "role_name"),
        ({**VALID, "role_name": ["CapstanAccess"]}, "role_name"),
        ({**VALID, "external_id": None}, "external_id"),
        ({**VALID, "external_id": "x"}, "external_id"),
        ({**VALID, "role_arn": "arn:aws:iam::123456789012:role/x"}, "role_arn"),
    ],
)
def test_malformed_bodies_are_400(org: Org, body: dict[str, Any], field: str) -> None:
    response = org.api.post("/api/cloud_account/verification", json=body)
    assert response.status_code == 400, response.text
    error = response.json()
    assert set(error) == {"error", "message", "details"}
    assert error["error"] == "invalid_request"
    assert field in {detail["field"] for detail in error["details"]}


@pytest.mark.parametrize("content", [b"not json", b"[]", b"", b'"text"'])
def test_bodies_that_are_not_objects_are_400(org: Org, content: bytes) -> None:
    response = org.api.post(
        "/api/cloud_account/verification",
        content=content,
        headers={"Content-Type": "application/json"},
    )
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_request"


def test_cookie_sessions_need_csrf_to_verify(org: Org) -> None:
    browser = org.browser()
    assert browser.get("/api/cloud_account").status_code == 200  # GET needs no CSRF token
    token, browser.csrf = browser.csrf, ""
    response = browser.post("/api/cloud_account/verification", json=VALID)
    assert response.status_code == 403
    assert response.json()["error"] == "csrf_token_invalid"
    browser.csrf = token
    response = browser.post("/api/cloud_account/verification", json=VALID)
    assert response.status_code == 422  # authenticated; the external ID is not this org's


def test_every_route_needs_credentials(server: RunningServer) -> None:
    with server.client() as anonymous:
        for method, path in [
            ("GET", "/api/cloud_account"),
            ("GET", "/api/cloud_account/template"),
            ("POST", "/api/cloud_account/verification"),
        ]:
            response = anonymous.request(method, path, json=VALID if method == "POST" else None)
            assert response.status_code == 401, (method, path)
            assert response.json()["error"] == "unauthenticated"
        bad_token = anonymous.get(
            "/api/cloud_account", headers={"Authorization": "Bearer capstan_nope"}
        )
        assert bad_token.status_code == 401


def test_openapi_documents_the_verification_failure(server: RunningServer) -> None:
    with server.client() as client:
        document = client.get("/docs/api").json()
    paths = document["paths"]
    verification = paths["/api/cloud_account/verification"]["post"]
    failure = verification["responses"]["422"]["content"]["application/json"]["schema"]
    assert failure == {"$ref": "#/components/schemas/VerificationFailedBody"}
    assert set(document["components"]["schemas"]["VerificationFailedBody"]["properties"]) == {
        "verified",
        "error",
        "message",
    }
    ok = verification["responses"]["200"]["content"]["application/json"]["schema"]
    assert ok == {"$ref": "#/components/schemas/VerificationOut"}
    for path in ("/api/cloud_account", "/api/cloud_account/template"):
        assert paths[path]["get"]["summary"]
        assert "422" not in paths[path]["get"]["responses"]
    assert not any(path.startswith("/sandbox/") for path in paths)
