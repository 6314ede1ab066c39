"""The sandbox cloud's state kept in a directory, so a restarted sandbox finds its cloud again.

A sandbox started with a state directory (`start_sandbox_cloud(state_dir=...)`) loads
`STATE_FILE` from it before it answers a call, and saves it again: a second after a call that
may have changed something (a read named in its URL or target header does not count), every
`IDLE_SAVE_SECONDS` while only the simulator works (its logs, metrics and cost), and when it
stops cleanly. A `kill -9` loses what changed
since the last save. Without a directory nothing is saved or read: the tests' sandboxes stay in
memory, as fast as before.

What is kept: moto's backends (every account, role, zone, record, load balancer, service, log
group, cache and database moto holds, pickled whole as LocalStack persists moto's state), and
the sandbox's own records beside them (`_KEPT`: built images' tools, log streams' clocks,
Cost Explorer's ledger, CloudFront's monitoring subscriptions, Bedrock subscriptions, enabled
regions, held-back accounts, IAM changes still propagating, the public DNS's records). What
cannot be kept is restored from what is: running ECS tasks ended with the process, so
`ecs.tasks_ended` takes them out of their target groups and says so in each service's events, and
the scheduler starts the desired count again; builds that were in progress run again from their
start.

The file begins with a header (`FORMAT`, moto's and Python's versions) read before the state
itself: a file from another format or version, or one that cannot be read, is set aside
(renamed `*.discarded`) with a warning that says why, and the sandbox starts empty.
"""

from __future__ import annotations

import importlib
import io
import logging
import os
import pickle
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any, cast, get_args

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes, PublicKeyTypes
from moto.core.base_backend import BackendDict

from capstan_sandbox.cloud import (
    bedrock_profiles,
    cloudfront,
    iam_propagation,
    new_accounts,
    regions,
)
from capstan_sandbox.cloud.simulator import ecs, images, simulator
from capstan_sandbox.cloud.simulator import logs as sim_logs
from capstan_sandbox.dns import records as public_dns

log = logging.getLogger(__name__)

STATE_FILE = "sandbox-cloud.pickle"
# Raised whenever what is saved changes shape; an older file is then discarded, not misread.
FORMAT = 1
SAVE_AFTER_CHANGE_SECONDS = 1.0
IDLE_SAVE_SECONDS = 15.0
_READS = ("Describe", "Get", "List", "Head", "Search", "Lookup", "Check", "Query")
_ATTEMPTS = 5
# The sandbox's records kept beside moto's backends: module-level dicts and sets, filled in
# place on restore (other modules hold references to them).
_KEPT: dict[str, tuple[Any, str]] = {
    "images": (images, "_images"),
    "log_clocks": (sim_logs, "_last_ms"),
    "cloudfront_monitoring": (cloudfront, "_monitoring"),
    "bedrock_subscriptions": (bedrock_profiles, "_subscribed"),
    "enabled_regions": (regions, "_enabled"),
    "held_back_accounts": (new_accounts, "_held_back"),
    "public_dns": (public_dns, "_records"),
}


def _header() -> dict[str, Any]:
    return {
        "format": FORMAT,
        "moto": version("moto"),
        "python": f"{sys.version_info.major}.{sys.version_info.minor}",
    }


@dataclass(frozen=True)
class Restored:
    """What `load` did, in a sentence for whoever started the sandbox."""

    kept: bool
    message: str
    discarded: bool = False  # a saved state was there and was set aside


class Gate:
    """Requests pass side by side; a save waits for those under way and holds the next ones
    back, so moto's state is pickled between calls, never in the middle of one."""

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._passing = 0
        self._closed = False
        self.changes = 0  # calls that may have changed something since the last save

    @contextmanager
    def request(self, *, changes: bool) -> Iterator[None]:
        with self._condition:
            while self._closed:
                self._condition.wait()
            self._passing += 1
            if changes:
                self.changes += 1
        try:
            yield
        finally:
            with self._condition:
                self._passing -= 1
                self._condition.notify_all()

    @contextmanager
    def closed(self) -> Iterator[None]:
        with self._condition:
            while self._closed:
                self._condition.wait()
            self._closed = True
            while self._passing:
                self._condition.wait()
        try:
            yield
        finally:
            with self._condition:
                self._closed = False
                self._condition.notify_all()


