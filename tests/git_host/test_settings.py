"""The git host settings `--dev` fills in: the sandbox app's OAuth client, kept across starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from capstan.config import GitHostMode, Settings
from tests.git_host.flow import install
from tests.harness import Org, start_server


def test_dev_settings_have_an_oauth_client_kept_in_the_data_dir(tmp_path: Path) -> None:
    first = Settings.for_dev(data_dir=tmp_path, _env_file=None)
    again = Settings.for_dev(data_dir=tmp_path, _env_file=None)
    assert first.git_host is GitHostMode.sandbox
    assert first.github_client_id == "Iv1.capstan-dev"
    assert first.github_client_secret is not None and again.github_client_secret is not None
    secret = first.github_client_secret.get_secret_value()
    assert len(secret) >= 40
    assert again.github_client_secret.get_secret_value() == secret
    stored = tmp_path / "git_host_client_secret"
    assert stored.read_text() == secret and oct(stored.stat().st_mode & 0o777) == "0o600"


def test_configured_oauth_client_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CAPSTAN_GITHUB_CLIENT_ID", "Iv1.from-env")
    monkeypatch.setenv("CAPSTAN_GITHUB_CLIENT_SECRET", "secret-from-env")
    settings = Settings.for_dev(data_dir=tmp_path, _env_file=None)
    assert settings.github_client_id == "Iv1.from-env"
    assert settings.github_client_secret is not None
    assert settings.github_client_secret.get_secret_value() == "secret-from-env"
    assert "secret-from-env" not in repr(settings)
    assert not (tmp_path / "git_host_client_secret").exists()


def test_the_install_flow_works_with_dev_settings(
    tmp_path: Path, sandbox_cloud_url: str | None
) -> None:
    server = start_server(
        lambda base_url: Settings.for_dev(
            data_dir=tmp_path,
            base_url=base_url,
            sandbox_cloud_url=sandbox_cloud_url,
            _env_file=None,
        ),
        "sqlite",
    )
    member: Org | None = None
    try:
        member = server.new_org()
        installation_id = install(member)
        response = member.api.get("/api/git_host/installations")
        assert [i["installation_id"] for i in response.json()["installations"]] == [installation_id]
    finally:
        if member is not None:
            member.close()
        server.stop()
