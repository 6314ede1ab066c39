"""An ECS task definition's size, counted as the sandbox counts it against ECS's limit: 65,536
bytes, beyond which `RegisterTaskDefinition` is refused (`ClientException`, "Actual length: 'N'.
Max allowed length is '65536' bytes."). The definition as compact JSON, its tags left out, each
character beyond ASCII written as its escape (`capstan_sandbox.cloud.limits.task_definition_bytes`
says why that is the conservative reading).

The API bounds what a service puts into its definition (`apps/schemas.py`: the variables, their
names, the variables that reference a database, the start command) so that the largest definition
Capstan builds keeps a margin below the limit; `tests/cloud/test_task_definition_size.py` builds
it from the API's maxima.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from capstan.cloud.aws import ecs

TASK_DEFINITION_BYTES = 65_536


def definition_bytes(definition: Mapping[str, Any]) -> int:
    """A task definition's size as counted against the limit (give it without its tags)."""
    return len(json.dumps(definition, separators=(",", ":")).encode())


def start_command_bytes(command: str) -> int:
    """The bytes a start command adds to its container's definition: `,"entryPoint":[…],
    "command":[…]` as `ecs.start_command` splits it. A quote, a backslash, a tab or a newline
    takes 2 bytes, any other control character or a character beyond ASCII 6 (12 beyond the
    BMP), and a command run without a shell 3 more a word."""
    entry_point, words = ecs.start_command(command)
    return definition_bytes({"entryPoint": entry_point, "command": words}) - 1