class GateMiddleware:
    """The WSGI app `app` behind `gate`: each request passes it, counted as a change unless its
    operation reads (`_READS`)."""

    def __init__(self, app: Callable[..., Iterable[bytes]], gate: Gate) -> None:
        self._app = app
        self._gate = gate

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        target = str(environ.get("HTTP_X_AMZ_TARGET") or "").rpartition(".")[2]
        query = str(environ.get("QUERY_STRING") or "")
        action = query.partition("Action=")[2].partition("&")[0] if "Action=" in query else ""
        method = str(environ.get("REQUEST_METHOD") or "GET")
        named = target or action
        reads = named.startswith(_READS) if named else method in ("GET", "HEAD")
        with self._gate.request(changes=not reads):
            # moto answers with a list of bytes: the call is over when it returns.
            return list(self._app(environ, start_response))


def _backend_dicts() -> list[BackendDict[Any]]:
    return list(BackendDict._instances)  # type: ignore[misc]


def _key(backends: BackendDict[Any]) -> tuple[str, str, str]:
    return (backends.backend.__module__, backends.backend.__qualname__, backends.service_name)


def _live(key: tuple[str, str, str]) -> BackendDict[Any] | None:
    """This process's BackendDict that `key` names (its module imported if it is not yet)."""
    module_name, qualname, service_name = key
    module = importlib.import_module(module_name)
    for value in vars(module).values():
        if (
            isinstance(value, BackendDict)
            and value.service_name == service_name
            and value.backend.__qualname__ == qualname
        ):
            return value
    return None


def _private_key(der: bytes) -> PrivateKeyTypes:
    return serialization.load_der_private_key(der, password=None)


def _public_key(der: bytes) -> PublicKeyTypes:
    return serialization.load_der_public_key(der)


def _defaultdict(
    kind: type[defaultdict[Any, Any]],
    factory: Callable[[], Any] | None,
    items: dict[Any, Any],
    attributes: dict[str, Any],
) -> defaultdict[Any, Any]:
    """A defaultdict (or a subclass, such as SSM's parameters, whose `__init__` takes other
    arguments) made again without calling its `__init__`."""
    made = defaultdict.__new__(kind)
    made.default_factory = factory
    dict.update(made, items)
    if attributes:
        made.__dict__.update(attributes)
    return made


def _certificate(der: bytes) -> x509.Certificate:
    return x509.load_der_x509_certificate(der)


class _Factory:
    """A defaultdict's factory that pickle can carry: moto makes some with a lambda
    (`defaultdict(lambda: defaultdict(dict))`), which pickle cannot; this one makes the same."""

    def __init__(self, inner: type | _Factory) -> None:
        self.inner = inner

    def __call__(self) -> defaultdict[Any, Any]:
        return defaultdict(self.inner)

    @staticmethod
    def of(factory: Callable[[], Any]) -> type | _Factory:
        """What `factory` makes, described: a type, or a defaultdict of what its factory makes
        (anything else is refused, loudly, by the save)."""
        if isinstance(factory, type | _Factory):
            return factory
        made = factory()
        if isinstance(made, defaultdict) and made.default_factory is not None:
            return _Factory(_Factory.of(made.default_factory))
        raise TypeError(f"cannot keep a defaultdict whose factory makes {type(made).__name__}")


def _local(factory: Any) -> bool:
    return "<lambda>" in getattr(factory, "__qualname__", "") or "<locals>" in getattr(
        factory, "__qualname__", ""
    )


_PRIVATE_KEYS: tuple[type, ...] = get_args(PrivateKeyTypes)
_PUBLIC_KEYS: tuple[type, ...] = get_args(PublicKeyTypes)
_LOCK = type(threading.Lock())
_RLOCK = type(threading.RLock())


