"""Work moto does for every answer, or every new account, that no answer reads: left undone.

Sampling profiles of `make test` (py-spy, `--gil`, 2026-11-28) had the sandbox answering AWS
calls in 40 % of a worker's samples, and four pieces of moto's (5.2.5) own work in a third of
those, none of which changes an answer Capstan or a test can see:

- **Stock AMIs**: EC2's first call in each account and region loads moto's catalogue of public
  machine images (~0.8 s here, 7 % of the samples: each test's organization is a new account).
  Capstan runs its tasks on Fargate and never asks EC2 for an image; the sandbox's EC2 has no
  stock images (`DescribeImages` answers only images made in the account), through moto's own
  switch for it (`MOTO_EC2_LOAD_DEFAULT_AMIS`'s setting, for this process only).
- **CloudFormation templates**: moto parses a stack's template with PyYAML's pure-Python loader
  first, JSON included (the access role's stack: 5.5 %). A stack's template that is JSON is
  parsed as JSON — what the YAML loader makes of Capstan's templates (JSON's strings are quoted
  scalars in YAML, never read as dates or booleans); anything else goes to moto's parser.
- **Which service a host names**: for each call moto lists its own package's directory (a
  `listdir` and an `isdir` for each of its ~180 entries) to ask whether the request's host is a
  service's name (2 %). The package does not change while the process runs: listed once.
- **Is it an action**: before each call moto lists every function of the service's response
  class (`inspect.getmembers`: 0.08 ms for CloudFormation, 0.75 ms for EC2) to ask whether the
  action is one (2.6 %). It is asked of the one name instead (`_Actions`), with the same answer.

`install()` does all four (once per process).
"""

from __future__ import annotations

import inspect
import json
import threading
from collections.abc import Callable
from typing import Any

import moto.backends
import moto.core.responses
import moto.settings
from moto.cloudformation.models import Stack

_MARK = "_capstan_moto_work"
_install_lock = threading.Lock()


class _Actions:
    """The functions of a response class, asked one name at a time: `action in` it is what
    `action in moto.core.utils.method_names_from_class(cls)` answers."""

    def __init__(self, cls: type) -> None:
        self._cls = cls

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and inspect.isfunction(getattr(self._cls, name, None))


def parsed_template(template: str, parse: Callable[[str], dict[str, Any]]) -> dict[str, Any]:
    """`template` parsed: as JSON when it is a JSON object, else by moto's `parse`."""
    if template.lstrip().startswith("{"):
        try:
            found = json.loads(template)
        except ValueError:
            pass  # not JSON after all: YAML's flow mappings start with "{" too
        else:
            if isinstance(found, dict):
                return found
    return parse(template)


def install() -> None:
    with _install_lock:
        if getattr(Stack.parse_template, _MARK, False):
            return
        moto.settings.ec2_load_default_amis = lambda: False
        setattr(moto.core.responses, "method_names_from_class", _Actions)  # noqa: B010 - not exported
        modules = tuple(moto.backends.list_of_moto_modules())
        moto.backends.list_of_moto_modules = lambda: modules

        parse = Stack.parse_template

        def parse_template(template: str) -> dict[str, Any]:
            return parsed_template(template, parse)

        setattr(parse_template, _MARK, True)
        Stack.parse_template = staticmethod(parse_template)  # type: ignore[method-assign]
