"""The sandbox's public DNS in the dev server (`capstan_sandbox.dns`): its control mounted at
`/sandbox/dns/records`, and where it answers DNS queries, for `Settings.dns_nameserver`."""

from __future__ import annotations

import httpx
from fastapi import FastAPI

from capstan.config import ConfigurationError, Settings
from capstan_sandbox.dns.control import INFO_PATH
from capstan_sandbox.dns.router import router


def mount_public_dns(app: FastAPI, settings: Settings) -> None:
    """Serve the public DNS's control from `app`, relayed to the settings' sandbox cloud."""
    app.state.sandbox_cloud_url = settings.sandbox_cloud_url
    app.include_router(router)


def nameserver_of(sandbox_cloud_url: str) -> str:
    """The "host:port" where the public DNS of the sandbox cloud at that URL answers."""
    try:
        answer = httpx.get(sandbox_cloud_url.rstrip("/") + INFO_PATH, timeout=10.0)
        nameserver = answer.json().get("nameserver") if answer.status_code == 200 else None
    except (httpx.HTTPError, ValueError, AttributeError):
        nameserver = None
    if not isinstance(nameserver, str) or not nameserver:
        raise ConfigurationError(
            f"the sandbox cloud at {sandbox_cloud_url} does not say where its public DNS "
            "answers; set CAPSTAN_DNS_NAMESERVER"
        )
    return nameserver


def with_public_dns(settings: Settings) -> Settings:
    """`settings` asking the sandbox cloud's public DNS, unless `dns_nameserver` names one."""
    if settings.dns_nameserver or not settings.sandbox_cloud_url:
        return settings
    return settings.model_copy(update={"dns_nameserver": nameserver_of(settings.sandbox_cloud_url)})
