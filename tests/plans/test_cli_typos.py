"""`capstan plan` and `apply` name a capstan.yaml's unknown key as the file does, with the closest
known one."""

from __future__ import annotations

from pathlib import Path

from tests.apps.helpers import WEB_REPO, new_shop
from tests.cli.helpers import Cli
from tests.harness import Org

TYPO = f"""
web_servers:
  api:
    repo: {WEB_REPO}
    branch: main
    cpu: 256
    memroy: 512
cachs:
  sessions: {{storage_limit_mb: 128}}
"""


def test_an_unknown_key_is_named_with_the_closest_known_one(connected: Org, tmp_path: Path) -> None:
    shop = new_shop(connected)
    cli = Cli(tmp_path / "config", url=connected.server.base_url, token=connected.token)
    assert cli.run("use", shop.project["hostname_suffix"]).exit_code == 0
    path = tmp_path / "capstan.yaml"
    path.write_text(TYPO)
    for command in (("plan",), ("apply", "--yes")):
        result = cli.run(*command, "-f", str(path))
        assert result.exit_code == 1, result.output
        assert "unknown field 'web_servers.api.memroy' (did you mean 'memory'?)" in result.stderr, (
            result.stderr
        )
        assert "unknown field 'cachs' (did you mean 'caches'?)" in result.stderr
        assert "Extra inputs" not in result.stderr
        # Each sentence once: the details the message says are not repeated after it.
        assert result.stderr.count("did you mean 'memory'") == 1, result.stderr
    assert shop.org.api.get(f"{shop.base}/web_servers").json() == {"web_servers": []}
