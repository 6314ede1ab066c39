"""Tests import no other test module: what several test modules share lives in a helper module
or a conftest fixture, so that running one file never collects, or depends on, another's tests."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def imported_test_modules(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.module:
            modules = [node.module]
        elif isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        else:
            continue
        found += [
            m
            for m in modules
            if m.startswith("tests.") and m.rsplit(".", 1)[-1].startswith("test_")
        ]
    return found


def test_no_test_module_imports_another() -> None:
    offenders = {
        str(path.relative_to(TESTS)): modules
        for path in sorted(TESTS.rglob("*.py"))
        if (modules := imported_test_modules(path))
    }
    assert offenders == {}
