"""Small helpers for boto3 calls: reading an error's code, tolerating the expected ones, reading
a time an answer gives."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

from botocore.exceptions import ClientError


def error_code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


@contextmanager
def ignoring(*codes: str) -> Iterator[None]:
    """Swallow a `ClientError` whose code is one of `codes` (e.g. "already gone" on delete)."""
    try:
        yield
    except ClientError as error:
        if error_code(error) not in codes:
            raise


def utc(moment: datetime) -> datetime:
    """A time from an answer, in UTC when it names no zone (the sandbox's may not)."""
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
