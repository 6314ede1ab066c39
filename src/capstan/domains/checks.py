"""Whether a domain's routing record points where it should: real DNS queries, through the DNS
server `settings.dns_nameserver` names (the sandbox's public DNS in dev and tests), or the
system's resolver.

A CNAME must name the target exactly. A name without one (an apex, whose provider answers an
ALIAS or ANAME record, or flattens a CNAME, with the target's addresses) passes when its
addresses are the target's. What is found instead is said in a sentence, naming it.
"""

from __future__ import annotations

import dns.asyncresolver
import dns.exception
import dns.rdatatype
import dns.resolver

# Each question gets this long (seconds) before the check says DNS did not answer.
TIMEOUT = 3.0


def _resolver(nameserver: tuple[str, int] | None) -> dns.asyncresolver.Resolver:
    if nameserver is None:
        resolver = dns.asyncresolver.Resolver()
    else:
        resolver = dns.asyncresolver.Resolver(configure=False)
        resolver.nameservers = [nameserver[0]]
        resolver.port = nameserver[1]
    resolver.lifetime = TIMEOUT
    # Always ask: a record the customer just created or fixed must be seen at once.
    resolver.cache = None
    return resolver


def _name(value: str) -> str:
    return value.rstrip(".").lower()


async def _addresses(resolver: dns.asyncresolver.Resolver, name: str) -> set[str]:
    try:
        answer = await resolver.resolve(name, "A", raise_on_no_answer=False)
    except (dns.resolver.NXDOMAIN, dns.resolver.NoNameservers):
        return set()
    return {item.to_text() for item in answer}


async def routing_problem(
    hostname: str, target: str, nameserver: tuple[str, int] | None
) -> str | None:
    """None when `hostname` resolves to `target`; else what was found, in a sentence."""
    resolver = _resolver(nameserver)
    target = _name(target)
    try:
        answer = await resolver.resolve(hostname, "CNAME", raise_on_no_answer=False)
        if answer.rrset is not None:
            found = _name(answer[0].target.to_text())
            if found == target:
                return None
            return f"The CNAME record of {hostname} points to {found}, not to {target}."
        mine = await _addresses(resolver, hostname)
        if not mine:
            return f"No DNS record for {hostname} was found: create its routing record."
        theirs = await _addresses(resolver, target)
        if theirs and mine <= theirs:
            return None  # an ALIAS/ANAME record, or a flattened CNAME, to the target
        listed = ", ".join(sorted(mine))
        return (
            f"{hostname} resolves to {listed}, which is not {target}: its routing record "
            "must point to it."
        )
    except dns.resolver.NXDOMAIN:
        return f"No DNS record for {hostname} was found: create its routing record."
    except (dns.exception.Timeout, dns.resolver.NoNameservers):
        return f"DNS did not answer about {hostname}; Capstan asks again."
