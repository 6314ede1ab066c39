"""The CLI's pure parts: which followed log lines are new, .env files, --since."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from capstan.client.api import CliError
from capstan.client.env import parse_dotenv
from capstan.client.logs import LogFollower, parse_since
from capstan.client.plan_commands import looks_secret


def _line(second: float, message: str) -> dict[str, str]:
    moment = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=second)
    return {"timestamp": moment.isoformat(), "message": message}


def test_overlapping_reads_print_each_line_once() -> None:
    follower = LogFollower(overlap=timedelta(seconds=5))
    assert follower.fresh([_line(1, "a"), _line(2, "b")]) == [_line(1, "a"), _line(2, "b")]
    assert follower.since(None) == datetime(2026, 1, 1, tzinfo=UTC) - timedelta(seconds=3)
    # The next read overlaps the last: only what is new prints.
    assert follower.fresh([_line(1, "a"), _line(2, "b"), _line(3, "c")]) == [_line(3, "c")]


def test_a_line_stored_late_with_an_earlier_timestamp_is_not_skipped() -> None:
    follower = LogFollower(overlap=timedelta(seconds=5))
    follower.fresh([_line(1, "a"), _line(4, "d")])
    # "b" (at 2 s) reached the store after "d" (at 4 s): within the overlap, it still prints.
    assert follower.fresh([_line(1, "a"), _line(2, "b"), _line(4, "d")]) == [_line(2, "b")]


def test_identical_lines_in_the_same_instant_each_print_once() -> None:
    follower = LogFollower()
    assert len(follower.fresh([_line(1, "GET /"), _line(1, "GET /")])) == 2
    assert follower.fresh([_line(1, "GET /"), _line(1, "GET /"), _line(1, "GET /")]) == [
        _line(1, "GET /")
    ]


def test_dotenv_comments_quotes_and_export() -> None:
    text = (
        "# a comment\n"
        "\n"
        "export LOG_LEVEL=info\n"
        "GREETING='hello # not a comment'\n"
        'MULTI="one\\ntwo"\n'
        "PLAIN=value # a comment\n"
        "EMPTY=\n"
    )
    assert parse_dotenv(text, ".env") == {
        "LOG_LEVEL": "info",
        "GREETING": "hello # not a comment",
        "MULTI": "one\ntwo",
        "PLAIN": "value",
        "EMPTY": "",
    }


@pytest.mark.parametrize("text", ["NO_EQUALS\n", "1BAD=x\n", "OPEN='unclosed\n"])
def test_dotenv_refuses_a_bad_line_naming_it(text: str) -> None:
    with pytest.raises(CliError, match=r"\.env, line 1"):
        parse_dotenv(text, ".env")


def test_since_takes_a_duration_or_a_date_time_with_a_zone() -> None:
    now = datetime(2026, 1, 31, 12, 0, tzinfo=UTC)
    assert parse_since("10m", now=now) == now - timedelta(minutes=10)
    assert parse_since("2h", now=now) == now - timedelta(hours=2)
    assert parse_since("2026-01-31T11:00:00Z", now=now) == now - timedelta(hours=1)
    for bad in ("10 minutes", "2026-01-31T11:00:00", "yesterday"):
        with pytest.raises(CliError, match="--since"):
            parse_since(bad, now=now)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("STRIPE_KEY", "sk_live_1"),
        ("AWS_SECRET_ACCESS_KEY", "x"),
        ("GITHUB_TOKEN", "ghp_1"),
        ("DB_PASSWORD", "hunter2"),
        ("SENTRY_DSN", "https://key@sentry.example/1"),
        ("openaiApiKey", "x"),
        ("OPENAI_APIKEY", "x"),
        ("DATABASE_URL", "postgres://app:hunter2@db.internal/app"),
    ],
)
def test_a_secret_like_variable_is_told_by_its_name_or_a_password_in_its_url(
    name: str, value: str
) -> None:
    assert looks_secret(name, value)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("LOG_LEVEL", "info"),
        ("PORT", "8000"),
        ("PUBLIC_GREETING", "Hello"),
        ("KEYBOARD_LAYOUT", "us"),
        ("REDIS_URL", "redis://cache.internal:6379/0"),
        ("ODD", "http://[unclosed"),
    ],
)
def test_other_variables_are_plain(name: str, value: str) -> None:
    assert not looks_secret(name, value)
