"""Small helpers for boto3 calls: reading an error's code, tolerating the expected ones."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

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
