"""The routing check (`domains.checks`) over the wire, against the sandbox's public DNS: a CNAME
to the target passes; one elsewhere, addresses that are not the target's, and no record are each
named; an apex ALIAS (flattened to the target's addresses) passes; a server that does not answer
is said so."""

from __future__ import annotations

import asyncio
import secrets
import socket
from collections.abc import Iterator

import httpx
import pytest

from capstan.domains import checks
from tests.harness import RunningServer


@pytest.fixture
def client(server: RunningServer) -> Iterator[httpx.Client]:
    with server.client() as http:
        yield http


def _put(client: httpx.Client, name: str, kind: str, value: str) -> None:
    answer = client.put("/sandbox/dns/records", json={"name": name, "type": kind, "value": value})
    assert answer.status_code in (200, 201), answer.text


def test_what_dns_holds_is_named(
    client: httpx.Client, sandbox_dns_nameserver: tuple[str, int]
) -> None:
    zone = f"z{secrets.token_hex(4)}.example"
    target = f"lb.{zone}"
    _put(client, target, "A", "192.0.2.10")

    def check(hostname: str) -> str | None:
        return asyncio.run(checks.routing_problem(hostname, target, sandbox_dns_nameserver))

    _put(client, f"www.{zone}", "CNAME", f"{target}.")
    assert check(f"www.{zone}") is None
    _put(client, f"old.{zone}", "CNAME", f"elsewhere.{zone}")
    assert check(f"old.{zone}") == (
        f"The CNAME record of old.{zone} points to elsewhere.{zone}, not to {target}."
    )
    _put(client, f"ip.{zone}", "A", "198.51.100.7")
    assert check(f"ip.{zone}") == (
        f"ip.{zone} resolves to 198.51.100.7, which is not {target}: its routing record "
        "must point to it."
    )
    assert check(f"none.{zone}") == (
        f"No DNS record for none.{zone} was found: create its routing record."
    )
    _put(client, zone, "ALIAS", target)  # the apex: flattened to the target's addresses
    assert check(zone) is None


def test_a_server_that_does_not_answer_is_said_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checks, "TIMEOUT", 0.2)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as silent:
        silent.bind(("127.0.0.1", 0))  # a port that takes queries and never answers
        port = silent.getsockname()[1]
        problem = asyncio.run(
            checks.routing_problem("www.example.com", "lb.example", ("127.0.0.1", port))
        )
    assert problem == "DNS did not answer about www.example.com; Capstan asks again."