class _Pickler(pickle.Pickler):
    """pickle, with what moto's models hold that pickle refuses: cryptography's keys and
    certificates (ACM's, KMS's) travel as DER; defaultdicts made with a lambda get a factory
    pickle can carry, and subclasses are made again without their `__init__`; locks come back
    as new, unheld locks (a save holds the gate, so no call holds one)."""

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, defaultdict):
            factory = obj.default_factory
            if factory is not None and _local(factory):
                factory = _Factory.of(factory)
            if type(obj) is not defaultdict or factory is not obj.default_factory:
                attributes = dict(getattr(obj, "__dict__", {}))
                return _defaultdict, (type(obj), factory, dict(obj), attributes)
        if isinstance(obj, x509.Certificate):
            return _certificate, (obj.public_bytes(serialization.Encoding.DER),)
        if isinstance(obj, _LOCK):
            return threading.Lock, ()
        if isinstance(obj, _RLOCK):
            return threading.RLock, ()
        if isinstance(obj, _PRIVATE_KEYS):
            der = cast("PrivateKeyTypes", obj).private_bytes(
                serialization.Encoding.DER,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
            return _private_key, (der,)
        if isinstance(obj, _PUBLIC_KEYS):
            der = cast("PublicKeyTypes", obj).public_bytes(
                serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
            )
            return _public_key, (der,)
        return NotImplemented


def _snapshot() -> bytes:
    """moto's backends and the sandbox's records, pickled (the caller holds the gate)."""
    for attempt in range(_ATTEMPTS):
        try:
            state = {
                "backends": {_key(found): dict(found) for found in _backend_dicts() if found},
                "kept": {name: getattr(module, attr) for name, (module, attr) in _KEPT.items()},
                "cost": simulator().cost.state(),
                "iam_pending": iam_propagation.pending(),
            }
            buffer = io.BytesIO()
            _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(state)
            return buffer.getvalue()
        except RuntimeError:  # a build's thread changed a dict mid-walk: take it again
            if attempt == _ATTEMPTS - 1:
                raise
            time.sleep(0.01)
    raise AssertionError("unreachable")


def save(path: Path, gate: Gate) -> None:
    """Write the state to `path` atomically (a temporary file renamed over it), owner only."""
    with gate.closed(), simulator().ticking:
        gate.changes = 0
        body = _snapshot()
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        pickle.dump(_header(), handle, protocol=pickle.HIGHEST_PROTOCOL)
        handle.write(body)
        handle.flush()
        os.fsync(handle.fileno())
    temporary.replace(path)


def load(path: Path) -> Restored:
    """Restore the state saved at `path`, if there is one this sandbox can read (before the
    sandbox answers any call)."""
    if not path.exists():
        return Restored(False, f"The sandbox cloud starts empty; its state is kept in {path}.")
    try:
        with path.open("rb") as handle:
            header = pickle.load(handle)  # noqa: S301 - the dev server's own file, owner only
            if header != _header():
                return _discard(
                    path,
                    f"it was saved by another version of the sandbox ({_describe(header)}; this "
                    f"one is {_describe(_header())})",
                )
            state = pickle.load(handle)  # noqa: S301 - as above
        _restore(state)
    except Exception as error:  # whatever an unreadable file raises, the sandbox starts empty
        log.debug("unreadable sandbox state", exc_info=True)
        return _discard(path, f"it could not be read ({type(error).__name__})")
    return Restored(True, f"The sandbox cloud restored its state from {path}.")


def _describe(header: Any) -> str:
    if not isinstance(header, dict):
        return "an unknown format"
    return ", ".join(f"{name} {header.get(name)}" for name in ("format", "moto", "python"))


def _discard(path: Path, why: str) -> Restored:
    aside = path.with_name(path.name + ".discarded")
    path.replace(aside)
    message = (
        f"The sandbox cloud's saved state was set aside as {aside} because {why}; the sandbox "
        "starts empty."
    )
    log.warning("%s", message)
    return Restored(False, message, discarded=True)


def _restore(state: dict[str, Any]) -> None:
    for key, saved in state["backends"].items():
        live = _live(key)
        if live is None:
            continue
        dict.clear(live)
        dict.update(live, saved)
        if live not in BackendDict._instances:  # type: ignore[misc]
            BackendDict._instances.append(live)  # type: ignore[misc]
    for name, (module, attr) in _KEPT.items():
        if name in state["kept"]:
            kept = getattr(module, attr)
            kept.clear()
            kept.update(state["kept"][name])
    simulator().cost.restore(state["cost"])
    iam_propagation.resume(state["iam_pending"])
    ecs.tasks_ended("the sandbox cloud restarted")


class Keeper:
    """Saves the state to `path` a moment after a change, now and then while idle, and at
    `stop()`."""

    def __init__(self, path: Path, gate: Gate) -> None:
        self.path = path
        self._gate = gate
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sandbox-keeper", daemon=True)
        self._last = time.monotonic()

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(SAVE_AFTER_CHANGE_SECONDS):
            idle = time.monotonic() - self._last >= IDLE_SAVE_SECONDS
            if self._gate.changes or idle:
                self._save()

    def _save(self) -> None:
        try:
            save(self.path, self._gate)
        except Exception:  # a failed save must not end the sandbox; the next one may succeed
            log.exception("the sandbox cloud could not save its state to %s", self.path)
        self._last = time.monotonic()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        self._save()
