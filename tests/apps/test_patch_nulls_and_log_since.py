"""Explicit nulls in PATCH bodies and out-of-range `since` values are the caller's errors: 400
`invalid_request` naming the field, never a 500 or a 502."""

from __future__ import annotations

import pytest

from tests.apps.helpers import Ready, new_shop
from tests.harness import Org


@pytest.fixture
def shop(connected: Org) -> Ready:
    return new_shop(connected)


def _assert_invalid(response_status: int, body: dict, field: str) -> None:
    assert response_status == 400, body
    assert body["error"] == "invalid_request"
    assert [detail["field"] for detail in body["details"]] == [field]


@pytest.mark.parametrize("field", ["branch", "health_path", "cpu", "memory", "auto_deploy"])
def test_null_for_a_web_server_field_is_400(shop: Ready, field: str) -> None:
    server = shop.create_web_server()
    path = f"{shop.base}/web_servers/{server['id']}"
    response = shop.org.api.patch(path, json={field: None})
    _assert_invalid(response.status_code, response.json(), field)
    assert shop.org.api.get(path).json()[field] == server[field]


@pytest.mark.parametrize("field", ["branch", "start_command", "cpu", "memory", "auto_deploy"])
def test_null_for_a_worker_field_is_400(shop: Ready, field: str) -> None:
    worker = shop.create_worker()
    response = shop.org.api.patch(f"{shop.base}/workers/{worker['id']}", json={field: None})
    _assert_invalid(response.status_code, response.json(), field)


def test_null_build_command_still_clears_it(shop: Ready) -> None:
    server = shop.create_web_server(build_command="make image")
    path = f"{shop.base}/web_servers/{server['id']}"
    response = shop.org.api.patch(path, json={"build_command": None})
    assert response.status_code == 200, response.text
    assert response.json()["build_command"] is None


@pytest.mark.parametrize(
    "since",
    [
        "1969-12-31T00:00:00Z",  # before 1970: CloudWatch's clock starts there
        "0.5",  # a number, not a date-time
        "1700000000",
        "3000-01-01T00:00:00Z",  # absurdly far ahead
        "2026-02-30T00:00:00Z",
        "2026-01-31T12:00:00",  # no zone
    ],
)
def test_a_bad_since_is_400(shop: Ready, since: str) -> None:
    server = shop.create_web_server()
    response = shop.org.api.get(
        f"{shop.base}/web_servers/{server['id']}/logs", params={"since": since}
    )
    _assert_invalid(response.status_code, response.json(), "query.since")


def test_a_good_since_answers_lines(shop: Ready) -> None:
    server = shop.create_web_server()
    response = shop.org.api.get(
        f"{shop.base}/web_servers/{server['id']}/logs",
        params={"since": "1970-01-01T00:00:00+01:00"},
    )
    assert response.status_code == 200, response.text
    assert isinstance(response.json()["lines"], list)
