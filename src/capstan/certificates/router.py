"""Routes of the project certificate: `/api/projects/{project_id}/certificate`."""

from __future__ import annotations

from fastapi import Response, status

from capstan.auth.principal import Caller
from capstan.certificates import service
from capstan.certificates.schemas import CertificateOut, CertificateStarted, ValidationRecordOut
from capstan.db import DbSession
from capstan.deps import AppCloud, AppSettings
from capstan.routers import PrefixRouter

router = PrefixRouter(prefix="/api/projects/{project_id}/certificate", tags=["certificate"])


@router.post(
    "",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=CertificateStarted,
    summary="Provision HTTPS for the project's web servers (idempotent)",
    description="Requests a certificate for `*.<hostname_suffix>.<domain>` validated by DNS, "
    "which Capstan does for you. While one is pending or issued, answers that one.",
)
async def request_certificate(
    project_id: str, caller: Caller, session: DbSession, cloud: AppCloud, settings: AppSettings
) -> CertificateStarted:
    project = await service.request(session, caller, project_id, cloud, settings)
    return CertificateStarted(
        certificate_status=project.certificate_status or "",
        certificate_arn=project.certificate_arn or "",
    )


@router.get(
    "",
    response_model=CertificateOut,
    response_model_exclude_none=True,
    summary="The project's certificate",
)
async def get_certificate(
    project_id: str, caller: Caller, session: DbSession, settings: AppSettings
) -> CertificateOut:
    _project, certificate = await service.get(session, caller, project_id)
    return CertificateOut(
        certificate_status=service.SHOWN[certificate.status],
        certificate_arn=certificate.arn,
        domain_name=service.domain_name(certificate, settings),
        validation_records=[
            ValidationRecordOut(name=r.name, type=r.type, value=r.value)
            for r in service.records_of(certificate)
        ],
        error=certificate.error,
        issued_at=certificate.issued_at,
    )


@router.delete(
    "",
    status_code=status.HTTP_204_NO_CONTENT,
    response_class=Response,
    summary="Remove the certificate: web servers are served over HTTP only again",
)
async def delete_certificate(project_id: str, caller: Caller, session: DbSession) -> Response:
    await service.delete(session, caller, project_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
