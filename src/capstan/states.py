"""State machines as data: a table of allowed moves per model, and the one way to move a row.

A kind declares its table once, next to its model or service:

    STATES = StateMachine(Cache, [
        (None, "create", CREATING),
        (CREATING, "created", AVAILABLE),
        ((CREATING, AVAILABLE, MODIFYING, FAILED), "delete", DELETING),   # from any of these
    ])

and moves a row only through `STATES.move(session, cache, "created", *guards, **changes)`: one
conditional UPDATE (`WHERE id = :id AND status = :current AND guards`) that sets the new status,
`updated_at` where the model has one, and `changes`. When someone else moved the row first (or a
guard no longer holds), nothing changes and the answer is False; the caller decides what losing
means (a request answers 409, a reconcile pass starts over). A request moves with `move_latest`,
which follows a status the reconciler moved meanwhile (creating to available while a PATCH ran)
and loses only when what the request read changed. Nobody assigns `status` by hand.
`move_all` is the same for every row a query names (a newer deployment superseding those under
way), from every status the table lets take the event.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Generic, TypeVar

from sqlalchemy import ClauseElement, ColumnElement, Update, bindparam, inspect, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm.attributes import set_committed_value
from sqlalchemy.orm.exc import StaleDataError

from capstan.db import utcnow

M = TypeVar("M")
# How often a request's move follows a status that keeps moving under it before it answers 409.
MOVE_ATTEMPTS = 3
# `None` as a source is "no row yet" (the status a row is created with).
Status = str | None
# One row of a table: (from, event, to); `from` may be a tuple, "from any of these".
Move = tuple[Status | tuple[Status, ...], str, str]


class IllegalMove(ValueError):
    """A move the table does not allow: a bug in the caller, never a user's mistake (a service
    checks `can` first and answers its own typed error)."""


class StateMachine(Generic[M]):
    """The allowed moves of one model's `status`, and the function that makes them."""

    def __init__(self, model: type[M], moves: Iterable[Move]) -> None:
        self.model = model
        self.name = getattr(model, "__tablename__", model.__name__)
        transitions: dict[tuple[Status, str], str] = {}
        for sources, event, target in moves:
            for source in sources if isinstance(sources, tuple) else (sources,):
                if (source, event) in transitions:
                    raise ValueError(f"{self.name}: {source} by {event} is listed twice")
                transitions[(source, event)] = target
        self.transitions: Mapping[tuple[Status, str], str] = transitions
        mapper = inspect(model)
        self._columns = mapper.columns
        (self._id,) = mapper.primary_key
        self._status = mapper.columns["status"]
        # A model whose status is its row's version (`version_id_col`) has the flush of a row's
        # own changes guarded by the same status its move is: those changes can go in the move's
        # UPDATE instead of one of their own (`_fold`). Not with a column the ORM sets on update.
        self._foldable = mapper.version_id_col is self._status and not any(
            column.onupdate is not None for column in mapper.columns
        )
        # A move without guards, by the columns it sets: one statement each, built once
        # (docs/decisions/0065).
        self._moves: dict[tuple[str, ...], Update] = {}

    def can(self, status: Status, event: str) -> bool:
        return (status, event) in self.transitions

    def target(self, status: Status, event: str) -> str:
        """Where `event` takes a row in `status`; IllegalMove when the table has no such move."""
        try:
            return self.transitions[(status, event)]
        except KeyError:
            raise IllegalMove(f"a {self.name} row cannot go from {status} by {event}") from None

    def sources(self, event: str) -> list[Status]:
        return [status for status, name in self.transitions if name == event]

    def _values(self, target: str, changes: dict[str, Any]) -> dict[str, Any]:
        values = {"status": target, **changes}
        if "updated_at" in self._columns:
            values.setdefault("updated_at", utcnow())
        return values

    async def move(
        self,
        session: AsyncSession,
        row: M,
        event: str,
        *guards: ColumnElement[bool],
        **changes: Any,
    ) -> bool:
        """Move `row` along `event`, setting `changes` with it, if its status (and every guard)
        still holds in the database; False, and nothing changed, when someone moved it first.
        The object in memory follows a move that happened."""
        current = getattr(row, "status")  # noqa: B009 - the model is generic
        values = self._values(self.target(current, event), changes)
        folded = {} if guards else self._fold(row)
        values = {**folded, **values}
        # Other rows' pending changes (and this row's, unless folded) go first, in the same
        # transaction.
        await session.flush()
        row_id = getattr(row, self._id.key)
        if guards or any(isinstance(value, ClauseElement) for value in values.values()):
            result = await session.execute(
                update(self.model)
                .where(self._id == row_id, self._status == current, *guards)
                .values(**values),
                execution_options={"synchronize_session": False},
            )
        else:
            parameters = {f"m_{name}": value for name, value in values.items()}
            parameters |= {"m__id": row_id, "m__status": current}
            result = await session.execute(self._move_statement(tuple(values)), parameters)
        if not result.rowcount:  # type: ignore[attr-defined]
            if folded:
                # What the flush of the row's own changes would have raised: its version (the
                # status) moved under it.
                raise StaleDataError(
                    f"{self.name} {row_id}: its status is no longer {current!r}; "
                    f"{len(folded)} changes not written"
                )
            return False
        for name, value in values.items():
            set_committed_value(row, name, value)
        return True

    def _fold(self, row: M) -> dict[str, Any]:
        """The row's own pending column changes, taken out of the unit of work for the move's
        UPDATE to write: one statement, not two (docs/decisions/0065). {} when the model's moves
        cannot carry them or the row has a change other than a plain column's."""
        if not self._foldable:
            return {}
        state = inspect(row)
        if not state.persistent or not state.committed_state:
            return {}
        keys = list(state.committed_state)
        if any(key not in self._columns or key == self._status.key for key in keys):
            return {}
        pending = {key: state.dict[key] for key in keys if key in state.dict}
        for key, value in pending.items():
            set_committed_value(row, key, value)
        return pending

    def _move_statement(self, names: tuple[str, ...]) -> Update:
        """`UPDATE ... SET names WHERE id = :m__id AND status = :m__status`, on the Core table
        (no object to keep in step: `move` sets the row's committed values itself)."""
        statement = self._moves.get(names)
        if statement is None:
            columns = {name: self._columns[name] for name in names}
            statement = (
                update(self._status.table)
                .where(
                    self._id == bindparam("m__id", type_=self._id.type),
                    self._status == bindparam("m__status", type_=self._status.type),
                )
                .values({c: bindparam(f"m_{name}", type_=c.type) for name, c in columns.items()})
            )
            self._moves[names] = statement
        return statement

    async def move_latest(
        self,
        session: AsyncSession,
        row: M,
        event: str,
        *guards: ColumnElement[bool],
        **changes: Any,
    ) -> bool:
        """A request's move: as `move`, but when only the row's status moved meanwhile (a
        reconciler finishing its work between the request's read and its write), read the status
        again and move from there if the table allows `event` from it. False when a guard no
        longer holds (someone changed what the request read) or the new status refuses `event`."""
        for _ in range(MOVE_ATTEMPTS):
            if await self.move(session, row, event, *guards, **changes):
                return True
            seen = getattr(row, "status")  # noqa: B009 - the model is generic
            await session.refresh(row, ["status"])
            status = getattr(row, "status")  # noqa: B009
            if status == seen or not self.can(status, event):
                return False  # a guard failed, or the row went where the event cannot follow
        return False

    async def move_all(
        self, session: AsyncSession, event: str, *where: ColumnElement[bool], **changes: Any
    ) -> int:
        """Move every row `where` names along `event`, from whichever status the table lets take
        it (all of them must lead to one status); answers how many moved. Objects already loaded
        keep their old status in memory: their own `move` then loses, as it should."""
        targets = {self.transitions[(source, event)] for source in self.sources(event)}
        if len(targets) != 1:
            raise IllegalMove(f"{self.name}: {event} does not lead to one status ({targets})")
        sources = [source for source in self.sources(event) if source is not None]
        result = await session.execute(
            update(self.model)
            .where(self._status.in_(sources), *where)
            .values(**self._values(targets.pop(), changes)),
            execution_options={"synchronize_session": False},
        )
        return int(result.rowcount)  # type: ignore[attr-defined]
