"""Installation tokens kept per installation and scope (`GitHubAppClient.installation_token`):
reused while half an hour of their hour is left, minted anew after that or once the git host
refuses one (401), and never surviving the installation."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from capstan.git_host.client import GitHubAppClient, open_git_host
from capstan.git_host.errors import CredentialsRefused, NoSuchInstallation
from capstan.git_host.kept_tokens import TOKEN_MIN_LIFE
from tests.git_host.events_helpers import new_repository
from tests.harness import RunningServer
from tests.sandbox_git_host.helpers import inject_failures, sandbox_install, uninstall

REPO = "capstan-samples/hello-web"
READ = {"contents": "read"}


def _run(server: RunningServer, work: object) -> object:
    async def main() -> object:
        async with open_git_host(server.settings) as client:
            return await work(client)  # type: ignore[operator]

    return asyncio.run(main())


def test_a_token_is_reused_per_scope_until_half_an_hour_is_left(server: RunningServer) -> None:
    installation_id = sandbox_install(server)

    async def work(client: GitHubAppClient) -> None:
        together = await asyncio.gather(
            *(client.installation_token(installation_id, ["hello-web"], READ) for _ in range(5))
        )
        first = together[0]
        assert {token.token for token in together} == {first.token}  # asked at once: one mint
        again = await client.installation_token(installation_id, ["hello-web"], READ)
        assert again.token == first.token
        other_repo = await client.installation_token(installation_id, ["hello-worker"], READ)
        other_rights = await client.installation_token(
            installation_id, ["hello-web"], {"metadata": "read"}
        )
        assert (
            len({first.token, other_repo.token, other_rights.token}) == 3
        )  # a scope of its own each
        fresh = await client.create_installation_token(installation_id, ["hello-web"], READ)
        assert fresh.token != first.token  # `create_installation_token` always mints

        left = first.expires_at - datetime.now(UTC)
        client.now = lambda: datetime.now(UTC) + left - TOKEN_MIN_LIFE + timedelta(seconds=1)
        later = await client.installation_token(installation_id, ["hello-web"], READ)
        assert later.token != first.token  # less than half an hour left: minted anew
        assert (await client.branch_head(installation_id, REPO, "main")) is not None

    _run(server, work)


def test_a_refused_token_is_minted_anew_once(server: RunningServer) -> None:
    installation_id = sandbox_install(server)
    # A repository of its own, so that the failures injected for it meet this test's calls and
    # no other's (the server's reconcilers read the sample repositories for other tests).
    repo = new_repository(server, installation_id, default_branch="main")
    name = repo.split("/", 1)[1]

    async def work(client: GitHubAppClient) -> None:
        kept = await client.installation_token(installation_id, [name], READ)
        inject_failures(server, 401, path=f"/api/repos/{repo}/")
        sha = await client.branch_head(installation_id, repo, "main")
        assert len(sha) == 40
        now = await client.installation_token(installation_id, [name], READ)
        assert now.token != kept.token  # the refused one is forgotten
        inject_failures(server, 401, count=2, path=f"/api/repos/{repo}/")
        with pytest.raises(CredentialsRefused):  # refused again with a new token: no loop
            await client.branch_head(installation_id, repo, "main")

    _run(server, work)


def test_a_kept_token_does_not_outlive_its_installation(server: RunningServer) -> None:
    installation_id = sandbox_install(server)

    async def work(client: GitHubAppClient) -> None:
        await client.branch_head(installation_id, REPO, "main")  # a token kept for the scope
        await client.list_repositories(installation_id)
        uninstall(server, installation_id)
        with pytest.raises(NoSuchInstallation):
            await client.branch_head(installation_id, REPO, "main")
        with pytest.raises(NoSuchInstallation):
            await client.list_repositories(installation_id)

    _run(server, work)
