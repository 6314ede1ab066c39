"""Validation failures in words: pydantic's errors turned into sentences that name the field and
say the rule (docs/decisions/0118).

A pattern is declared with its words beside it, `pattern(r"^[a-z]…$", "lowercase letters …")`,
and a value it refuses is told "<field> must be <words>"; the regex is never shown. An unknown
field is named with the closest known one ("unknown field 'memroy' (did you mean 'memory'?)").
The API's one error handler and the plan's checks both answer through `details_of`.
"""

from __future__ import annotations

import difflib
import types
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel

# Each declared pattern's words, by the pattern itself (what pydantic's error carries).
_WORDS: dict[str, str] = {}

# What a value of the wrong JSON type is told, by pydantic's error type.
_TYPES = {
    "string_type": "must be a string",
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "dict_type": "must be an object",
    "model_type": "must be an object",
    "model_attributes_type": "must be an object",
    "list_type": "must be a list",
    "tuple_type": "must be a list",
    "set_type": "must be a list",
    "none_required": "must be null",
    "datetime_type": "must be a date-time such as 2026-01-31T12:00:00Z",
    "datetime_parsing": "must be a date-time such as 2026-01-31T12:00:00Z",
    "datetime_from_date_parsing": "must be a date-time such as 2026-01-31T12:00:00Z",
    "url_type": "must be a URL",
    "url_parsing": "must be a URL",
    "url_scheme": "must be an http or https URL",
}


def pattern(regex: str, words: str) -> str:
    """`regex` as a field's pattern, with what a refused value is told it must be (`words`,
    e.g. "lowercase letters, digits and hyphens")."""
    known = _WORDS.setdefault(regex, words)
    if known != words:
        raise ValueError(f"the pattern {regex!r} is declared twice, in different words")
    return regex


def words_for(regex: str) -> str | None:
    """The words declared with `regex`; None for a pattern declared without them."""
    return _WORDS.get(regex)


# Where a failure is, and which fields the object there has (None: not known).
FieldsAt = Callable[[Sequence[str | int]], Collection[str] | None]


def field_name(loc: Sequence[str | int]) -> str:
    """The failure's location as the request writes it: `web_servers.api.memory`,
    `environment.0.name`; the top of the body is ''."""
    parts = list(loc)
    if parts and parts[0] == "body":
        parts = parts[1:]
    # A map's key that failed is the entry's own name (pydantic adds `[key]` after it).
    return ".".join(str(part) for part in parts if part != "[key]")


def sentence(error: Mapping[str, Any], field: str, fields_at: FieldsAt | None = None) -> str:
    """One of pydantic's errors (`type`, `msg`, `ctx`, `loc`) as a sentence about `field`."""
    kind = error.get("type", "")
    ctx = error.get("ctx") or {}
    subject = field or "the body"
    if kind == "extra_forbidden":
        return _unknown_field(error, field, fields_at)
    if kind == "missing":
        return f"{subject} is required"
    if kind == "json_invalid":
        return "the body is not valid JSON"
    if kind in _TYPES:
        return f"{subject} {_TYPES[kind]}"
    if kind == "string_pattern_mismatch":
        words = words_for(str(ctx.get("pattern", "")))
        return f"{subject} must be {words}" if words else f"{subject} is not in the expected form"
    if kind == "string_too_short":
        least = int(ctx.get("min_length", 1))
        if least <= 1:
            return f"{subject} must not be empty"
        return f"{subject} must be at least {least} characters"
    if kind == "string_too_long":
        return f"{subject} must be at most {ctx.get('max_length')} characters"
    if kind == "too_short":
        return f"{subject} must have at least {ctx.get('min_length')} items"
    if kind == "too_long":
        return f"{subject} must have at most {ctx.get('max_length')} items"
    bounds = {
        "greater_than": "greater than",
        "greater_than_equal": "at least",
        "less_than": "less than",
        "less_than_equal": "at most",
        "multiple_of": "a multiple of",
    }
    if kind in bounds:
        limit = next(iter(ctx.values()), "")
        return f"{subject} must be {bounds[kind]} {limit}"
    if kind in ("literal_error", "enum"):
        return f"{subject} must be {ctx.get('expected', 'one of the allowed values')}"
    reason = str(ctx.get("reason") or ctx.get("problem") or _own_message(error))
    if kind == "value_error" and "error" in ctx:
        reason = str(ctx["error"])
    if reason.startswith(("must ", "is ", "may ")):
        return f"{subject} {reason}"
    return f"{subject}: {reason}"


def _own_message(error: Mapping[str, Any]) -> str:
    """A validator's own message, without pydantic's "Value error, " in front."""
    message = str(error.get("msg", "is not valid"))
    for prefix in ("Value error, ", "Assertion failed, "):
        message = message.removeprefix(prefix)
    return message


def _unknown_field(error: Mapping[str, Any], field: str, fields_at: FieldsAt | None) -> str:
    loc = list(error.get("loc", ()))
    name = str(loc[-1]) if loc else field
    known = fields_at(loc[:-1]) if fields_at is not None and loc else None
    closest = difflib.get_close_matches(name, sorted(known or ()), n=1, cutoff=0.6)
    hint = f" (did you mean '{closest[0]}'?)" if closest else ""
    return f"unknown field '{field or name}'{hint}"


