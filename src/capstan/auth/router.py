"""Session, CSRF and API token endpoints."""

from __future__ import annotations

from fastapi import Request, Response, status

from capstan.auth import schemas, service
from capstan.auth.principal import Caller
from capstan.auth.secrets import csrf_token
from capstan.config import Settings
from capstan.db import DbSession
from capstan.errors import BadRequest
from capstan.routers import PrefixRouter

router = PrefixRouter(prefix="/api", tags=["session"])


def _settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


@router.post(
    "/session",
    status_code=status.HTTP_201_CREATED,
    response_model=schemas.SignedIn,
    summary="Sign in with email and password",
    openapi_extra={"security": []},
)
async def sign_in(
    body: schemas.SignIn, request: Request, response: Response, session: DbSession
) -> schemas.SignedIn:
    settings = _settings(request)
    result = await service.sign_in(
        session,
        settings,
        request.app.state.sign_in_limiter,
        email=body.email,
        password=body.password,
        client=request.client.host if request.client else "unknown",
        previous_cookie=request.cookies.get(settings.session_cookie_name),
        now=request.app.state.clock(),
    )
    response.set_cookie(
        settings.session_cookie_name,
        result.session_secret,
        max_age=settings.session_absolute_seconds,
        path="/",
        secure=settings.https,
        httponly=True,
        samesite="lax",
    )
    return schemas.SignedIn.model_validate(result.user)


@router.get("/session", response_model=schemas.CurrentUser, summary="The signed-in user")
async def get_session(caller: Caller, session: DbSession) -> schemas.CurrentUser:
    user, organization = await service.current_user(session, caller)
    return schemas.CurrentUser(
        id=user.id,
        email=user.email,
        name=user.name,
        organization=schemas.OrganizationRef.model_validate(organization),
    )


@router.delete("/session", response_model=schemas.SignedOut, summary="Sign out")
async def sign_out(
    caller: Caller, request: Request, response: Response, session: DbSession
) -> schemas.SignedOut:
    await service.sign_out(session, caller)
    settings = _settings(request)
    response.delete_cookie(
        settings.session_cookie_name, path="/", secure=settings.https, httponly=True, samesite="lax"
    )
    return schemas.SignedOut(message="Signed out.")


@router.get(
    "/csrf",
    response_model=schemas.CsrfToken,
    summary="A CSRF token for this browser session",
    description="Send it as `X-CSRF-Token` with every cookie-authenticated change.",
)
async def get_csrf(caller: Caller, request: Request) -> schemas.CsrfToken:
    if caller.session_id is None:
        raise BadRequest(
            "CSRF tokens belong to browser sessions; bearer requests need none.",
            code="not_a_session",
        )
    return schemas.CsrfToken(
        token=csrf_token(
            _settings(request).require_secret_key(),
            caller.session_id,
            now=request.app.state.clock().timestamp(),
        )
    )


tokens = PrefixRouter(prefix="/api/api_tokens", tags=["api tokens"])


@tokens.get("", response_model=schemas.ApiTokenList, summary="The organization's API tokens")
async def list_api_tokens(caller: Caller, session: DbSession) -> schemas.ApiTokenList:
    rows = await service.list_api_tokens(session, caller)
    return schemas.ApiTokenList(
        api_tokens=[schemas.ApiTokenSummary.model_validate(row) for row in rows]
    )


@tokens.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=schemas.ApiTokenCreated,
    summary="Create an API token (the secret is shown once)",
    description="The answer is `Cache-Control: no-store`: nothing keeps it, Capstan included. "
    "Sent again with its `Idempotency-Key`, the request is not run again and the answer is 409 "
    "`idempotency_answer_not_kept` (the secret is not shown twice).",
)
async def create_api_token(
    body: schemas.ApiTokenCreate, caller: Caller, session: DbSession, response: Response
) -> schemas.ApiTokenCreated:
    token, secret = await service.create_api_token(session, caller, name=body.name)
    # A secret shown once: no cache keeps it, nor the idempotency store (`capstan.idempotency`).
    response.headers["Cache-Control"] = "no-store"
    return schemas.ApiTokenCreated(
        id=token.id, name=token.name, created_at=token.created_at, token=secret
    )


@tokens.delete("/{token_id}", response_model=schemas.ApiTokenDeleted, summary="Revoke an API token")
async def revoke_api_token(
    token_id: str, caller: Caller, session: DbSession
) -> schemas.ApiTokenDeleted:
    await service.revoke_api_token(session, caller, token_id)
    return schemas.ApiTokenDeleted(id=token_id)
