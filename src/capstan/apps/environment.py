"""The environment of a web server, worker or static website: its box (the sealing key's
context), reading it, its version for `ETag` / `If-Match`, and replacing it (the names Capstan
sets itself refused, database references checked, sealed, written only if unchanged when
`If-Match` is given, and rolled out as a new deployment).

A preview's own environment (a copy of its parent's at creation) is in `previews.py`; its
values reach the cloud through the reconciler, which seals them into each release.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.apps.models import Deployment, Preview, Service
from capstan.apps.service import STATIC_WEBSITE, WEB_SERVER, get, start_deployment
from capstan.auth.principal import Principal
from capstan.cloud.deploy import CONTAINER_PORT
from capstan.cloud.site import SITE_BUILD_VARIABLES
from capstan.crypto import SecretBox
from capstan.databases import references
from capstan.errors import BadRequest, PreconditionFailed, ValidationFailed


def environment_box(secret_key: bytes) -> SecretBox:
    return SecretBox(secret_key, "capstan environment v1")


def read_environment(box: SecretBox, owner: Service | Preview) -> list[dict[str, str]]:
    return open_variables(box, owner.environment, owner.id)


def open_variables(box: SecretBox, sealed: bytes | None, owner_id: str) -> list[dict[str, str]]:
    """A sealed list of variables (`[{"key", "value"}]`) opened; [] when there is none."""
    value = box.open_json(sealed, owner=owner_id)
    return list(value) if isinstance(value, list) else []


async def get_environment(
    session: AsyncSession,
    caller: Principal,
    project_id: str,
    kind: str,
    service_id: str,
    box: SecretBox,
) -> list[dict[str, str]]:
    return read_environment(box, await get(session, caller, project_id, kind, service_id))


# What `If-Match` may hold (RFC 9110 §13.1.1): `*`, or a comma-separated list of entity tags, each
# quoted and perhaps weak (`W/"…"`, which never matches: If-Match compares strongly). Anything
# else, an empty value too, is a malformed header: 400, not a 412 for a version nobody named.
_ENTITY_TAG = r'(?:W/)?"[!#-~]*"'
IF_MATCH_PATTERN = rf"^(\*|{_ENTITY_TAG}([ \t]*,[ \t]*{_ENTITY_TAG})*)$"


def environment_etag(service: Service) -> str:
    """The stored environment's version, for `ETag` and `If-Match`: a digest of its sealed bytes
    (sealed afresh on every write, so every write makes a new one; it says nothing of the
    values)."""
    return f'"{hashlib.sha256(service.environment or b"").hexdigest()[:32]}"'


async def put_environment(
    session: AsyncSession,
    caller: Principal,
    project_id: str,
    kind: str,
    service_id: str,
    box: SecretBox,
    variables: list[dict[str, str]],
    *,
    if_match: str | None = None,
) -> Deployment:
    """Replace the whole environment (never a merge) and roll it out; with `if_match`, only if
    it is still the version the client read (412 otherwise)."""
    if if_match is not None and not re.fullmatch(IF_MATCH_PATTERN, if_match):
        raise ValidationFailed(
            'If-Match must be "*" or the ETag of GET environment as it was answered, quotes '
            "included (several may be separated by commas).",
            details=[
                {
                    "field": "header.if-match",
                    "type": "if_match_malformed",
                    "message": "Not an entity tag.",
                }
            ],
        )
    service = await get(session, caller, project_id, kind, service_id)
    check_reserved(kind, variables)
    await references.check_environment(
        session, service.project_id, variables, allowed=kind != STATIC_WEBSITE
    )
    sealed = box.seal_json(variables, owner=service.id)
    if if_match is not None:
        await _replace_if_unchanged(session, service, if_match, sealed)
    service.environment = sealed
    return await start_deployment(
        session, service, None, trigger="environment", new_environment=True
    )


async def _replace_if_unchanged(
    session: AsyncSession, service: Service, if_match: str, sealed: bytes
) -> None:
    """Compare If-Match with the environment as loaded, then write only if the row still holds
    that environment (a conditional UPDATE): of two concurrent changes from one version, one
    wins and the other gets 412, never a silent overwrite."""
    tags = set(re.findall(rf"\*|{_ENTITY_TAG}", if_match))
    if "*" not in tags and environment_etag(service) not in tags:
        raise PreconditionFailed(
            "The environment changed since it was read (If-Match no longer matches its ETag); "
            "read it again and send the whole set."
        )
    unchanged = (
        Service.environment.is_(None)
        if service.environment is None
        else Service.environment == service.environment
    )
    written = await session.execute(
        update(Service)
        .where(Service.id == service.id, unchanged)
        .values(environment=sealed)
        .execution_options(synchronize_session=False)
    )
    if written.rowcount != 1:  # type: ignore[attr-defined]
        raise PreconditionFailed("The environment changed while this change was being made.")


def _reserved(kind: str, name: str) -> bool:
    """Names Capstan sets itself: a site's build variables, and a web server's PORT (the port its
    load balancer sends traffic to)."""
    if kind == STATIC_WEBSITE:
        return name in SITE_BUILD_VARIABLES or name.upper().startswith("CODEBUILD_")
    return kind == WEB_SERVER and name == "PORT"


def check_reserved(kind: str, variables: list[dict[str, Any]]) -> None:
    reserved = [v["name"] for v in variables if _reserved(kind, v["name"])]
    if not reserved:
        return
    why = (
        "set by the site's build itself; choose other names"
        if kind == STATIC_WEBSITE
        else f"Capstan sets PORT={CONTAINER_PORT}; have the server listen on $PORT"
    )
    raise BadRequest(
        f"{', '.join(reserved)}: {why}.",
        code="reserved_variable",
        details=[
            {"field": "environment", "type": "reserved_variable", "message": name}
            for name in reserved
        ],
    )
