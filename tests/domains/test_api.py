"""The rules of custom domains through HTTP: what a hostname may be (400s), one holder per
hostname across organizations (409 `domain_taken`, whose unsaid), another organization's ids
(404), and the shape of a domain as the API shows it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.apps.helpers import Ready, new_shop
from tests.harness import Org


def _domains(shop: Ready, web: dict[str, Any]) -> str:
    return f"{shop.base}/web_servers/{web['id']}/domains"


@pytest.fixture(scope="module")
def shop(connected: Org) -> Ready:
    return new_shop(connected)


@pytest.fixture(scope="module")
def web(shop: Ready) -> dict[str, Any]:
    return shop.create_web_server(name="web")


@pytest.mark.parametrize(
    ("hostname", "words"),
    [
        ("not a name", "not a valid DNS name"),
        ("localhost", "not a valid DNS name"),
        ("-bad.example.com", "not a valid DNS name"),
        ("bad_.example.com", "not a valid DNS name"),
        ("10.0.0.1", "IP address"),
        ("[::1]", "IP address"),
        ("www.example.123", "last label is a number"),
        ("*.example.com", "not a valid DNS name"),
        ("a" * 60 + ".example.com", "longer than 64"),
    ],
)
def test_a_hostname_that_is_no_dns_name_of_the_customers_is_400(
    connected: Org, shop: Ready, web: dict[str, Any], hostname: str, words: str
) -> None:
    answer = connected.api.post(_domains(shop, web), json={"hostname": hostname})
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"] == "invalid_hostname"
    assert words in answer.json()["message"]


def test_a_name_under_the_service_domain_is_400(
    connected: Org, shop: Ready, web: dict[str, Any]
) -> None:
    own = connected.server.settings.domain
    for hostname in (own, f"web.{shop.project['hostname_suffix']}.{own}", f"x.{own}."):
        answer = connected.api.post(_domains(shop, web), json={"hostname": hostname})
        assert answer.status_code == 400, answer.text
        assert "service domain" in answer.json()["message"]


def test_a_domain_is_shown_pending_then_listed_and_deleted(
    connected: Org, shop: Ready, web: dict[str, Any]
) -> None:
    hostname = f"WWW.{connected.server.unique('shop')}.example.com."
    created = connected.api.post(_domains(shop, web), json={"hostname": hostname})
    assert created.status_code == 201, created.text
    domain = created.json()
    assert domain["hostname"] == hostname.lower().rstrip(".")
    assert domain["status"] == "pending_dns"
    assert domain["error"] is None
    assert set(domain) == {
        "id",
        "hostname",
        "status",
        "dns_records",
        "error",
        "created_at",
        "updated_at",
    }
    path = f"{_domains(shop, web)}/{domain['id']}"
    assert connected.api.get(path).json()["id"] == domain["id"]
    listed = connected.api.get(_domains(shop, web)).json()["domains"]
    assert [item["id"] for item in listed] == [domain["id"]]
    checked = connected.api.post(f"{path}/verification")
    assert checked.status_code == 202, checked.text
    assert checked.json()["id"] == domain["id"]

    assert connected.api.delete(path).status_code == 204
    # Its hostname is free at once: the same service takes it again.
    again = connected.api.post(_domains(shop, web), json={"hostname": hostname})
    assert again.status_code == 201, again.text
    assert connected.api.delete(f"{_domains(shop, web)}/{again.json()['id']}").status_code == 204


def test_a_hostname_held_anywhere_is_409_without_saying_whose(
    connected: Org, shop: Ready, web: dict[str, Any], other_org: Org
) -> None:
    from tests.apps.helpers import ready

    hostname = f"{connected.server.unique('app')}.example.org"
    created = connected.api.post(_domains(shop, web), json={"hostname": hostname})
    assert created.status_code == 201, created.text
    # The same service, another of the organization's services, another organization.
    second = shop.create_web_server(name="api")
    theirs = ready(other_org)
    their_web = theirs.create_web_server(name="web")
    for org, path in (
        (connected, _domains(shop, web)),
        (connected, _domains(shop, second)),
        (other_org, _domains(theirs, their_web)),
    ):
        refused = org.api.post(path, json={"hostname": hostname.upper()})
        assert refused.status_code == 409, refused.text
        assert refused.json() == {
            "error": "domain_taken",
            "message": f"The hostname {hostname} is already attached to a service.",
        }

    # Another organization's ids are 404, through its own paths and through the owner's.
    domain_path = f"{_domains(shop, web)}/{created.json()['id']}"
    mine_there = f"{_domains(theirs, their_web)}/{created.json()['id']}"
    for path in (domain_path, mine_there):
        assert other_org.api.get(path).status_code == 404
        assert other_org.api.post(f"{path}/verification").status_code == 404
        assert other_org.api.delete(path).status_code == 404
    assert other_org.api.get(_domains(shop, web)).status_code == 404
    assert connected.api.get(domain_path).status_code == 200
    assert connected.api.delete(domain_path).status_code == 204


def test_a_domain_of_an_unknown_service_is_404(connected: Org, shop: Ready) -> None:
    path = f"{shop.base}/web_servers/svc_nothing/domains"
    assert connected.api.get(path).status_code == 404
    assert connected.api.post(path, json={"hostname": "www.example.com"}).status_code == 404
    # A web server's domains are not found through the workers' or sites' paths.
    assert connected.api.get(f"{shop.base}/workers/svc_nothing/domains").status_code == 404
