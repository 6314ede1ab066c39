"""Looks asked at once from many threads are made as one call; one asker alone is answered by
one call with its key; an error reaches every asker of the call that met it; and passes looking
at their builds in the sandbox at the same moment share BatchGetBuilds calls."""

from __future__ import annotations

import threading
from collections.abc import Mapping

import pytest

from capstan.cloud.aws import codebuild
from capstan.cloud.aws.coalesce import Coalescer


class Gate:
    """A fetch that holds its first call until released, recording every call's keys."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.entered = threading.Event()
        self.release = threading.Event()

    def __call__(self, keys: list[str]) -> Mapping[str, str]:
        self.calls.append(list(keys))
        self.entered.set()
        self.release.wait(timeout=10)
        return {key: key.upper() for key in keys if key != "missing"}


def test_askers_waiting_on_a_call_share_the_next_one() -> None:
    gate = Gate()
    looks: Coalescer[str, str] = Coalescer(gate, limit=100)
    answers: dict[str, str | None] = {}

    def ask(key: str) -> None:
        answers[key] = looks.get(key)

    first = threading.Thread(target=ask, args=("a",))
    first.start()
    assert gate.entered.wait(timeout=10)  # "a" is being looked at
    others = [threading.Thread(target=ask, args=(key,)) for key in ("b", "c", "d", "missing")]
    for thread in others:
        thread.start()
    while len(looks._pending) < 4:  # all four queued behind "a"
        threading.Event().wait(0.01)
    gate.release.set()
    for thread in [first, *others]:
        thread.join(timeout=10)
    assert gate.calls[0] == ["a"]
    assert len(gate.calls) == 2 and sorted(gate.calls[1]) == ["b", "c", "d", "missing"]
    assert answers == {"a": "A", "b": "B", "c": "C", "d": "D", "missing": None}


def test_one_asker_is_answered_by_one_call_of_its_key() -> None:
    gate = Gate()
    gate.release.set()
    looks: Coalescer[str, str] = Coalescer(gate)
    assert looks.get("x") == "X"
    assert looks.get("x") == "X"
    assert gate.calls == [["x"], ["x"]]  # nothing is kept: every look asks again


def test_at_most_limit_keys_a_call() -> None:
    gate = Gate()
    looks: Coalescer[str, str] = Coalescer(gate, limit=2)
    threads = [threading.Thread(target=looks.get, args=(key,)) for key in "pqrst"]
    threads[0].start()
    assert gate.entered.wait(timeout=10)
    for thread in threads[1:]:
        thread.start()
    while len(looks._pending) < 4:
        threading.Event().wait(0.01)
    gate.release.set()
    for thread in threads:
        thread.join(timeout=10)
    assert sorted(len(keys) for keys in gate.calls) == [1, 2, 2]


def test_an_error_reaches_every_asker_of_its_call() -> None:
    def fail(keys: list[str]) -> Mapping[str, str]:
        raise RuntimeError(f"refused {sorted(keys)}")

    looks: Coalescer[str, str] = Coalescer(fail)
    with pytest.raises(RuntimeError, match="refused"):
        looks.get("a")
    with pytest.raises(RuntimeError):  # and the coalescer is free for the next call
        looks.get("b")


def test_builds_looked_at_together_share_batch_get_builds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Through `describe_build`: askers behind a call in flight are answered by one more."""
    calls: list[list[str]] = []
    gate = threading.Event()
    entered = threading.Event()

    class Client:
        def batch_get_builds(self, ids: list[str]) -> dict[str, object]:
            calls.append(list(ids))
            entered.set()
            gate.wait(timeout=10)
            return {"builds": [{"id": build_id, "buildStatus": "IN_PROGRESS"} for build_id in ids]}

    class Session:
        pass

    session = Session()
    monkeypatch.setattr(codebuild, "_client", lambda _session: Client())
    found: dict[str, str] = {}

    def look(build_id: str) -> None:
        info = codebuild.describe_build(session, build_id)  # type: ignore[arg-type]
        assert info is not None
        found[build_id] = info.status

    threads = [threading.Thread(target=look, args=(f"p:{n}",)) for n in range(8)]
    threads[0].start()
    assert entered.wait(timeout=10)
    for thread in threads[1:]:
        thread.start()
    looks = codebuild._build_looks(session)  # type: ignore[arg-type]
    while len(looks._pending) < 7:
        threading.Event().wait(0.01)
    gate.set()
    for thread in threads:
        thread.join(timeout=10)
    assert len(calls) == 2 and len(calls[1]) == 7
    assert found == {f"p:{n}": "IN_PROGRESS" for n in range(8)}
