"""The sandbox git host in the dev server: made from Capstan's settings (the GitHub App's
id, slug, key and OAuth client, the public base URL, the data directory) and mounted under
`/sandbox/git_host/` (`capstan_sandbox.git_host`: the GitHub emulator, which knows no settings)."""

from __future__ import annotations

import functools

from fastapi import FastAPI

from capstan.config import ConfigurationError, Settings
from capstan.git_host.client import load_app_key
from capstan_sandbox.git_host.host import SandboxGitHost
from capstan_sandbox.git_host.router import router
from capstan_sandbox.git_host.store import STATE_FILE, SandboxStore


def sandbox_git_host(settings: Settings) -> SandboxGitHost:
    """The GitHub emulator playing the app `settings` name, its state in the data directory."""
    private_key = load_app_key(settings)
    if (
        private_key is None
        or not settings.github_app_id
        or not settings.github_app_slug
        or not settings.github_client_id
        or settings.github_client_secret is None
    ):
        raise ConfigurationError(
            "The sandbox git host needs the app id, slug, private key, OAuth client id and "
            "client secret in the settings."
        )
    return SandboxGitHost(
        app_id=settings.github_app_id,
        app_slug=settings.github_app_slug,
        public_key=private_key.public_key(),
        base_url=settings.base_url,
        api_base=settings.github_api_base,
        web_base=settings.github_web_base,
        store=SandboxStore(settings.data_dir / STATE_FILE),
        client_id=settings.github_client_id,
        client_secret=settings.github_client_secret.get_secret_value(),
        webhook_secret=(
            settings.github_webhook_secret.get_secret_value()
            if settings.github_webhook_secret is not None
            else None
        ),
    )


def mount_git_host(app: FastAPI, settings: Settings) -> None:
    """Serve the sandbox git host from `app`; it is made on its first request."""
    app.state.make_sandbox_git_host = functools.partial(sandbox_git_host, settings)
    app.include_router(router)
