"""`make aws-smoke`: an operator's end-to-end check of a deployed Capstan and the AWS account it
deploys into (`python -m capstan.aws_smoke --help`).

It drives the Capstan server the CLI is signed in to (`CAPSTAN_URL` / `CAPSTAN_TOKEN`, else
`capstan login`'s file) through the public API, with the cloud account already connected, and
looks at the account with the caller's own AWS credentials (boto3's default chain; an endpoint
given by `AWS_ENDPOINT_URL` is honoured by boto3 itself, which is how the tests point it at the
sandbox cloud):

1. refuses to start unless those credentials are for the account Capstan deploys into (the
   leftovers check would prove nothing in another one); without credentials it says so, deploys
   nothing and exits 0;
2. creates a throwaway project and in it a web server, a worker, a static website, a cache and a
   bucket, from the sample repositories (or the ones given), and waits for each to be ready;
3. checks each answers: the web server's URL serves (2xx/3xx); the site's URL serves its index
   (HTML); the worker's logs have lines; the bucket takes, returns and removes an object written
   with the caller's credentials; the cache is available at the endpoint ElastiCache reports and
   its security group admits the worker's security group on that port (ElastiCache Serverless
   accepts TLS only). That last check is the network path a TLS connection from the worker takes,
   not a TLS handshake made from inside the worker: the smoke runs no code in the account, and
   the sandbox runs none in its tasks;
4. deletes everything, the project last, timing each resource until nothing tagged with its id
   is left in the account, and lists what is still tagged with the project (by
   `capstan.cloud.aws.inventory`, the tests' leftovers check);
5. prints a table of the timings and checks. Any failure cleans up all the same, prints the table
   so far and one sentence, and exits 1; a missing Capstan sign-in exits 2.

Timings are wall-clock seconds from the request to the first poll that saw the state (poll
interval `--poll-seconds`). It is a client of the API and a reader of the account, so it imports
the CLI's client and the read-only inventory, never a server package or the sandbox (the import
contracts in pyproject.toml say so).
"""

from __future__ import annotations

import argparse
import secrets
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from capstan import aws_smoke_checks as checks
from capstan import aws_smoke_report as report
from capstan.aws_smoke_checks import SmokeFailure
from capstan.aws_smoke_report import Row
from capstan.client import config as client_config
from capstan.client.api import Api, ApiFailure, CliError, connect, new_idempotency_key
from capstan.client.output import Output
from capstan.cloud.aws import names
from capstan.cloud.aws.inventory import Found, capstan_resources
from capstan.cloud.aws.session import AwsSession, Endpoint

SAMPLES = "capstan-samples"
DEFAULT_TIMEOUT_SECONDS = 2400.0  # CloudFront distributions and certificates take minutes
DEFAULT_POLL_SECONDS = 5.0

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_NOT_CONFIGURED = 2


@dataclass
class Made:
    """A resource the smoke test created: its API path, its kind's ready status, its row."""

    kind: str  # "web server", "worker", "static website", "cache", "bucket"
    id: str
    path: str
    ready_status: str
    row: Row
    created_at: float
    body: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Options:
    web_repo: str
    worker_repo: str
    site_repo: str
    timeout: float
    poll: float
    front: str | None


def parse(argv: list[str] | None) -> Options:
    parser = argparse.ArgumentParser(
        prog="python -m capstan.aws_smoke",
        description="Deploy a web server, a worker, a static website, a cache and a bucket "
        "through Capstan into the AWS account of your credentials, check each answers, delete "
        "everything and list leftovers by tag.",
    )
    parser.add_argument(
        "--web-repo",
        default=f"{SAMPLES}/hello-web@main",
        help="OWNER/NAME[@BRANCH] of the web server (default %(default)s)",
    )
    parser.add_argument(
        "--worker-repo",
        default=f"{SAMPLES}/hello-worker@main",
        help="OWNER/NAME[@BRANCH] of the worker, started with `python worker.py` "
        "(default %(default)s)",
    )
    parser.add_argument(
        "--site-repo",
        default=f"{SAMPLES}/hello-static@main",
        help="OWNER/NAME[@BRANCH] of the static website, built with `npm ci && npm run build` "
        "into dist (default %(default)s)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_SECONDS,
        help="seconds to wait for everything to be ready, and again for it to be gone "
        "(default %(default)s)",
    )
    parser.add_argument(
        "--poll-seconds", type=float, default=DEFAULT_POLL_SECONDS, dest="poll", help="poll every"
    )
    parser.add_argument(
        "--front",
        default=None,
        help="send the requests for service URLs to this address, with the URL's hostname as "
        "Host (the sandbox's dev server plays the load balancer and CloudFront); unset in AWS",
    )
    parsed = parser.parse_args(argv)
    return Options(
        web_repo=parsed.web_repo,
        worker_repo=parsed.worker_repo,
        site_repo=parsed.site_repo,
        timeout=parsed.timeout,
        poll=parsed.poll,
        front=parsed.front.rstrip("/") if parsed.front else None,
    )


