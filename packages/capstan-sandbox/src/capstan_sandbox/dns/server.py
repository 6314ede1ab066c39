"""The public DNS on the wire: a UDP server answering DNS queries (RFC 1035 messages, read and
written by dnspython) from `resolver`, as a recursive resolver would (RA set, AA not).

It answers class IN only (REFUSED otherwise), one question per message (FORMERR otherwise, as
RFC 9619 says), and a message it cannot parse with FORMERR when it can read the header's id, or
not at all. Answers carry no EDNS and are small, so UDP is enough (TCP is not served).
"""

from __future__ import annotations

import logging
import socket
import threading

import dns.exception
import dns.flags
import dns.message
import dns.name
import dns.opcode
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.rrset

from capstan_sandbox.dns import resolver

log = logging.getLogger(__name__)
_MAX_MESSAGE = 4096


def _text(record_type: str, value: str) -> str:
    if record_type in ("CNAME",):
        return value.rstrip(".") + "."
    if record_type == "TXT":
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return value


def _header_only(wire: bytes, rcode: int) -> bytes | None:
    """A response of the header alone: the query's id and opcode, QR set, `rcode`."""
    if len(wire) < 12:
        return None
    return wire[:2] + bytes([0x80 | (wire[2] & 0x78), 0x80 | rcode]) + bytes(8)


def answer(wire: bytes) -> bytes | None:
    """The response to the query `wire`, or None when nothing can be answered to it."""
    try:
        query = dns.message.from_wire(wire)
    except dns.exception.DNSException:
        return _header_only(wire, dns.rcode.FORMERR)
    response = dns.message.make_response(query)
    response.flags |= dns.flags.RA
    if query.opcode() != dns.opcode.QUERY:
        response.set_rcode(dns.rcode.NOTIMP)
        return response.to_wire()
    if len(query.question) != 1:
        response.set_rcode(dns.rcode.FORMERR)
        return response.to_wire()
    question = query.question[0]
    if question.rdclass != dns.rdataclass.IN:
        response.set_rcode(dns.rcode.REFUSED)
        return response.to_wire()
    record_type = dns.rdatatype.to_text(question.rdtype)
    found = resolver.resolve(question.name.to_text(), record_type)
    response.set_rcode(dns.rcode.from_text(found.rcode))
    for owner, kind, value in found.answers:
        response.answer.append(
            dns.rrset.from_text(owner + ".", resolver.TTL, "IN", kind, _text(kind, value))
        )
    return response.to_wire()


class PublicDnsServer:
    """The public DNS on a UDP port of `host` (a free one unless `port` is given), answered on a
    thread of its own until `stop()`."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._socket = socket.socket(
            socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_DGRAM
        )
        self._socket.bind((host, port))
        # A blocked recvfrom does not see the socket closed: look at `_stopped` now and then.
        self._socket.settimeout(0.5)
        self.host, self.port = self._socket.getsockname()[:2]
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="sandbox-public-dns", daemon=True)
        self._thread.start()

    @property
    def nameserver(self) -> str:
        """ "host:port", as Capstan's `dns_nameserver` setting takes it."""
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    def _serve(self) -> None:
        while not self._stopped.is_set():
            try:
                wire, client = self._socket.recvfrom(_MAX_MESSAGE)
            except TimeoutError:
                continue
            except OSError:
                return  # closed by stop()
            try:
                response = answer(wire)
            except Exception:  # a bug must not end the server: SERVFAIL, and say why in the log
                log.exception("the public DNS failed to answer a query")
                response = _header_only(wire, dns.rcode.SERVFAIL)
            if response is not None:
                try:
                    self._socket.sendto(response, client)
                except OSError:
                    return

    def stop(self) -> None:
        self._stopped.set()
        self._socket.close()
        self._thread.join(timeout=2)
