"""Reading a capstan.yaml for `capstan plan` and `capstan apply`: YAML with bounds (size, depth,
values once aliases are expanded) that no file can make hang or fail with a traceback, and each
`{from_env: NAME}` filled from the shell (a secret is never written in the file)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

from capstan.client.api import CliError

SERVICE_SECTIONS = ("web_servers", "workers", "static_websites")

# A capstan.yaml is read with bounds far above any real file, so that no file can make the CLI
# hang or fail with a traceback: its size (the server's own limit on a body), how deep it
# nests, and how many values it holds once its aliases are expanded (what is sent; a document
# at the server's bounds, 300 services of 200 variables, holds about 250,000).
MAX_FILE_BYTES = 4 * 1024 * 1024
MAX_DEPTH = 32
MAX_VALUES = 300_000


class _Refused(yaml.MarkedYAMLError):
    def __init__(self, problem: str, mark: Any) -> None:
        super().__init__(problem=problem, problem_mark=mark)


def _events(text: str) -> Any:
    """A source of the YAML parser's events (only those are read from it): libyaml's parser (C,
    bundled with PyYAML's wheels) when there is one, else PyYAML's own in Python (slower, as
    bounded)."""
    if yaml.__with_libyaml__:
        return yaml.CSafeLoader(text)
    return yaml.SafeLoader(text)


class BoundedLoader(Composer, SafeConstructor, Resolver):
    """PyYAML's safe loading, whose composer refuses, as it builds the document's nodes, one
    nested deeper than MAX_DEPTH, an alias to a value that contains it, or a document holding
    more than MAX_VALUES values with its aliases expanded (a "billion laughs" file of a few
    hundred bytes expands to a billion): the count grows with each node or alias read, so the
    work done before a refusal is bounded too."""

    def __init__(self, stream: str) -> None:
        self._parser = _events(stream)
        Composer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)
        self._depth = 0
        self._expanded = 0  # values read so far, aliases expanded
        self._values: dict[int, int] = {}  # id(node) -> its values, aliases expanded

    def check_event(self, *choices: Any) -> bool:
        return bool(self._parser.check_event(*choices))

    def peek_event(self) -> Any:
        return self._parser.peek_event()

    def get_event(self) -> Any:
        return self._parser.get_event()

    def dispose(self) -> None:
        self._parser.dispose()

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            anchored = self.anchors.get(event.anchor)
            if anchored is not None and id(anchored) not in self._values:
                raise _Refused(
                    f"the alias *{event.anchor} refers to a value that contains it",
                    event.start_mark,
                )
            self._count(self._values.get(id(anchored), 0), event)
            return super().compose_node(parent, index)
        if self._depth >= MAX_DEPTH:
            raise _Refused(f"values nest deeper than {MAX_DEPTH} levels", event.start_mark)
        self._count(1, event)
        self._depth += 1
        node = super().compose_node(parent, index)
        self._depth -= 1
        assert node is not None  # the stubs allow None; PyYAML always answers a node
        self._values[id(node)] = 1 + sum(self._values[id(child)] for child in _children(node))
        return node

    def _count(self, values: int, event: Any) -> None:
        self._expanded += values
        if self._expanded > MAX_VALUES:
            raise _Refused(
                f"the file holds more than {MAX_VALUES:,} values once its aliases are expanded",
                event.start_mark,
            )


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def read_file(path: Path) -> dict[str, Any]:
    """The file as a mapping; refuses what is not YAML, not a mapping, over the bounds above,
    or holds a secret."""
    try:
        with path.open("rb") as file:
            data = file.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise CliError(
            f"{path}: no such file (`capstan init` writes one from a project)."
        ) from None
    except OSError as error:
        raise CliError(f"{path}: {error.strerror or error}") from None
    if len(data) > MAX_FILE_BYTES:
        raise CliError(f"{path}: the file is larger than {MAX_FILE_BYTES // (1024 * 1024)} MB.")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise CliError(f"{path}: not UTF-8 text (byte {error.start + 1}).") from None
    try:
        loader = BoundedLoader(text)
        try:
            document = loader.get_single_data()
        finally:
            loader.dispose()
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        problem = getattr(error, "problem", None) or "not valid YAML"
        raise CliError(f"{path}:{where}: {problem}") from None
    if document is None:
        return {}
    if not isinstance(document, dict):
        raise CliError(f"{path}: the file must be a mapping (web_servers:, workers:, ...).")
    for where, variable in _secrets(document):
        if "value" in variable:
            raise CliError(
                f"{path}: {where} writes a value beside from_env; a secret is never written in "
                "the file (it is read from the shell)."
            )
    return document


def _secrets(document: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Every `{from_env: NAME}` of the file, with where it is."""
    found = []
    for section in SERVICE_SECTIONS:
        services = document.get(section)
        if not isinstance(services, dict):
            continue
        for name, spec in services.items():
            environment = spec.get("environment") if isinstance(spec, dict) else None
            if not isinstance(environment, dict):
                continue
            for variable, value in environment.items():
                if isinstance(value, dict) and "from_env" in value:
                    found.append((f"{section}.{name}.environment.{variable}", value))
    return found


def fill_secrets(document: dict[str, Any], *, required: bool) -> list[str]:
    """Give each `{from_env: NAME}` the shell's value of NAME. Answers the names the shell does
    not set; with `required`, refuses them all at once (then nothing is sent)."""
    missing = []
    for where, variable in _secrets(document):
        name = variable["from_env"]
        value = os.environ.get(str(name))
        if value is None:
            missing.append(f"{name} ({where})")
        else:
            variable["value"] = value
    if missing and required:
        raise CliError(
            f"Not set in this shell: {', '.join(missing)}. Export the variable(s) and run apply "
            "again; nothing was applied."
        )
    return missing
