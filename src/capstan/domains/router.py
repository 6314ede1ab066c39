"""Routes of custom domains: `/api/projects/{project_id}/{kind}/{service_id}/domains`, for
`web_servers` (`make_router` takes any kind of `service.KINDS`)."""

from __future__ import annotations

from fastapi import APIRouter, Response, status

from capstan.auth.principal import Caller
from capstan.db import DbSession
from capstan.deps import AppSettings
from capstan.domains import service
from capstan.domains.models import Domain
from capstan.domains.schemas import DnsRecordOut, DomainCreate, DomainList, DomainOut
from capstan.routers import PrefixRouter


def shown(domain: Domain) -> DomainOut:
    return DomainOut(
        id=domain.id,
        hostname=domain.hostname,
        status=domain.status,
        dns_records=[DnsRecordOut.model_validate(r) for r in service.records_of(domain)],
        error=domain.error,
        created_at=domain.created_at,
        updated_at=domain.updated_at,
    )


def make_router(path: str) -> APIRouter:
    kind = service.KINDS[path]
    noun = path.removesuffix("s").replace("_", " ")
    router = PrefixRouter(
        prefix=f"/api/projects/{{project_id}}/{path}/{{service_id}}/domains", tags=["domains"]
    )
    item = "/{domain_id}"

    @router.get(
        "",
        response_model=DomainList,
        name=f"list_{path}_domains",
        summary=f"The {noun}'s custom domains",
    )
    async def list_domains(
        project_id: str, service_id: str, caller: Caller, session: DbSession
    ) -> DomainList:
        rows = await service.list_(session, caller, project_id, kind, service_id)
        return DomainList(domains=[shown(row) for row in rows])

    @router.post(
        "",
        status_code=status.HTTP_201_CREATED,
        response_model=DomainOut,
        name=f"add_{path}_domain",
        summary=f"Serve the {noun} at your own hostname, over HTTPS",
        description="Answers the domain `pending_dns`; its `dns_records` (shown within seconds) "
        "are what to create at your DNS provider. 409 `domain_taken` when any service holds "
        "the hostname.",
    )
    async def add_domain(
        project_id: str,
        service_id: str,
        body: DomainCreate,
        caller: Caller,
        session: DbSession,
        settings: AppSettings,
    ) -> DomainOut:
        domain = await service.add(
            session, caller, project_id, kind, service_id, body.hostname, settings.domain
        )
        await session.refresh(domain)
        return shown(domain)

    @router.get(
        item, response_model=DomainOut, name=f"get_{path}_domain", summary="A custom domain"
    )
    async def get_domain(
        project_id: str, service_id: str, domain_id: str, caller: Caller, session: DbSession
    ) -> DomainOut:
        return shown(await service.get(session, caller, project_id, kind, service_id, domain_id))

    @router.post(
        f"{item}/verification",
        status_code=status.HTTP_202_ACCEPTED,
        response_model=DomainOut,
        name=f"verify_{path}_domain",
        summary="Check the domain's DNS records now",
        description="Capstan checks on its own, less often as time passes; this asks it to "
        "look now. A failed domain starts again with a new certificate.",
    )
    async def verify_domain(
        project_id: str, service_id: str, domain_id: str, caller: Caller, session: DbSession
    ) -> DomainOut:
        domain = await service.verify(session, caller, project_id, kind, service_id, domain_id)
        return shown(domain)

    @router.delete(
        item,
        status_code=status.HTTP_204_NO_CONTENT,
        response_class=Response,
        name=f"delete_{path}_domain",
        summary="Remove the domain: its rule or alias and its certificate go",
    )
    async def delete_domain(
        project_id: str, service_id: str, domain_id: str, caller: Caller, session: DbSession
    ) -> Response:
        await service.delete(session, caller, project_id, kind, service_id, domain_id)
        return Response(status_code=status.HTTP_204_NO_CONTENT)

    return router


web_servers_router = make_router("web_servers")
