"""`make check`: requirements.lock still answers what the two pyproject.toml files ask.

A dependency added or narrowed without `make lock` would install untested versions on a fresh
machine; this names it instead. Capstan's own two distributions are not in the lock.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
OWN = {"capstan-cloud", "capstan-sandbox"}


def pinned(lock: Path) -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in lock.read_text().splitlines():
        match = re.match(r"^([A-Za-z0-9_.\-]+)==(\S+)", line)
        if match:
            pins[canonicalize_name(match.group(1))] = match.group(2)
    return pins


def asked(pyproject: Path) -> list[Requirement]:
    project = tomllib.loads(pyproject.read_text())["project"]
    lines = list(project.get("dependencies", []))
    for extra in project.get("optional-dependencies", {}).values():
        lines.extend(extra)
    return [Requirement(line) for line in lines]


def main() -> int:
    pins = pinned(ROOT / "requirements.lock")
    problems = []
    for pyproject in (ROOT / "pyproject.toml", ROOT / "packages/capstan-sandbox/pyproject.toml"):
        for requirement in asked(pyproject):
            name = canonicalize_name(requirement.name)
            if name in OWN:
                continue
            version = pins.get(name)
            if version is None:
                problems.append(f"{pyproject.relative_to(ROOT)}: {requirement} is not locked")
            elif not requirement.specifier.contains(version, prereleases=True):
                problems.append(
                    f"{pyproject.relative_to(ROOT)}: {requirement} but the lock has {version}"
                )
    for problem in problems:
        print(problem)
    if problems:
        print("requirements.lock is out of date: run `make lock`")
        return 1
    print(f"requirements.lock answers every dependency ({len(pins)} pinned)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
