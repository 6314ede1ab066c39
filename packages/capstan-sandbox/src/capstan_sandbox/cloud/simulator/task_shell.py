"""What a one-off task's container does with its command, in the sandbox: a shell's reading of
it for a few builtins, and nothing run on the host.

The command is read as a POSIX shell reads it (`shlex`: quotes, escapes), as commands joined by
`;`, `&&` and `||`. The builtins do what a shell's do: `echo` prints its words, `sleep N` waits N
seconds (the simulator's time, not a blocked thread), `true` and `false` succeed and fail,
`exit N` ends the whole command with N. Any other program prints one line saying it ran and
exits 0, so a release command such as `python manage.py migrate` succeeds with a line to read.

`steps(argv)` answers the steps as the simulator plays them: `Output` lines, `Sleep`s, and one
`Exit` last.
"""

from __future__ import annotations

import shlex
from collections.abc import Generator, Iterator
from dataclasses import dataclass

# A shell's status for a command line it cannot read (bash answers 2 for a syntax error).
SYNTAX_ERROR = 2
_CONNECTORS = (";", "&&", "||")


@dataclass(frozen=True)
class Output:
    line: str


@dataclass(frozen=True)
class Sleep:
    seconds: float


@dataclass(frozen=True)
class Exit:
    code: int


Step = Output | Sleep | Exit


def script_of(argv: list[str]) -> str | None:
    """The shell script a container's argv runs (`sh -c SCRIPT`, `bash -c …`, `/bin/sh -c …`),
    or None when its program is not a shell."""
    shell = argv[:1] and argv[0].rsplit("/", 1)[-1] in ("sh", "bash", "ash", "dash")
    if shell and len(argv) >= 3 and argv[1] == "-c":
        return argv[2]
    return None


def steps(argv: list[str]) -> Iterator[Step]:
    """What the container does with `argv` (its entry point and command), step by step."""
    script = script_of(argv)
    if script is None:
        if not argv:
            yield Exit(0)
            return
        code = yield from _command(argv)
        yield Exit(code)
        return
    yield from run(script)


def run(script: str) -> Iterator[Step]:
    """A shell script's steps: its commands' output and sleeps, then its exit status."""
    try:
        commands = parse(script)
    except ValueError as error:
        yield Output(f"sh: syntax error: {error}")
        yield Exit(SYNTAX_ERROR)
        return
    status = 0
    for connector, words in commands:
        if connector == "&&" and status != 0:
            continue
        if connector == "||" and status == 0:
            continue
        if words[0] == "exit":
            yield Exit(_exit_status(words, status))
            return
        status = yield from _command(words)
    yield Exit(status)


def parse(script: str) -> list[tuple[str, list[str]]]:
    """The script's commands, each with the connector before it (`;` for the first)."""
    lexer = shlex.shlex(script, posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    commands: list[tuple[str, list[str]]] = []
    connector, words = ";", list[str]()
    for token in lexer:
        if token in _CONNECTORS:
            if not words:
                raise ValueError(f"unexpected {token!r}")
            commands.append((connector, words))
            connector, words = token, []
        elif token and set(token) <= set(";&|"):
            raise ValueError(f"{token!r} is not supported")
        else:
            words.append(token)
    if words:
        commands.append((connector, words))
    elif connector != ";":
        raise ValueError(f"nothing after {connector!r}")
    return commands


def _command(words: list[str]) -> Generator[Step, None, int]:
    """One simple command's steps; answers its status."""
    program, arguments = words[0], words[1:]
    if program == "echo":
        yield Output(" ".join(arguments))
        return 0
    if program == "true":
        return 0
    if program == "false":
        return 1
    if program == "sleep":
        try:
            seconds = float(arguments[0]) if len(arguments) == 1 else -1.0
        except ValueError:
            seconds = -1.0
        if seconds < 0:
            yield Output(f"sleep: invalid time interval '{' '.join(arguments)}'")
            return 1
        yield Sleep(seconds)
        return 0
    yield Output(f"{shlex.join(words)}: ran (the sandbox runs no programs)")
    return 0


def _exit_status(words: list[str], last: int) -> int:
    """`exit` ends with its number (modulo 256, as a process status), or the last status."""
    if len(words) < 2:
        return last
    try:
        return int(words[1]) % 256
    except ValueError:
        return SYNTAX_ERROR
