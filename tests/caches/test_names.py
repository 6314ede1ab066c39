"""A cache's optional `name` label: unique among a project's live caches, changeable, freed when
the cache is deleted — the handle by which capstan.yaml names a cache."""

from __future__ import annotations

import pytest

from tests.apps.helpers import new_shop
from tests.harness import Org


def test_a_name_is_kept_shown_and_unique_in_its_project(connected: Org) -> None:
    shop, other = new_shop(connected), new_shop(connected)
    api = connected.api
    created = api.post(f"{shop.base}/cache", json={"storage_limit_mb": 128, "name": "sessions"})
    assert created.status_code == 201, created.text
    assert created.json()["name"] == "sessions"
    listed = api.get(f"{shop.base}/cache").json()["caches"]
    assert [cache["name"] for cache in listed] == ["sessions"]

    again = api.post(f"{shop.base}/cache", json={"storage_limit_mb": 128, "name": "sessions"})
    assert again.status_code == 409, again.text
    assert again.json()["error"] == "name_taken"
    assert again.json()["details"][0]["field"] == "name"
    assert len(api.get(f"{shop.base}/cache").json()["caches"]) == 1
    # Another project may use the name; a cache without one is fine beside named ones.
    elsewhere = api.post(f"{other.base}/cache", json={"storage_limit_mb": 128, "name": "sessions"})
    assert elsewhere.status_code == 201, elsewhere.text
    unnamed = api.post(f"{shop.base}/cache", json={"storage_limit_mb": 128})
    assert unnamed.status_code == 201 and unnamed.json()["name"] is None


def test_a_name_changes_and_is_freed_by_deletion(connected: Org) -> None:
    shop = new_shop(connected)
    api = connected.api
    first = api.post(f"{shop.base}/cache", json={"storage_limit_mb": 128, "name": "a"}).json()
    second = api.post(f"{shop.base}/cache", json={"storage_limit_mb": 128, "name": "b"}).json()
    taken = api.patch(
        f"{shop.base}/cache/{second['id']}", json={"storage_limit_mb": 128, "name": "a"}
    )
    assert taken.status_code == 409, taken.text
    renamed = api.patch(
        f"{shop.base}/cache/{second['id']}", json={"storage_limit_mb": 128, "name": "c"}
    )
    assert renamed.status_code == 200, renamed.text
    assert api.get(f"{shop.base}/cache/{second['id']}").json()["name"] == "c"

    assert api.delete(f"{shop.base}/cache/{first['id']}").status_code == 200
    reused = api.post(f"{shop.base}/cache", json={"storage_limit_mb": 128, "name": "a"})
    assert reused.status_code == 201, reused.text


@pytest.mark.parametrize("name", ["Sessions", "-a", "a_b", "", "x" * 64])
def test_a_bad_name_is_refused(connected: Org, name: str) -> None:
    shop = new_shop(connected)
    body = {"storage_limit_mb": 128, "name": name}
    response = connected.api.post(f"{shop.base}/cache", json=body)
    assert response.status_code == 400, response.text
    assert response.json()["details"][0]["field"] == "name"