def details_of(errors: Sequence[Any], body: Any = None) -> list[dict[str, str]]:
    """pydantic's errors as the error body's `details`: `field`, pydantic's `type`, and the
    sentence. With the body's type, an unknown field names the closest known one, and a value
    that is one of several forms (a variable's string, `{from_env}` or `{database}`) is told
    about the form it came closest to, not about each."""
    fields_at = fields_in(body) if body is not None else None
    details = []
    for error in _closest_forms(errors, body):
        field = field_name(error.get("shown_loc", error.get("loc", ())))
        details.append(
            {
                "field": field,
                "type": str(error.get("type", "invalid")),
                "message": sentence(error, field, fields_at),
            }
        )
    return details


def _closest_forms(errors: Sequence[Any], body: Any) -> list[dict[str, Any]]:
    """pydantic reports a union's failure once per member, under the member's tag in the
    location. Kept, where the first of them was: the errors of the member that matched the
    value's type with the fewest errors (an unknown key close to one of its fields counts
    less), shown without the tag; when no member matched the type, one error saying the types.
    """
    if body is None:
        return [dict(error) for error in errors]
    order: list[Any] = []  # an error, or the prefix of a union's group
    groups: dict[tuple[Any, ...], dict[Any, list[dict[str, Any]]]] = {}
    for error in errors:
        loc = tuple(error.get("loc", ()))
        tag = _union_tag(body, loc)
        if tag is None:
            order.append(dict(error))
            continue
        if loc[:tag] not in groups:
            groups[loc[:tag]] = {}
            order.append(loc[:tag])
        shown = {**error, "shown_loc": loc[:tag] + loc[tag + 1 :]}
        groups[loc[:tag]].setdefault(loc[tag], []).append(shown)
    kept: list[dict[str, Any]] = []
    for item in order:
        kept.extend(_closest(body, item, groups[item]) if isinstance(item, tuple) else [item])
    return kept


def _closest(
    body: Any, prefix: tuple[Any, ...], members: dict[Any, list[dict[str, Any]]]
) -> list[dict[str, Any]]:
    def wrong_type(error: dict[str, Any]) -> bool:
        return error["shown_loc"] == prefix and error.get("type") in _TYPES

    def weight(tag: Any) -> float:
        known = fields_in(body)((*prefix, tag)) or ()
        near = sum(
            1
            for error in members[tag]
            if error.get("type") == "extra_forbidden"
            and difflib.get_close_matches(str(error["loc"][-1]), list(known), cutoff=0.6)
        )
        return len(members[tag]) - 0.5 * near

    matched = [tag for tag, found in members.items() if not all(map(wrong_type, found))]
    if matched:
        return members[min(matched, key=weight)]
    kinds = dict.fromkeys(
        _TYPES[e["type"]].removeprefix("must be ") for found in members.values() for e in found
    )
    reason = f"must be {' or '.join(kinds)}"
    return [{"type": "union_type", "loc": prefix, "ctx": {"reason": reason}}]


def summary(details: Sequence[dict[str, str]]) -> str:
    """The error's top `message`: every detail's sentence in one, capitalised unless it starts
    with a field's name (written as the request writes it)."""
    text = "; ".join(dict.fromkeys(detail["message"] for detail in details)) or "invalid request"
    if not (details and details[0]["field"] and text.startswith(details[0]["field"])):
        text = text[0].upper() + text[1:]
    return f"{text}."


def fields_in(annotation: Any) -> FieldsAt:
    """For a body of type `annotation`: the fields of the object at a failure's location (its
    keys and indexes followed through models, lists and maps), for "did you mean"."""

    def fields_at(loc: Sequence[str | int]) -> Collection[str] | None:
        current = _walk(annotation, loc)[0]
        model = _model(current)
        if model is None:
            return None
        return [field.alias or name for name, field in model.model_fields.items()]

    return fields_at


def _union_tag(annotation: Any, loc: Sequence[str | int]) -> int | None:
    """Where in `loc` pydantic named a union's member (`FromEnv`, `constrained-str`), if it did."""
    return _walk(annotation, loc)[1]


def _walk(annotation: Any, loc: Sequence[str | int]) -> tuple[Any, int | None]:
    """The type at the end of `loc` inside `annotation` (None: not found), and the position of
    the first union member's tag on the way."""
    current: Any = annotation
    tag: int | None = None
    for index, part in enumerate(loc):
        if index == 0 and part == "body":
            continue
        if part == "[key]":  # the key of a map's entry failed, not a value inside it
            return None, tag
        members = [m for m in _candidates(current) if m is not type(None)]
        if len(members) > 1 and isinstance(part, str) and _step(current, part) is None:
            if tag is None:
                tag = index
            named = [m for m in members if getattr(m, "__name__", None) == part]
            current = named[0] if named else None
            if current is None:
                return None, tag
            continue
        current = _step(current, part)
        if current is None:
            return None, tag
    return current, tag


def _candidates(annotation: Any) -> list[Any]:
    """The types an annotation may hold: through Annotated, Optional and unions."""
    if get_origin(annotation) is Annotated:
        return _candidates(get_args(annotation)[0])
    if get_origin(annotation) in (Union, types.UnionType):
        return [member for arg in get_args(annotation) for member in _candidates(arg)]
    return [annotation]


def _model(annotation: Any) -> type[BaseModel] | None:
    for candidate in _candidates(annotation):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def _step(annotation: Any, part: str | int) -> Any:
    """The type found at `part` inside a value of type `annotation`, or None."""
    for candidate in _candidates(annotation):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            for name, field in candidate.model_fields.items():
                if part in (name, field.alias):
                    return field.annotation
        origin, args = get_origin(candidate), get_args(candidate)
        if origin in (list, tuple, set, frozenset) and isinstance(part, int) and args:
            return args[0]
        if origin is dict and len(args) == 2:
            return args[1]
    return None
