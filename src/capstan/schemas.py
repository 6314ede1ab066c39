"""Shapes shared by every resource's schemas: the strict request base, the one rule for the
characters a string may hold, and the error bodies.

The rule for text (`text_problem`): no string that reaches the database holds NUL (PostgreSQL's
text cannot store it) or an unpaired surrogate (not text at all: UTF-8 cannot encode it), and a
string that names or identifies something (a name, an id, a hostname, a branch, an email) holds
no control character either (Unicode's Cc: C0, DEL and C1). Free text — environment values,
commands, passwords, a commit message — is marked `FREE_TEXT` in its type and may hold tabs,
newlines and other control characters, never NUL. Every request body checks it through
`Request`; path and query parameters through `capstan.app`'s one dependency.
"""

from __future__ import annotations

import re
import types
from collections.abc import Iterator
from datetime import datetime
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

# Never stored: NUL and unpaired surrogates.
_NEVER = re.compile("[\x00\ud800-\udfff]")
# Never in a name or an id: those and every other control character.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


class _FreeText:
    """The mark of free text in a type's metadata: `Annotated[str, FREE_TEXT]`."""

    def __repr__(self) -> str:
        return "FREE_TEXT"


FREE_TEXT = _FreeText()


def text_problem(value: str, *, free_text: bool = False) -> str | None:
    """What is wrong with `value`'s characters under the rule above, as a phrase; None if
    nothing is."""
    found = (_NEVER if free_text else _CONTROL).search(value)
    if found is None:
        return None
    character = found.group()
    where = f"U+{ord(character):04X} at character {found.start() + 1}"
    if character == "\x00":
        return f"must not contain NUL ({where})"
    if "\ud800" <= character <= "\udfff":
        return f"must not contain an unpaired surrogate ({where}): it is not text"
    return f"must not contain control characters ({where})"


def _unwrapped(annotation: Any) -> tuple[Any, bool]:
    """The type inside `Annotated[...]` layers, and whether one of them marks free text."""
    free = False
    while get_origin(annotation) is Annotated:
        base, *metadata = get_args(annotation)
        free = free or any(item is FREE_TEXT for item in metadata)
        annotation = base
    return annotation, free


def _fits(annotation: Any, value: Any) -> bool:
    """Whether `value` (validated) is of the union member `annotation`."""
    base = get_origin(annotation) or annotation
    if base is Any:
        return True
    if base is Literal:
        return value in get_args(annotation)
    return isinstance(base, type) and isinstance(value, base)


def _problems(
    value: Any, annotation: Any, free: bool, loc: tuple[str | int, ...]
) -> Iterator[tuple[tuple[str | int, ...], str]]:
    """Each string of a validated field's value that breaks the rule, by where it is. A nested
    request body is left alone: it checks its own fields."""
    annotation, marked = _unwrapped(annotation)
    free = free or marked
    if isinstance(value, BaseModel):
        return
    if get_origin(annotation) in (Union, types.UnionType):
        member = next((m for m in get_args(annotation) if _fits(_unwrapped(m)[0], value)), Any)
        yield from _problems(value, member, free, loc)
        return
    arguments = get_args(annotation)
    if isinstance(value, str):
        problem = text_problem(value, free_text=free)
        if problem is not None:
            yield loc, problem
    elif isinstance(value, dict):
        key_type, value_type = arguments if len(arguments) == 2 else (Any, Any)
        for key, item in value.items():
            key_problems = list(_problems(key, key_type, False, loc))
            yield from key_problems
            # A bad key is not repeated in the location of its value.
            yield from _problems(item, value_type, free, loc if key_problems else (*loc, key))
    elif isinstance(value, list | tuple | set | frozenset):
        item_type = arguments[0] if arguments else Any
        for index, item in enumerate(value):
            yield from _problems(item, item_type, free, (*loc, index))


def stripped_not_blank(value: str) -> str:
    """For text fields whose published length holds for what is sent: the limits are checked on
    the value as sent (so the OpenAPI document's maxLength is the rule), then leading and
    trailing whitespace is removed and a value of whitespace alone is refused."""
    stripped = value.strip()
    if not stripped:
        raise ValueError("must not be blank")
    return stripped


# A label or name of 1 to 100 characters as sent, kept without surrounding whitespace.
Label100 = Annotated[str, Field(min_length=1, max_length=100), AfterValidator(stripped_not_blank)]


class Request(BaseModel):
    """A request body: unknown fields are refused, strings are not coerced into numbers, and no
    string breaks the rule for text (400, the field named)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    def model_post_init(self, context: Any, /) -> None:
        # Here rather than in a model validator, which would rename the model in the location of
        # errors inside a union (`function-after[...]` for `FromEnv`).
        errors = [
            InitErrorDetails(
                type=PydanticCustomError("control_character", "{problem}", {"problem": problem}),
                loc=loc,
                input=None,  # never echoed: it is what could not be stored
            )
            for name, field in type(self).model_fields.items()
            for loc, problem in _problems(
                getattr(self, name),
                field.annotation,
                any(item is FREE_TEXT for item in field.metadata),
                (name,),
            )
        ]
        if errors:
            raise ValidationError.from_exception_data(type(self).__name__, errors)


class Response(BaseModel):
    model_config = ConfigDict(from_attributes=True)


# A month-to-date figure Cost Explorer cannot give (the cost allocation tag not active yet,
# Cost Explorer off in the account) is null, with the reason beside it.
SPEND_UNAVAILABLE = (
    "Null while the month-to-date figure is available; otherwise why Cost Explorer cannot give "
    "it (then the figure is null)."
)


class ErrorBody(BaseModel):
    error: str
    message: str
    details: list[dict[str, Any]] | None = None


class VerificationFailedBody(BaseModel):
    verified: bool = False
    error: str
    message: str


# Metrics' `series`: each figure of the last hour per 5 minutes (services, caches, buckets).
class MetricPoint(Response):
    timestamp: datetime = Field(description="The start of the 5-minute period.")
    value: float = Field(
        description="The figure for that period: a percentage is the period's, a count or a "
        "number of bytes is what the period had, a peak (memory used, connections) is the "
        "period's highest."
    )


SERIES = (
    "The last hour per 5 minutes, oldest first: for each figure above, a point for each period "
    "that had data in CloudWatch (a period without data has no point)."
)