def main(argv: list[str] | None = None) -> int:
    options = parse(argv)
    out = Output(json_mode=False)
    if boto3.session.Session().get_credentials() is None:
        out.say(
            "No AWS credentials found (boto3's default chain: AWS_* variables, ~/.aws, SSO, an "
            "instance or task role): the smoke test deployed nothing. Set credentials for the "
            "account Capstan deploys into and run `make aws-smoke` again."
        )
        return EXIT_OK
    try:
        api = connect(client_config.load())
    except (CliError, client_config.ConfigFileError) as error:
        out.error(f"{error} The smoke test deployed nothing.")
        return EXIT_NOT_CONFIGURED
    smoke = Smoke(api, options, out)
    try:
        smoke.run()
    except (SmokeFailure, CliError, ClientError, BotoCoreError, KeyboardInterrupt) as error:
        smoke.clean_up()
        smoke.print_table()
        out.error(f"The AWS smoke test failed: {report.sentence(error)}")
        return EXIT_FAILED
    finally:
        smoke.close()
        api.close()
    smoke.print_table()
    out.say(f"The AWS smoke test passed in {smoke.elapsed():.1f} s; nothing is left tagged.")
    return EXIT_OK


class Smoke:
    def __init__(
        self,
        api: Api,
        options: Options,
        out: Output,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.api = api
        self.options = options
        self.out = out
        self.clock = clock
        self.sleep = sleep
        self.started = clock()
        self.rows: list[Row] = []
        self.made: list[Made] = []
        self.project: dict[str, Any] | None = None
        self.project_row: Row | None = None
        self.aws: AwsSession | None = None
        self.cleaned = False
        self.leftovers = ""  # the sentence printed under the table once nothing is left

    def elapsed(self) -> float:
        return self.clock() - self.started

    # The run ------------------------------------------------------------------------------------

    def run(self) -> None:
        account_id = self._connected_account()
        self._create_project(account_id)
        self._create_resources()
        self._wait_ready()
        self._check_all()
        self._delete_all()
        self._no_leftovers()
        self.cleaned = True

    def _connected_account(self) -> str:
        connection = self.api.get("/api/cloud_account")
        account_id = connection.get("account_id") if isinstance(connection, dict) else None
        if not account_id or not connection.get("connected_at"):
            raise SmokeFailure(
                f"{self.api.url} has no cloud account connected; connect it (the dashboard's "
                "Settings, or POST /api/cloud_account/verification) first. Nothing was deployed."
            )
        # STS in the caller's configured region (the project's is not known yet).
        probe = AwsSession(Endpoint(region=boto3.session.Session().region_name or "us-east-1"))
        try:
            caller = probe.client("sts").get_caller_identity()
        finally:
            probe.close()
        if caller["Account"] != account_id:
            raise SmokeFailure(
                f"your AWS credentials are for account {caller['Account']}, but Capstan deploys "
                f"into {account_id}: the leftovers check needs credentials in {account_id}. "
                "Nothing was deployed."
            )
        self.out.progress(f"AWS account {account_id} as {caller['Arn']}; Capstan at {self.api.url}")
        return str(account_id)

    def _create_project(self, account_id: str) -> None:
        stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M")
        suffix = f"smoke-{secrets.token_hex(3)}"
        row = Row(f"project {suffix}")
        began = self.clock()
        self.project = self.api.post(
            "/api/projects",
            {"name": f"AWS smoke test {stamp}", "hostname_suffix": suffix},
            idempotency_key=new_idempotency_key(),
        )
        row.ready_s = self.clock() - began
        row.check = f"account {account_id}, region {self.project['region']}"
        self.rows.append(row)
        self.project_row = row
        self.aws = AwsSession(Endpoint(region=str(self.project["region"])))

    def _create_resources(self) -> None:
        web_repo, web_branch = _repo(self.options.web_repo)
        worker_repo, worker_branch = _repo(self.options.worker_repo)
        site_repo, site_branch = _repo(self.options.site_repo)
        size = {"cpu": 256, "memory": 512}
        self._create(
            "web server",
            "web_servers",
            {"name": "web", "repo": web_repo, "branch": web_branch, **size},
            "running",
        )
        self._create(
            "worker",
            "workers",
            {
                "name": "jobs",
                "repo": worker_repo,
                "branch": worker_branch,
                "start_command": "python worker.py",
                **size,
            },
            "running",
        )
        self._create(
            "static website",
            "static_websites",
            {
                "name": "docs",
                "repo": site_repo,
                "branch": site_branch,
                "build_command": "npm ci && npm run build",
                "publish_dir": "dist",
            },
            "running",
        )
        self._create("cache", "cache", {"storage_limit_mb": 256}, "available")
        self._create("bucket", "storage", {"name": "smoke"}, "active")

    def _create(self, kind: str, collection: str, body: dict[str, Any], ready: str) -> None:
        base = self._base()
        began = self.clock()
        created = self.api.post(f"{base}/{collection}", body, idempotency_key=new_idempotency_key())
        label = f"{kind} {body['name']}" if "name" in body and kind != "bucket" else kind
        row = Row(label)
        self.rows.append(row)
        self.made.append(
            Made(kind, created["id"], f"{base}/{collection}/{created['id']}", ready, row, began)
        )

    def _wait_ready(self) -> None:
        deadline = self.clock() + self.options.timeout
        waiting = list(self.made)
        while waiting:
            for made in list(waiting):
                made.body = self.api.get(made.path)
                status = made.body.get("status")
                if status == made.ready_status:
                    made.row.ready_s = self.clock() - made.created_at
                    waiting.remove(made)
                    self.out.progress(
                        f"{made.row.resource}: {status} after {made.row.ready_s:.1f} s"
                    )
                elif status == "failed":
                    made.row.check = "failed"
                    raise SmokeFailure(f"the {made.row.resource} failed: {self._why(made)}")
            if not waiting:
                return
            if self.clock() > deadline:
                late = ", ".join(f"{m.row.resource} ({m.body.get('status')})" for m in waiting)
                raise SmokeFailure(f"not ready after {self.options.timeout:.0f} s: {late}")
            self.sleep(self.options.poll)

    def _why(self, made: Made) -> str:
        if made.body.get("error"):
            return str(made.body["error"])
        if made.kind in ("web server", "worker", "static website"):
            deployments = self.api.get(f"{made.path}/deployments").get("deployments") or []
            for deployment in deployments:
                if deployment.get("status") == "failed" and deployment.get("error"):
                    return str(deployment["error"])
        return "no reason given"

    # The checks ---------------------------------------------------------------------------------

    def _check_all(self) -> None:
        checks: dict[str, Callable[[Made], str]] = {
            "web server": self._check_web_server,
            "worker": self._check_worker,
            "static website": self._check_site,
            "cache": self._check_cache,
            "bucket": self._check_bucket,
        }
        deadline = self.clock() + self.options.timeout
        for made in self.made:
            # DNS and edges settle after a resource reads ready: a check is retried to the deadline.
            while True:
                try:
                    made.row.check = "ok: " + checks[made.kind](made)
                    self.out.progress(f"{made.row.resource}: {made.row.check}")
                    break
                except SmokeFailure as failure:
                    if self.clock() > deadline:
                        made.row.check = f"FAILED: {failure}"
                        raise SmokeFailure(
                            f"the {made.row.resource} does not answer: {failure}"
                        ) from None
                    self.sleep(self.options.poll)

    def _check_web_server(self, made: Made) -> str:
        return checks.check_web_server(str(made.body.get("url") or ""), self.options.front)

    def _check_site(self, made: Made) -> str:
        return checks.check_site(str(made.body.get("url") or ""), self.options.front)

    def _check_worker(self, made: Made) -> str:
        lines = self.api.get(f"{made.path}/logs").get("lines") or []
        if not lines:
            raise SmokeFailure("its logs have no lines yet")
        return f"{len(lines)} log lines, the last: {str(lines[-1].get('message'))[:60]!r}"

    def _check_bucket(self, made: Made) -> str:
        return checks.check_bucket(self._aws(), str(made.body["arn"]), made.id)

    def _check_cache(self, made: Made) -> str:
        assert self.project is not None
        worker = next(m for m in self.made if m.kind == "worker")
        endpoint = str(made.body.get("endpoint") or "")
        return checks.check_cache(self._aws(), made.id, endpoint, self.project["id"], worker.id)

    # Deleting -----------------------------------------------------------------------------------

    def _delete_all(self) -> None:
        deadline = self.clock() + self.options.timeout
        began = self.clock()
        for made in self.made:
            self._delete(made.path)
        assert self.project is not None and self.project_row is not None
        project_id = str(self.project["id"])
        remaining = {made.id: made for made in self.made}
        while True:
            if remaining:
                tagged = {found.resource for found in self._tagged(project_id)}
                for resource_id in [r for r in remaining if r not in tagged]:
                    gone = remaining.pop(resource_id)
                    gone.row.deleted_s = self.clock() - began
                    self.out.progress(f"{gone.row.resource}: gone after {gone.row.deleted_s:.1f} s")
            if self.project_row.deleted_s is None and self._project_deleted():
                self.project_row.deleted_s = self.clock() - began
                self.out.progress(f"project: deleted after {self.project_row.deleted_s:.1f} s")
            if not remaining and self.project_row.deleted_s is not None:
                return
            if self.clock() > deadline:
                late = ", ".join(m.row.resource for m in remaining.values()) or "the project"
                raise SmokeFailure(
                    f"still there {self.options.timeout:.0f} s after deletion: {late}"
                )
            self.sleep(self.options.poll)

    def _delete(self, path: str) -> None:
        try:
            self.api.delete(path, idempotency_key=new_idempotency_key())
        except ApiFailure as failure:
            if failure.status != 404:  # gone already is what was asked
                raise

    def _project_deleted(self) -> bool:
        """DELETE the project: 409 while the removals behind it run, 204 once done."""
        assert self.project is not None
        try:
            self.api.delete(f"/api/projects/{self.project['id']}")
        except ApiFailure as failure:
            if failure.status == 404:
                return True
            if failure.status == 409:
                return False
            raise
        return True

    def _tagged(self, project_id: str) -> list[Found]:
        return capstan_resources(self._aws(), project_id)

    def _no_leftovers(self) -> None:
        assert self.project is not None
        left = self._tagged(str(self.project["id"]))
        tag = f"{names.PROJECT_TAG}={self.project['id']}"
        if left:
            listed = "; ".join(f"{found.kind} {found.id}" for found in left)
            raise SmokeFailure(f"{len(left)} resources are still tagged {tag}: {listed}")
        self.leftovers = f"Leftovers tagged {tag}: none."

    def clean_up(self) -> None:
        """After a failure: delete what was made (the project last), waiting as long as a run
        would, and list what is left. A failure here is reported, never raised over the first."""
        if self.cleaned or self.project is None:
            return
        self.cleaned = True
        self.out.progress("Cleaning up after the failure ...")
        try:
            self._delete_all()
            self._no_leftovers()
        except (SmokeFailure, CliError, ClientError, BotoCoreError) as error:
            self.out.error(
                f"Cleaning up did not finish: {report.sentence(error)} Delete the project "
                f"{self.project.get('hostname_suffix')} in Capstan and check the account."
            )

    # Helpers ------------------------------------------------------------------------------------

    def _base(self) -> str:
        assert self.project is not None
        return f"/api/projects/{self.project['id']}"

    def _aws(self) -> AwsSession:
        assert self.aws is not None
        return self.aws

    def print_table(self) -> None:
        if not self.rows:
            self.out.say("Nothing was deployed.")
            return
        for line in report.table(self.rows, self.elapsed()):
            self.out.line(line)
        if self.leftovers:
            self.out.say(self.leftovers)

    def close(self) -> None:
        if self.aws is not None:
            self.aws.close()
            self.aws = None


def _repo(spec: str) -> tuple[str, str]:
    repo, _, branch = spec.partition("@")
    return repo, branch or "main"


if __name__ == "__main__":
    sys.exit(main())
