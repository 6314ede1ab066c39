"""The Domains section of a web server's page over HTTP: the add form, each domain with its
status, its error and the records to create (each with a copy button) in the live part the page
polls, a remove button; a worker's page has none."""

from __future__ import annotations

import html

from tests.apps.helpers import ready
from tests.harness import Org
from tests.polling import wait_until


def test_a_web_servers_page_shows_its_domains_records_and_status_live(org: Org) -> None:
    shop = ready(org)
    web = shop.create_web_server(name="web")
    worker = shop.create_worker(name="jobs")
    hostname = f"www.{org.server.unique('dash')}.example.com"
    api = f"{shop.base}/web_servers/{web['id']}/domains"
    page_path = f"/projects/{shop.project['id']}/web_servers/{web['id']}"
    browser = org.browser()

    page = browser.get(page_path).text
    assert f'data-api="POST {api}"' in page
    assert "No custom domains." in page

    domain = org.api.post(api, json={"hostname": hostname}).json()
    wait_until(
        lambda: len(org.api.get(f"{api}/{domain['id']}").json()["dns_records"]) == 2,
        what="the domain's records",
    )
    live = browser.get(f"{page_path}/live?tab=overview").text
    assert f'data-domain="{hostname}"' in live
    assert 'data-status="pending_dns"' in live
    records = org.api.get(f"{api}/{domain['id']}").json()["dns_records"]
    for index, record in enumerate(records, start=1):
        copy_id = f"record-{domain['id']}-{index}"
        assert f'id="{copy_id}" value="{html.escape(record["value"])}" readonly' in live
        assert f'data-copy="#{copy_id}"' in live
    error = org.api.get(f"{api}/{domain['id']}").json()["error"]
    assert error and html.escape(error) in live
    assert f'data-api="DELETE {api}/{domain["id"]}"' in live

    # Another tab, and a worker's page, read no domains.
    assert "data-domains" not in browser.get(f"{page_path}/live?tab=deployments").text
    worker_page = browser.get(f"/projects/{shop.project['id']}/workers/{worker['id']}").text
    assert "data-domains" not in worker_page and "Add a domain" not in worker_page

    assert org.api.delete(f"{api}/{domain['id']}").status_code == 204
