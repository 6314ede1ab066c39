"""Validation failures say the field and the rule in words (docs/decisions/0118): never a regex,
never pydantic's own phrasing, and an unknown field names the closest known one."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.routing import iter_route_contexts
from pydantic import BaseModel

from capstan.app import create_app
from tests.apps.helpers import Ready, new_shop
from tests.harness import Org, RunningServer

DNS_WORDS = "lowercase letters, digits and hyphens, starting and ending with a letter or digit"


def messages(body: dict[str, Any]) -> dict[str, str]:
    return {detail["field"]: detail["message"] for detail in body["details"]}


def test_a_pattern_is_said_in_words(org: Org) -> None:
    refused = org.api.post("/api/projects", json={"name": "Shop", "hostname_suffix": "Shop_1"})
    assert refused.status_code == 400
    body = refused.json()
    assert body["error"] == "invalid_request"
    assert messages(body) == {"hostname_suffix": f"hostname_suffix must be {DNS_WORDS}"}
    assert body["message"] == f"hostname_suffix must be {DNS_WORDS}."
    assert "^" not in refused.text and "should match" not in refused.text


def test_an_unknown_field_names_the_closest_known_one(org: Org) -> None:
    refused = org.api.post(
        "/api/projects", json={"name": "Shop", "hostname_sufix": "shop", "colour": "red"}
    )
    assert refused.status_code == 400
    assert messages(refused.json()) == {
        "hostname_sufix": "unknown field 'hostname_sufix' (did you mean 'hostname_suffix'?)",
        "colour": "unknown field 'colour'",
        "hostname_suffix": "hostname_suffix is required",
    }
    assert "Extra inputs" not in refused.text


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"name": 7, "hostname_suffix": "shop"}, "name", "name must be a string"),
        ({"name": "", "hostname_suffix": "shop"}, "name", "name must not be empty"),
        (
            {"name": "x" * 101, "hostname_suffix": "shop"},
            "name",
            "name must be at most 100 characters",
        ),
        (
            {
                "name": "Shop",
                "hostname_suffix": "shop",
                "git_settings": {"delete_previews_on_branch_delete": 1},
            },
            "git_settings.delete_previews_on_branch_delete",
            "git_settings.delete_previews_on_branch_delete must be true or false",
        ),
    ],
)
def test_types_and_lengths_in_words(
    org: Org, body: dict[str, Any], field: str, message: str
) -> None:
    refused = org.api.post("/api/projects", json=body)
    assert refused.status_code == 400, refused.text
    assert messages(refused.json())[field] == message


def test_capstan_yaml_keys_are_named_as_the_file_names_them(connected: Org) -> None:
    shop: Ready = new_shop(connected)
    document = {
        "web_servers": {
            "api": {
                "repo": "capstan-samples/hello-web",
                "branch": "main",
                "cpu": 256,
                "memroy": 512,
            },
        },
        "cachs": {},
    }
    for action in ("plan", "apply"):
        refused = shop.org.api.post(f"{shop.base}/{action}", json=document)
        assert refused.status_code == 400, refused.text
        assert messages(refused.json()) == {
            "web_servers.api.memroy": (
                "unknown field 'web_servers.api.memroy' (did you mean 'memory'?)"
            ),
            "web_servers.api.memory": "web_servers.api.memory is required",
            "cachs": "unknown field 'cachs' (did you mean 'caches'?)",
        }


def _patterns(annotation: Any, seen: set[Any]) -> set[str]:
    """Every pattern a field of `annotation` (a model, a list of them, ...) is validated by."""
    if id(annotation) in seen:
        return set()
    seen.add(id(annotation))
    found: set[str] = set()
    for metadata in getattr(annotation, "__metadata__", ()):
        if getattr(metadata, "pattern", None):
            found.add(metadata.pattern)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        for field in annotation.model_fields.values():
            for metadata in field.metadata:
                if getattr(metadata, "pattern", None):
                    found.add(metadata.pattern)
            found |= _patterns(field.annotation, seen)
    for argument in getattr(annotation, "__args__", ()):
        found |= _patterns(argument, seen)
    return found


def test_every_pattern_a_body_is_checked_by_has_its_words(server: RunningServer) -> None:
    from capstan.validation import words_for  # here: the other tests run on older code too

    app = create_app(server.settings)
    patterns: dict[str, str] = {}
    for context in iter_route_contexts(app.routes):
        if not context.path.startswith("/api/"):
            continue  # the sandbox's own pages and emulators (which answer in AWS's, GitHub's)
        dependant = getattr(context.original_route, "dependant", None)
        for parameter in getattr(dependant, "body_params", []):
            for pattern in _patterns(parameter.field_info.annotation, set()):
                patterns[pattern] = context.path
    assert len(patterns) >= 10  # the walk finds them: names, branches, regions, account ids
    unsaid = {pattern: context for pattern, context in patterns.items() if not words_for(pattern)}
    assert unsaid == {}


def test_a_value_of_several_forms_is_told_about_the_closest(connected: Org) -> None:
    """A variable is a string, `{from_env: NAME}` or `{database: NAME}`: a typo in one is told
    about that one, not about the three."""
    shop: Ready = new_shop(connected)
    web = {"repo": "capstan-samples/hello-web", "branch": "main", "cpu": 256, "memory": 512}
    environment = {"URL": {"databse": "main"}, "PORTS": 5, "KEY": {"from_env": "no spaces"}}
    document = {"web_servers": {"api": {**web, "environment": environment}}}
    refused = shop.org.api.post(f"{shop.base}/plan", json=document)
    assert refused.status_code == 400, refused.text
    at = "web_servers.api.environment"
    env_words = "letters, digits and underscores, not starting with a digit (at most 255)"
    assert messages(refused.json()) == {
        f"{at}.URL.database": f"{at}.URL.database is required",
        f"{at}.URL.databse": f"unknown field '{at}.URL.databse' (did you mean 'database'?)",
        f"{at}.PORTS": f"{at}.PORTS must be a string or an object",
        f"{at}.KEY.from_env": f"{at}.KEY.from_env must be {env_words}",
    }
