"""A bearer read on PostgreSQL in one round trip: the token's look-up joined into the read.

`bearer_read` checks a token and then runs the read: two statements, and on PostgreSQL two
round trips to the server, each costing the API process more CPU (the driver's protocol, the
event loop's wake-ups) than the statement costs the server. `TokenReads` runs the read's own
statement for the token instead, as one:

    SELECT shown.* FROM api_tokens AS token
    JOIN LATERAL (<the read, its :organization_id the token's organization>) AS shown ON true
    WHERE token.secret_hash = :secret_hash

so a revoked token still fails at once (its row is read in the same statement as the answer),
and the read's rows are the same columns of the same types as its own statement's: rendered,
and kept, the same way.

The read is given `PENDING`, a caller whose organization is that marker: every statement it
runs must take the caller's organization as the bound parameter `organization_id` (the hot
reads all do), and it may use the caller for nothing else. No row is ambiguous — the token is
not valid, or the read found nothing — and raises `NothingRead`: the caller then reads the
token and the read as two statements, which tell the two apart and answer as always.

SQLite has no LATERAL and no round trip to save (its reads run in the process): it keeps the
two statements.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

from sqlalchemy import ColumnElement, Select, bindparam, select, true
from sqlalchemy.sql.elements import BindParameter
from sqlalchemy.sql.visitors import replacement_traverse

from capstan.auth.models import ApiToken
from capstan.auth.principal import Principal
from capstan.db_kept import order_keys
from capstan.db_reads import DriverReads, Render, Row

ORGANIZATION = "organization_id"
# The caller of a read run by `TokenReads`: its organization is the token's, read with the
# answer. NUL cannot be in a PostgreSQL text value, so were the marker ever sent as a value the
# statement would fail, not match a row.
PENDING = Principal(organization_id="\x00token", user_id=None, via="token")


class NothingRead(Exception):
    """The joined statement found no row: a token not valid, or a read that found nothing."""


class TokenReads:
    """`Reads` that run each statement for the token whose hash is `secret_hash`."""

    def __init__(self, reads: DriverReads, secret_hash: str) -> None:
        self.reads = reads
        self.secret_hash = secret_hash

    async def first(self, statement: Select[Any], params: Mapping[str, Any]) -> Row | None:
        return (await self.all(statement, params))[0]

    async def all(self, statement: Select[Any], params: Mapping[str, Any]) -> list[Row]:
        rows = await self.reads.all(*self._for_token(statement, params))
        if not rows:
            raise NothingRead()
        return rows

    async def rendered(
        self, statement: Select[Any], params: Mapping[str, Any], render: Render
    ) -> list[bytes]:
        bodies = await self.reads.rendered(*self._for_token(statement, params), render)
        if not bodies:
            raise NothingRead()
        return bodies

    def _for_token(
        self, statement: Select[Any], params: Mapping[str, Any]
    ) -> tuple[Select[Any], dict[str, Any]]:
        if params.get(ORGANIZATION) != PENDING.organization_id:
            raise ValueError(f"a read for a token takes the caller's {ORGANIZATION}")
        values = {name: value for name, value in params.items() if name != ORGANIZATION}
        values["secret_hash"] = self.secret_hash
        return for_token(statement), values


@cache  # by the statement itself (a statement hashes by identity); the hot reads' are constants
def for_token(statement: Select[Any]) -> Select[Any]:
    """`statement` run for the token of `:secret_hash` (see the module's docstring), its rows in
    its own order. Built once per statement."""
    token = ApiToken.__table__.alias("token")
    replaced = []

    def organization(element: Any) -> ColumnElement[Any] | None:
        if isinstance(element, BindParameter) and element.key == ORGANIZATION:
            replaced.append(element)
            return token.c.organization_id
        return None

    inner: Select[Any] = replacement_traverse(statement, {}, organization)  # type: ignore[call-overload]
    if not replaced:
        raise ValueError(f"a read for a token takes the caller's {ORGANIZATION}")
    shown = inner.lateral("shown")
    joined = (
        select(*shown.c)
        .select_from(token.join(shown, true()))
        .where(token.c.secret_hash == bindparam("secret_hash"))
        .order_by(*(shown.c[key] for key in order_keys(statement)))
    )
    return joined
