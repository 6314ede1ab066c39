"""The public DNS's records: `{name, type, value}`, one value per name and type, process-wide
like moto's state (and kept with it, `persistence._KEPT`).

Names are lowercase fully qualified names, kept without the final dot. A CNAME cannot sit beside
any other record of its name (RFC 1034 section 3.6.2: "If a CNAME RR is present at a node, no
other data should be present"), and an ALIAS/ANAME — which DNS providers answer as the A/AAAA
records of its target, flattened — cannot sit beside the A or AAAA records it would stand for,
nor beside the other of the two.
"""

from __future__ import annotations

import ipaddress
import re
import threading
from dataclasses import dataclass

TYPES = ("A", "AAAA", "CNAME", "ALIAS", "ANAME", "TXT")
# Types whose value names another host.
NAMING = frozenset({"CNAME", "ALIAS", "ANAME"})
FLATTENED = frozenset({"ALIAS", "ANAME"})
_LABEL = re.compile(r"^(?!-)[a-z0-9_-]{1,63}(?<!-)$")
# One TXT record of the sandbox holds one character-string (RFC 1035 section 3.3.14).
_TXT_MAX = 255

# (name, type) → value. Filled in place on restore: other modules hold a reference.
_records: dict[tuple[str, str], str] = {}
_lock = threading.Lock()


class RecordError(ValueError):
    """A record the public DNS refuses; `code` is the error's code in the error shape."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Record:
    name: str
    type: str
    value: str

    def as_json(self) -> dict[str, str]:
        return {"name": self.name, "type": self.type, "value": self.value}


def normal_name(name: str) -> str:
    """`name` lowercased without its final dot; RecordError unless it is a DNS name."""
    if not isinstance(name, str):
        raise RecordError("invalid_request", "name must be a string")
    normal = name.strip().lower().removesuffix(".")
    labels = normal.split(".")
    if len(normal) > 253 or len(labels) < 2 or not all(_LABEL.match(label) for label in labels):
        raise RecordError(
            "invalid_request",
            f"name {name!r} is not a fully qualified DNS name (like www.example.com)",
        )
    return normal


def normal_type(record_type: str) -> str:
    if not isinstance(record_type, str) or record_type.strip().upper() not in TYPES:
        raise RecordError("invalid_request", f"type must be one of {', '.join(TYPES)}")
    return record_type.strip().upper()


def _normal_value(record_type: str, value: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise RecordError("invalid_request", "value must be a non-empty string")
    value = value.strip()
    if record_type in ("A", "AAAA"):
        version = 4 if record_type == "A" else 6
        try:
            address = ipaddress.ip_address(value)
        except ValueError:
            address = None
        if address is None or address.version != version:
            raise RecordError(
                "invalid_request",
                f"value of an {record_type} record must be an IPv{version} address",
            )
        return str(address)
    if record_type in NAMING:
        try:
            return normal_name(value)
        except RecordError:
            raise RecordError(
                "invalid_request", f"value of a {record_type} record must be a DNS name"
            ) from None
    if len(value.encode()) > _TXT_MAX or not value.isprintable():
        raise RecordError(
            "invalid_request",
            f"value of a TXT record must be printable text of at most {_TXT_MAX} bytes",
        )
    return value


def _conflict(name: str, record_type: str) -> str | None:
    """Why a `record_type` record cannot join the records `name` has (None: it can)."""
    others = {kind for (at_name, kind) in _records if at_name == name and kind != record_type}
    if record_type == "CNAME" and others:
        return (
            f"{name} already has {', '.join(sorted(others))} records: a CNAME cannot sit beside "
            "other records of its name (RFC 1034 section 3.6.2)"
        )
    if "CNAME" in others:
        return (
            f"{name} already has a CNAME record: no other record can sit beside it "
            "(RFC 1034 section 3.6.2)"
        )
    addresses = {"A", "AAAA", *FLATTENED}
    if (record_type in FLATTENED and others & addresses) or (
        record_type in addresses and others & FLATTENED
    ):
        return (
            f"{name} cannot have an ALIAS/ANAME record beside A, AAAA or another ALIAS/ANAME "
            "record: the ALIAS answers A and AAAA itself"
        )
    return None


def put(name: str, record_type: str, value: str) -> tuple[Record, bool]:
    """Create or replace the `record_type` record of `name`; (the record, whether created)."""
    name = normal_name(name)
    record_type = normal_type(record_type)
    value = _normal_value(record_type, value)
    with _lock:
        why = _conflict(name, record_type)
        if why is not None:
            raise RecordError("conflict", why)
        created = (name, record_type) not in _records
        _records[(name, record_type)] = value
    return Record(name, record_type, value), created


def delete(name: str, record_type: str) -> bool:
    """Remove the `record_type` record of `name`; False if there was none."""
    key = (normal_name(name), normal_type(record_type))
    with _lock:
        return _records.pop(key, None) is not None


def listing() -> list[Record]:
    with _lock:
        items = sorted(_records.items())
    return [Record(name, kind, value) for (name, kind), value in items]


def at(name: str) -> dict[str, str]:
    """The records of `name` (already normal), by type."""
    with _lock:
        return {kind: value for (at_name, kind), value in _records.items() if at_name == name}


def clear() -> None:
    with _lock:
        _records.clear()
