"""The dashboard's browser tests: a live `capstan server --dev` on a free port with a fresh data
directory, driven by Playwright in Debian's headless `chromium` (Playwright's own browser
download is not used). Without chromium or Playwright every browser test is skipped, and the
summary says so in red.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

BIN = Path(sys.executable).parent
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
_skipped: list[str] = []


def _missing() -> str | None:
    if CHROMIUM is None:
        return "chromium is not installed (apt-get install -y chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright is not installed (pip install -e '.[browser]')"
    return None


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _skipped:
        terminalreporter.write_sep(
            "!", f"BROWSER TESTS SKIPPED: {_skipped[0]}", red=True, bold=True
        )


@dataclass
class DevServer:
    base_url: str
    data_dir: Path
    email: str
    password: str
    token: str
    process: subprocess.Popen[bytes]
    log: Path

    def api(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.base_url, timeout=60, headers={"Authorization": f"Bearer {self.token}"}
        )

    def create_user(self, email: str, password: str, organization: str) -> None:
        """Another user in another organization, as an operator adds one."""
        created = subprocess.run(
            [
                str(BIN / "capstan"),
                "admin",
                "create-user",
                "--email",
                email,
                "--password",
                password,
                "--name",
                "Other",
                "--organization",
                organization,
                "--dev",
                "--data-dir",
                str(self.data_dir),
            ],
            capture_output=True,
            env=_clean_env(self.data_dir),
            text=True,
        )
        assert created.returncode == 0, created.stdout + created.stderr


def _clean_env(data_dir: Path) -> dict[str, str]:
    env = {**os.environ, "CAPSTAN_DATA_DIR": str(data_dir)}
    for name in list(env):
        if name.startswith("CAPSTAN_") and name != "CAPSTAN_DATA_DIR":
            del env[name]  # a developer's own settings must not leak into the run
    return env


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def dev_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    missing = _missing()
    if missing:
        _skipped.append(missing)
        pytest.skip(f"BROWSER TESTS SKIPPED: {missing}")
    data_dir = tmp_path_factory.mktemp("dashboard-dev")
    port = _free_port()
    log = data_dir / "server.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            [
                *(str(BIN / "capstan"), "server", "--dev", "--port", str(port)),
                *("--data-dir", str(data_dir)),
            ],
            stdout=output,
            stderr=subprocess.STDOUT,
            env=_clean_env(data_dir),
        )
    base_url = f"http://127.0.0.1:{port}"
    try:
        server = _wait_for(process, base_url, data_dir, log)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()


def _wait_for(
    process: subprocess.Popen[bytes], base_url: str, data_dir: Path, log: Path
) -> DevServer:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"capstan server --dev exited:\n{log.read_text()[-3000:]}")
        text = log.read_text()
        sign_in = re.search(r"Dev sign-in: email (\S+)\s+password (\S+)", text)
        token = re.search(r"Dev API token \(shown once\): (\S+)", text)
        if sign_in and token:
            try:
                if httpx.get(f"{base_url}/sign-in", timeout=5).status_code == 200:
                    return DevServer(
                        base_url=base_url,
                        data_dir=data_dir,
                        email=sign_in[1],
                        password=sign_in[2],
                        token=token[1],
                        process=process,
                        log=log,
                    )
            except httpx.HTTPError:
                pass
        time.sleep(0.3)
    pytest.fail(f"capstan server --dev did not come up in 120 s:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="session")
def chromium(dev_server: DevServer) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox"]
        )
        yield browser
        browser.close()


def new_page(chromium: Any, dev_server: DevServer, viewport: dict[str, int] = DESKTOP) -> Any:
    context = chromium.new_context(base_url=dev_server.base_url, viewport=viewport)
    context.set_default_timeout(30_000)
    return context.new_page()


def sign_in(page: Any, email: str, password: str) -> None:
    page.goto("/sign-in")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile(r"/$|/\?"))


def ok(response: httpx.Response, *statuses: int) -> Any:
    assert response.status_code in statuses, response.text
    return response.json() if response.content else None


def connect_and_install(dev_server: DevServer) -> None:
    """The dev organization's cloud account connected and the git host app installed, through
    the API and the sandbox's own pages (what the tour does in the browser), unless they are."""
    with dev_server.api() as api:
        connection = ok(api.get("/api/cloud_account"), 200)
        if not connection["active"]:
            stack = ok(httpx.post(connection["setup_url"], timeout=60), 200)
            body = {
                "account_id": stack["account_id"],
                "role_name": stack["role_name"],
                "external_id": connection["external_id"],
            }
            ok(api.post("/api/cloud_account/verification", json=body), 200)
        if not ok(api.get("/api/git_host/installations"), 200)["installations"]:
            redirect = ok(api.post("/api/git_host/installation_setup"), 200)["redirect_url"]
            approved = httpx.get(redirect, timeout=60)
            assert approved.status_code == 302
            # Back in the client that started the flow: it holds the cookie the flow is bound to.
            assert api.get(approved.headers["location"]).status_code == 303


def signed_in(chromium: Any, dev_server: DevServer) -> Iterator[Any]:
    """A page of its own browser context, signed in as the dev server's user (a module's
    `page` fixture yields from it), closed after."""
    page = new_page(chromium, dev_server)
    sign_in(page, dev_server.email, dev_server.password)
    yield page
    page.context.close()


def project_with_web_server(dev_server: DevServer, name: str, suffix: str) -> dict[str, str]:
    """A project of its own with a running web server of `capstan-samples/hello-web`, made
    through the API: its id, its API base and the web server's id."""
    connect_and_install(dev_server)
    with dev_server.api() as api:
        body = {"name": name, "hostname_suffix": suffix}
        made = ok(api.post("/api/projects", json=body), 201)
        base = f"/api/projects/{made['id']}"
        web_body = {
            "name": "web",
            "repo": "capstan-samples/hello-web",
            "branch": "main",
            "cpu": 256,
            "memory": 512,
        }
        web = ok(api.post(f"{base}/web_servers", json=web_body), 201)
        deadline = time.monotonic() + 60
        while ok(api.get(f"{base}/web_servers/{web['id']}"), 200)["status"] != "running":
            assert time.monotonic() < deadline, "the web server did not reach running"
            time.sleep(0.5)
    return {"id": made["id"], "base": base, "web": web["id"]}
