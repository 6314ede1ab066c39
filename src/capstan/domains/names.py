"""Which hostnames a customer may attach: a DNS name of their own, never an address and never a
name under Capstan's service domain (those are Capstan's to give out)."""

from __future__ import annotations

import ipaddress
import re

from capstan.errors import BadRequest

# A label: letters, digits and hyphens, 1 to 63 characters, no hyphen at either end (RFC 1123).
_LABEL = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
# A certificate's domain name (its Common Name) holds at most 64 characters (RFC 5280), and ACM
# puts the hostname there.
MAX_CHARS = 64


class InvalidHostname(BadRequest):
    code = "invalid_hostname"


def is_apex(hostname: str) -> bool:
    """A name of two labels (`example.com`) is taken for a zone's apex, where DNS allows no
    CNAME: its routing record is an ALIAS (ANAME, or a flattened CNAME) instead. A longer
    registered domain (`example.co.uk`) is not recognised; its provider's CNAME refusal
    tells the customer to use their ALIAS record."""
    return hostname.count(".") == 1


def checked(hostname: str, service_domain: str) -> str:
    """`hostname` lowercased, without the root's dot, or 400 saying what is wrong with it."""
    name = hostname.strip().lower()
    name = name[:-1] if name.endswith(".") else name
    try:
        ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        pass
    else:
        raise InvalidHostname(f"{hostname!r} is an IP address; a domain needs a DNS name.")
    labels = name.split(".")
    if len(labels) < 2 or not all(_LABEL.match(label) for label in labels):
        raise InvalidHostname(
            f"{hostname!r} is not a valid DNS name: labels of letters, digits and hyphens "
            "(not at either end), separated by dots, such as www.example.com."
        )
    if labels[-1].isdigit():
        raise InvalidHostname(f"{hostname!r} is not a valid DNS name: its last label is a number.")
    if len(name) > MAX_CHARS:
        raise InvalidHostname(
            f"{hostname!r} is longer than {MAX_CHARS} characters, the most a certificate's "
            "domain name holds."
        )
    own = service_domain.rstrip(".").lower()
    if name == own or name.endswith("." + own):
        raise InvalidHostname(
            f"{hostname!r} is under Capstan's service domain {own}; "
            "services already have their hostnames there."
        )
    return name
