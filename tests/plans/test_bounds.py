"""A capstan.yaml's published bounds: a document over any of them is 400 naming the bound (the
section and its limit), refused before anything is read or asked; a body over 4 MB is 413, one
nested deeper than JSON parsing allows is 400, none logs a failure (the request's own logger,
`capstan`, logs a traceback for a 500)."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from capstan.apps.schemas import MAX_VARIABLES
from capstan.plans import schemas
from tests.apps.helpers import WEB_REPO, new_shop
from tests.harness import Org

SERVICE = {"repo": WEB_REPO, "branch": "main", "cpu": 256, "memory": 512}
WORKER = {**SERVICE, "start_command": "python worker.py"}
SITE = {"repo": WEB_REPO, "branch": "main", "build_command": "make", "publish_dir": "dist"}


def failures(caplog: pytest.LogCaptureFixture) -> list[str]:
    """What the requests' own logger logged (the reconcile workers log elsewhere)."""
    return [record.getMessage() for record in caplog.records if record.name == "capstan"]


def over(bound: int, entry: Any, stem: str = "s") -> dict[str, Any]:
    return {f"{stem}{index}": entry for index in range(bound + 1)}


CASES = {
    "web_servers": (over(schemas.MAX_SERVICES_PER_SECTION, SERVICE), "web_servers"),
    "workers": (over(schemas.MAX_SERVICES_PER_SECTION, WORKER), "workers"),
    "static_websites": (over(schemas.MAX_SERVICES_PER_SECTION, SITE), "static_websites"),
    "caches": (over(schemas.MAX_CACHES, {"storage_limit_mb": 128}), "caches"),
    "databases": (over(schemas.MAX_DATABASES, {}, "db"), "databases"),
    "buckets": ([f"b{index}" for index in range(schemas.MAX_BUCKETS + 1)], "buckets"),
    "environment": (
        {"api": {**SERVICE, "environment": over(MAX_VARIABLES, "x", "V")}},
        "web_servers.api.environment",
    ),
}


@pytest.mark.parametrize("section", list(CASES))
def test_a_document_over_a_bound_is_refused_naming_it(
    connected: Org, section: str, caplog: pytest.LogCaptureFixture
) -> None:
    shop = new_shop(connected)
    value, field = CASES[section]
    top = "web_servers" if section == "environment" else section
    limit = MAX_VARIABLES if section == "environment" else len(value) - 1
    with caplog.at_level(logging.WARNING, logger="capstan"):
        for what in ("plan", "apply"):
            response = shop.org.api.post(f"{shop.base}/{what}", json={top: value})
            assert response.status_code == 400, response.text
            [detail] = response.json()["details"]
            assert detail["field"] == field
            assert f"at most {limit} " in detail["message"], detail
    assert shop.org.api.get(f"{shop.base}/web_servers").json()["web_servers"] == []
    assert failures(caplog) == []


def test_a_body_too_large_or_too_deep_is_refused(
    connected: Org, caplog: pytest.LogCaptureFixture
) -> None:
    shop = new_shop(connected)
    headers = {"Content-Type": "application/json"}
    with caplog.at_level(logging.WARNING, logger="capstan"):
        large = json.dumps({"web_servers": {}, "x": "y" * (4 * 1024 * 1024)})
        response = shop.org.api.post(f"{shop.base}/plan", content=large, headers=headers)
        assert response.status_code == 413, response.text
        assert response.json()["error"] == "payload_too_large"
        deep = '{"web_servers": ' + "[" * 100_000 + "]" * 100_000 + "}"
        response = shop.org.api.post(f"{shop.base}/plan", content=deep, headers=headers)
        assert response.status_code == 400, response.text
        assert response.json()["error"] == "invalid_request"
    assert failures(caplog) == []
