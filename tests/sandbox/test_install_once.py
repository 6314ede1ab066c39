"""The sandbox's extensions are installed once per process, however often a sandbox starts: a
second `install_extensions()` changes no moto class. Before, an extension whose method another
extension wrapped afterwards did not know it was installed and wrapped it again — harmless while
its checks only read, a deadlock once one of them held a lock (CI met it: `CreateRule` under the
rule quota's lock, wrapped twice, waited for itself)."""

from __future__ import annotations

import sys
from typing import Any

from capstan_sandbox.cloud.server import install_extensions


def _moto_classes() -> dict[tuple[str, str], dict[str, Any]]:
    classes: dict[tuple[str, str], dict[str, Any]] = {}
    for name, module in list(sys.modules.items()):
        if not name.startswith("moto.") or module is None:
            continue
        for value in list(vars(module).values()):
            if isinstance(value, type) and value.__module__ == name:
                classes[(name, value.__qualname__)] = _behaviour(value)
    return classes


def _behaviour(cls: type) -> dict[str, Any]:
    """A class's methods and descriptors, which an extension wraps; not its data, which moto's
    classes change as they work (`LogEvent._event_id` counts the events another test's sandbox
    writes meanwhile)."""
    return {name: value for name, value in vars(cls).items() if hasattr(value, "__get__")}


def test_a_second_install_changes_no_moto_class() -> None:
    install_extensions()
    before = _moto_classes()
    install_extensions()
    after = _moto_classes()
    changed = sorted(
        f"{module}.{cls}.{attribute}"
        for (module, cls), attributes in before.items()
        for attribute, value in attributes.items()
        if after.get((module, cls), {}).get(attribute) is not value
    )
    assert changed == []
