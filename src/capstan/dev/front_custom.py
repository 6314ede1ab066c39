"""Where a customer's own hostname leads in the sandbox: the front (`front`) answers a request
whose Host is not under the service domain as the internet would route it, through the
sandbox's public DNS (`capstan_sandbox.dns`, at `Settings.dns_nameserver`).

The front asks that DNS server for the hostname's A record over UDP, as a browser's resolver
would, and follows the CNAME chain in the answer to a load balancer's DNS name
(`*.elb.amazonaws.com`) or a CloudFront domain (`*.cloudfront.net`): the one whose listener
rules or aliases then decide what answers, as the request would reach it on the internet. A
name answered with addresses alone is an ALIAS/ANAME the DNS provider flattened (or a plain A
record): what it stands for is known only to the provider, so the front reads the name's
records from the public DNS's control (`GET /_capstan/dns/records?name=`) and follows the
ALIAS's target. A name that does not resolve, or leads elsewhere, has no destination.
"""

from __future__ import annotations

import ipaddress

import dns.exception
import dns.message
import dns.query
import dns.rcode
import dns.rdatatype
import httpx

from capstan_sandbox.dns.control import RECORDS_PATH

_AWS_SUFFIXES = (".elb.amazonaws.com", ".cloudfront.net")
_HOPS = 8
_TIMEOUT_SECONDS = 2.0


def is_custom_host(hostname: str, service_suffix: str, own_hosts: frozenset[str]) -> bool:
    """Whether `hostname` may be a customer's domain: a DNS name with a dot, not this server's
    own host nor an address, not under the service domain (`front` answers those)."""
    if not hostname or "." not in hostname or hostname in own_hosts:
        return False
    if hostname.endswith(service_suffix) or hostname.endswith(".localhost"):
        return False
    try:
        ipaddress.ip_address(hostname.strip("[]"))
    except ValueError:
        return True
    return False


def _followed(nameserver: tuple[str, int], name: str) -> str | None:
    """The last name of `name`'s CNAME chain, as the DNS server answers it; None if the name
    does not resolve to an address."""
    host, port = nameserver
    try:
        answer = dns.query.udp(
            dns.message.make_query(name, "A"), host, port=port, timeout=_TIMEOUT_SECONDS
        )
    except (dns.exception.DNSException, OSError):
        return None
    if answer.rcode() != dns.rcode.NOERROR:
        return None
    targets: dict[str, str] = {}
    addressed: set[str] = set()
    for rrset in answer.answer:
        owner = rrset.name.to_text().rstrip(".").lower()
        if rrset.rdtype == dns.rdatatype.CNAME:
            targets[owner] = rrset[0].target.to_text().rstrip(".").lower()
        elif rrset.rdtype == dns.rdatatype.A:
            addressed.add(owner)
    current = name
    for _ in range(_HOPS):
        if current not in targets:
            break
        current = targets[current]
    return current if current in addressed else None


def _alias_of(sandbox_cloud_url: str, name: str) -> str | None:
    try:
        answer = httpx.get(
            sandbox_cloud_url.rstrip("/") + RECORDS_PATH,
            params={"name": name},
            timeout=_TIMEOUT_SECONDS,
        )
        listed = answer.json().get("records", []) if answer.status_code == 200 else []
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    return next(
        (str(item["value"]) for item in listed if item.get("type") in ("ALIAS", "ANAME")), None
    )


def destination(nameserver: tuple[str, int], sandbox_cloud_url: str, hostname: str) -> str | None:
    """The DNS name of the load balancer or distribution `hostname` leads to (blocking)."""
    name = hostname.rstrip(".").lower()
    for _ in range(_HOPS):
        final = _followed(nameserver, name)
        if final is None:
            return None
        if final.endswith(_AWS_SUFFIXES):
            return final
        target = _alias_of(sandbox_cloud_url, final)
        if target is None:
            return None
        name = target
    return None
