"""How the public DNS answers a name: as a recursive resolver on the internet would.

A name's records come from the first of these that has any:

1. the public DNS's own records (`records`: the customers' DNS providers);
2. the names AWS answers itself: a load balancer's DNS name (`*.elb.amazonaws.com`) and a
   CloudFront distribution's domain name (`*.cloudfront.net`), in whichever sandbox account owns
   it. Each answers an address of its own in the loopback network (A `127.x.y.z`, derived from
   the name; CloudFront, dual-stack by default, also AAAA in `fd00::/8`), so that a record
   pointing at another load balancer answers other addresses, as on the internet, while every
   address stays on this machine, where the dev server's front plays them all
   (`capstan.dev.front`);
3. the public hosted zones of the sandbox's Route 53, in any account, the zone with the longest
   name that contains the name (as if the zone's domain were delegated to it), its alias records
   answering their target's addresses as Route 53 does.

A CNAME is followed, and each link of the chain is in the answer; an ALIAS/ANAME answers A and
AAAA with its target's addresses under its own name, as DNS providers flatten it. A chain longer
than `MAX_CHAIN` (a loop) answers SERVFAIL, as resolvers do.
"""

from __future__ import annotations

import hashlib
import ipaddress
from dataclasses import dataclass, field
from typing import Any

from moto.cloudfront.models import cloudfront_backends
from moto.elbv2.models import elbv2_backends
from moto.route53.models import route53_backends

from capstan_sandbox.dns import records

TTL = 60
MAX_CHAIN = 8
NOERROR, SERVFAIL, NXDOMAIN = "NOERROR", "SERVFAIL", "NXDOMAIN"


@dataclass
class Resolution:
    rcode: str = NOERROR
    # (owner name, type, value), in answer order: a CNAME chain's links, then the records.
    answers: list[tuple[str, str, str]] = field(default_factory=list)

    def values(self, record_type: str) -> list[str]:
        return [value for _owner, kind, value in self.answers if kind == record_type]

    @property
    def chain(self) -> list[str]:
        """The names the query went through: the name asked, then each CNAME's target."""
        names = [owner for owner, kind, _value in self.answers if kind == "CNAME"]
        names += [value for _owner, kind, value in self.answers if kind == "CNAME"][-1:]
        return names


def aws_addresses(name: str) -> dict[str, list[str]]:
    """The addresses the sandbox gives an AWS-answered name: A in 127.0.0.0/8, AAAA in fd00::/8,
    stable for the name."""
    digest = hashlib.sha256(_normal(name).encode()).digest()
    ipv4 = f"127.{digest[0]}.{digest[1]}.{1 + digest[2] % 254}"
    ipv6 = str(ipaddress.IPv6Address(b"\xfd" + digest[3:18]))
    return {"A": [ipv4], "AAAA": [ipv6]}


def _normal(name: str) -> str:
    return name.rstrip(".").lower()


def _aws_name(name: str) -> dict[str, list[str]] | None:
    if name.endswith(".elb.amazonaws.com"):
        for by_region in list(elbv2_backends.values()):
            for backend in list(by_region.values()):
                for balancer in list(backend.load_balancers.values()):
                    if _normal(balancer.dns_name) == name:
                        return {"A": aws_addresses(name)["A"]}
    elif name.endswith(".cloudfront.net"):
        for by_partition in list(cloudfront_backends.values()):
            for cloudfront in list(by_partition.values()):
                for distribution in list(cloudfront.distributions.values()):
                    if _normal(distribution.domain_name) == name:
                        return aws_addresses(name)
    return None


def _value(value: Any) -> str:
    return str(value.get("Value", "")) if isinstance(value, dict) else str(value)


def _route53(name: str) -> dict[str, list[str]] | None:
    best: Any = None
    for by_partition in list(route53_backends.values()):
        for backend in list(by_partition.values()):
            for zone in list(backend.zones.values()):
                zone_name = _normal(zone.name)
                if zone.private_zone or not (name == zone_name or name.endswith("." + zone_name)):
                    continue
                if best is None or len(zone_name) > len(_normal(best.name)):
                    best = zone
    if best is None:
        return None
    node: dict[str, list[str]] = {}
    for record in list(best.rrsets):
        if _normal(record.name) != name:
            continue
        target = (record.alias_target or {}).get("DNSName")
        if target:
            node.setdefault("ALIAS", []).append(_normal(target))
        else:
            node.setdefault(str(record.type), []).extend(
                _value(value).strip('"') if record.type == "TXT" else _value(value)
                for value in list(record.records or [])
            )
    return node or None


def node(name: str) -> dict[str, list[str]] | None:
    """The records of `name` by type (ALIAS standing for ALIAS and ANAME), or None if the name
    does not exist."""
    name = _normal(name)
    own = records.at(name)
    if own:
        found: dict[str, list[str]] = {}
        for kind, value in own.items():
            found.setdefault("ALIAS" if kind in records.FLATTENED else kind, []).append(value)
        return found
    return _aws_name(name) or _route53(name)


def resolve(name: str, record_type: str, depth: int = 0) -> Resolution:
    """What a recursive resolver answers for `name` and `record_type` (A, AAAA, CNAME, TXT…)."""
    result = Resolution()
    current = _normal(name)
    for _ in range(MAX_CHAIN - depth):
        found = node(current)
        if found is None:
            result.rcode = NXDOMAIN
            return result
        if record_type in found:
            result.answers += [(current, record_type, value) for value in found[record_type]]
            return result
        if "CNAME" in found:
            target = found["CNAME"][0]
            result.answers.append((current, "CNAME", target))
            current = target
            continue
        if "ALIAS" in found and record_type in ("A", "AAAA"):
            flattened = resolve(found["ALIAS"][0], record_type, depth + 1)
            if flattened.rcode == SERVFAIL:
                result.rcode = SERVFAIL
                return result
            result.answers += [
                (current, record_type, value) for value in flattened.values(record_type)
            ]
        return result
    result.rcode = SERVFAIL
    result.answers = []
    return result
