"""ACM: certificates validated by DNS (the validation records go into the operator's zone of the
service domain, through `route53`).

ACM issues a certificate once its validation CNAME resolves; Capstan writes the records and
polls. A certificate requested again with the same idempotency token within an hour is the same
certificate, so a pass repeated after a crash does not request a second one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from capstan.cloud.aws.calls import error_code, ignoring
from capstan.cloud.aws.errors import aws_errors
from capstan.cloud.aws.session import AwsSession

# A certificate's domain name (its Common Name) holds at most 64 characters (RFC 5280).
DOMAIN_NAME_CHARS = 64


@dataclass(frozen=True)
class ValidationRecord:
    name: str  # e.g. "_x1.web.shop.example.com."
    type: str  # "CNAME"
    value: str


@dataclass(frozen=True)
class CertificateInfo:
    arn: str
    domain_name: str
    # PENDING_VALIDATION | ISSUED | INACTIVE | EXPIRED | VALIDATION_TIMED_OUT | REVOKED | FAILED
    status: str
    validation_records: tuple[ValidationRecord, ...]
    in_use_by: tuple[str, ...]
    failure_reason: str | None


def _client(session: AwsSession, region: str | None) -> Any:
    return session.client("acm", region=region)


def request_certificate(
    session: AwsSession,
    domain_name: str,
    *,
    idempotency_token: str,
    tags: dict[str, str],
    alternative_names: tuple[str, ...] = (),
    region: str | None = None,
) -> str:
    """Request a DNS-validated certificate for `domain_name`; its ARN. `idempotency_token`:
    at most 32 letters/digits/underscores (ACM's rule)."""
    request: dict[str, Any] = {
        "DomainName": domain_name,
        "ValidationMethod": "DNS",
        "IdempotencyToken": idempotency_token[:32],
        "Tags": [{"Key": key, "Value": value} for key, value in tags.items()],
    }
    if alternative_names:
        request["SubjectAlternativeNames"] = [domain_name, *alternative_names]
    with aws_errors():
        answer = _client(session, region).request_certificate(**request)
    return str(answer["CertificateArn"])


def describe_certificate(
    session: AwsSession, arn: str, *, region: str | None = None
) -> CertificateInfo | None:
    """The certificate, or None when it does not exist (any more)."""
    with aws_errors():
        try:
            found = _client(session, region).describe_certificate(CertificateArn=arn)
        except ClientError as error:
            if error_code(error) == "ResourceNotFoundException":
                return None
            raise
    certificate = found["Certificate"]
    records: list[ValidationRecord] = []
    for option in certificate.get("DomainValidationOptions", []):
        record = option.get("ResourceRecord")
        if record:
            item = ValidationRecord(str(record["Name"]), str(record["Type"]), str(record["Value"]))
            if item not in records:  # a wildcard and its apex share one record
                records.append(item)
    return CertificateInfo(
        arn=arn,
        domain_name=str(certificate["DomainName"]),
        status=str(certificate["Status"]),
        validation_records=tuple(records),
        in_use_by=tuple(str(item) for item in certificate.get("InUseBy", [])),
        failure_reason=certificate.get("FailureReason"),
    )


def delete_certificate(session: AwsSession, arn: str, *, region: str | None = None) -> None:
    """Delete the certificate (nothing happens when it is already gone). ACM refuses while a
    load balancer or distribution still uses it: `ResourceInUseException`, a retryable wait."""
    with aws_errors(), ignoring("ResourceNotFoundException"):
        _client(session, region).delete_certificate(CertificateArn=arn)


def find_certificates(
    session: AwsSession, tags: dict[str, str], *, region: str | None = None
) -> list[str]:
    """ARNs of the certificates carrying every one of `tags` (any status): how a certificate
    whose ARN was never recorded (a crash right after the request) is found again."""
    client = _client(session, region)
    found: list[str] = []
    with aws_errors():
        for page in client.get_paginator("list_certificates").paginate():
            for summary in page["CertificateSummaryList"]:
                arn = str(summary["CertificateArn"])
                try:
                    listed = client.list_tags_for_certificate(CertificateArn=arn)["Tags"]
                except ClientError as error:
                    if error_code(error) == "ResourceNotFoundException":
                        continue
                    raise
                have = {tag["Key"]: tag.get("Value", "") for tag in listed}
                if all(have.get(key) == value for key, value in tags.items()):
                    found.append(arn)
    return found


def certificates_for(
    session: AwsSession, domain_name: str, *, region: str | None = None
) -> list[str]:
    """ARNs of the certificates whose domain name is `domain_name` (any status): whether another
    certificate still needs the validation record they share (ACM gives one account the same
    record for the same domain every time)."""
    client = _client(session, region)
    found: list[str] = []
    with aws_errors():
        for page in client.get_paginator("list_certificates").paginate():
            for summary in page["CertificateSummaryList"]:
                if str(summary.get("DomainName", "")).rstrip(".") == domain_name:
                    found.append(str(summary["CertificateArn"]))
    return found
