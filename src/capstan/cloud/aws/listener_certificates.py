"""Elastic Load Balancing v2: the extra certificates of an HTTPS listener, which it serves by SNI
beside its default one (custom domains' certificates on the project's listener).

https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_AddListenerCertificates.html
A load balancer serves at most 25 certificates besides its default by default
(`TooManyCertificates`: a quota error, `aws.quotas`).
"""

from __future__ import annotations

from typing import Any

from capstan.cloud.aws.calls import ignoring
from capstan.cloud.aws.errors import aws_errors
from capstan.cloud.aws.session import AwsSession


def _client(session: AwsSession) -> Any:
    return session.client("elbv2")


def listed(session: AwsSession, listener_arn: str) -> set[str]:
    """ARNs of the listener's certificates (its default one too)."""
    found: set[str] = set()
    elbv2 = _client(session)
    with aws_errors():
        for page in elbv2.get_paginator("describe_listener_certificates").paginate(
            ListenerArn=listener_arn
        ):
            found.update(str(item["CertificateArn"]) for item in page["Certificates"])
    return found


def add(session: AwsSession, listener_arn: str, certificate_arn: str) -> None:
    """Serve `certificate_arn` by SNI on the listener (adding one it has already changes
    nothing)."""
    with aws_errors():
        _client(session).add_listener_certificates(
            ListenerArn=listener_arn, Certificates=[{"CertificateArn": certificate_arn}]
        )


def remove(session: AwsSession, listener_arn: str, certificate_arn: str) -> None:
    """Stop serving `certificate_arn` on the listener (nothing happens once either is gone)."""
    with aws_errors(), ignoring("ListenerNotFound", "CertificateNotFound"):
        _client(session).remove_listener_certificates(
            ListenerArn=listener_arn, Certificates=[{"CertificateArn": certificate_arn}]
        )
