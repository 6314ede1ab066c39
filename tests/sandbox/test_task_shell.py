"""The sandbox's reading of a one-off task's command: a shell's, for its builtins only."""

from __future__ import annotations

import pytest

from capstan_sandbox.cloud.simulator.task_shell import Exit, Output, Sleep, run, steps


def _played(script: str) -> tuple[list[str], int]:
    played = list(run(script))
    last = played[-1]
    assert isinstance(last, Exit)
    return [step.line for step in played if isinstance(step, Output)], last.code


@pytest.mark.parametrize(
    ("script", "lines", "code"),
    [
        ("echo hi; exit 3", ["hi"], 3),
        ("echo hi;exit 3", ["hi"], 3),
        ("true", [], 0),
        ("false", [], 1),
        ("exit", [], 0),
        ("false; exit", [], 1),
        ("exit 300", [], 44),
        ("false && echo no", [], 1),
        ("true && echo yes", ["yes"], 0),
        ("false || echo fallback", ["fallback"], 0),
        ("true || echo no", [], 0),
        ("false && echo no || echo yes", ["yes"], 0),
        ("exit 2; echo never", [], 2),
        ("""echo "a  b" 'c;d' e\\ f""", ["a  b c;d e f"], 0),
        ("echo one # a comment", ["one"], 0),
    ],
)
def test_builtins_and_connectors_behave_as_a_shell(
    script: str, lines: list[str], code: int
) -> None:
    assert _played(script) == (lines, code)


def test_other_programs_say_they_ran_and_succeed() -> None:
    lines, code = _played("python manage.py migrate && echo migrated")
    assert code == 0
    assert lines == ["python manage.py migrate: ran (the sandbox runs no programs)", "migrated"]


def test_sleep_is_a_step_of_the_simulator_time() -> None:
    assert list(run("echo a; sleep 2.5; echo b")) == [
        Output("a"),
        Sleep(2.5),
        Output("b"),
        Exit(0),
    ]
    assert _played("sleep soon") == (["sleep: invalid time interval 'soon'"], 1)


@pytest.mark.parametrize("script", ["echo a &&", "&& echo a", "echo 'open", "ls | wc"])
def test_what_cannot_be_read_is_a_syntax_error(script: str) -> None:
    lines, code = _played(script)
    assert code == 2 and lines[0].startswith("sh: syntax error")


def test_a_container_runs_its_shell_script_or_its_program() -> None:
    assert list(steps(["sh", "-c", "echo hi; exit 4"])) == [Output("hi"), Exit(4)]
    assert list(steps(["/bin/bash", "-c", "false"])) == [Exit(1)]
    assert list(steps(["node", "server.js"])) == [
        Output("node server.js: ran (the sandbox runs no programs)"),
        Exit(0),
    ]
