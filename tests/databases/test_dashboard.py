"""Databases on the dashboard's project page (over HTTP; the browser tests drive the same
forms): the form that adds one, and the list with status, endpoint and a delete button."""

from __future__ import annotations

import html

from tests.apps.helpers import new_shop
from tests.harness import Org


def test_the_project_page_lists_databases_and_offers_to_add_one(connected: Org) -> None:
    shop = new_shop(connected)
    browser = connected.browser()
    page = browser.get(f"/projects/{shop.project['id']}").text
    assert f'data-api="POST /api/projects/{shop.project["id"]}/databases"' in html.unescape(page)
    assert "Nothing yet" in browser.get(f"/projects/{shop.project['id']}/live").text
    created = connected.api.post(f"{shop.base}/databases", json={"name": "<b>orders</b>"})
    assert created.status_code == 201, created.text
    database = created.json()
    available = shop.wait_for(f"{shop.base}/databases/{database['id']}", "available")
    live = browser.get(f"/projects/{shop.project['id']}/live").text
    assert f'data-database="{database["id"]}"' in live
    assert "&lt;b&gt;orders&lt;/b&gt;" in live and "<b>orders</b>" not in live
    assert available["endpoint"] in live
    assert 'data-status="available"' in live.split(f'data-database="{database["id"]}"')[1]
    delete = f"DELETE /api/projects/{shop.project['id']}/databases/{database['id']}"
    assert delete in html.unescape(live)


def test_a_service_page_shows_a_reference_as_a_reference(connected: Org) -> None:
    """The environment editor keeps a reference (the row names the database; saving sends it
    back as `value_from`), never an empty value in its place."""
    shop = new_shop(connected)
    database = connected.api.post(f"{shop.base}/databases", json={"name": "main"}).json()
    web = shop.create_web_server()
    variables = [
        {"name": "DATABASE_URL", "value_from": {"database": database["id"]}},
        {"name": "DEBUG", "value": "1"},
    ]
    path = f"{shop.base}/web_servers/{web['id']}/environment"
    assert connected.api.put(path, json={"environment": variables}).status_code == 202
    service_page = f"/projects/{shop.project['id']}/web_servers/{web['id']}"
    page = connected.browser().get(service_page, params={"tab": "environment"}).text
    row = page.split(f'data-database="{database["id"]}"', 1)[1].split("</div>", 1)[0]
    assert 'value="DATABASE_URL"' in row and "env-value" not in row
    whole_row = page.split(f'data-database="{database["id"]}"', 1)[1].split("data-env-row", 1)[0]
    assert "<strong data-database-name>main</strong>" in whole_row  # by its name, not its id
    assert 'value="DEBUG"' in page
