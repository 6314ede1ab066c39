"""What answers at a web server's URL in the sandbox: `http://<name>.<suffix>.<domain>:<port>/`.

In AWS a browser resolves the service's hostname in the operator's zone, reaches the project's
load balancer, whose host-header rule forwards to the target group of the ECS service running the
deployment. The dev server has no such network, so it follows the same path through the sandbox
cloud's state: the operator's DNS record → the load balancer it aliases (in whichever sandbox
account owns it) → its listener on the request's port (80 for http, 443 for https: the request's
scheme, which a trusted proxy may give) → that listener's rules in priority order, the first
whose host-header matches, else its default action, as ELB evaluates them
(https://docs.aws.amazon.com/elasticloadbalancing/latest/application/listener-rules.html): a
redirect answers with its status and the `Location` its `RedirectActionConfig` builds
(https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_RedirectActionConfig.html),
a fixed response with its own, a forward → the target group, answering only when one
of its targets is healthy → the ECS service behind the group → the task definition its primary
deployment runs, tagged with Capstan's deployment id. The page shows that deployment: the
commit (the image's tag), when its task definition was registered, and the names of its
environment variables — never their values; and, for each database its variables name, whether
the service's running tasks connect to it with what they started with (`rds_passwords`: a
password RDS has since rotated is refused), as this process's simulator runs them (a sandbox
cloud in another process shows no such line).

A static website's hostname is an alias of its CloudFront distribution instead, and the front
plays CloudFront too: the operator's DNS record → the distribution with that domain name (in
whichever sandbox account owns it), enabled, deployed and carrying the hostname as an alternate
domain name → its S3 origin and origin path → the object, with the directory index the account's
viewer function adds (`/guide/` and `/guide` answer `/guide/index.html`) or, without the
function, the default root object for `/` alone. A missing object answers 403, as S3 behind an
origin access control does. CloudFront reads the bucket only as S3 would let it: through the
origin's access control, as the service `cloudfront.amazonaws.com` for that distribution, which
the bucket's policy must allow (`AWS:SourceArn`; `policy.evaluate` with a service principal);
otherwise 403. The front then reads the object as the account's administrator.

Whichever sandbox account owns a load balancer or distribution is found by entering the
organization's accounts in turn; the one found is entered first the next time (`_OWNERS`).

The front's calls are marked as the data plane's (`throttling.stand_in`): a browser's request
resolves a name and reaches a load balancer or CloudFront without any call AWS meters, so they
take nothing from an account's API rate limits.

`ServiceFrontMiddleware` serves both for requests whose Host is under the service domain (mounted
by `create_app` in sandbox mode only), and for a Host that is a customer's own domain, followed
through the sandbox's public DNS to its load balancer or distribution (`front_custom`); every
other request passes through untouched.
"""

from __future__ import annotations

import html
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio.to_thread
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from capstan.cloud.aws import route53
from capstan.cloud.aws.errors import aws_errors
from capstan.cloud.aws.session import AwsSession, Credentials, Endpoint
from capstan.cloud.errors import CloudError
from capstan.dev.accounts import MANAGEMENT, organization_access
from capstan.dev.front_balancer import (
    NoAnswer,
    Redirect,
    ViewerRequest,
    behind_load_balancer,
)
from capstan.dev.front_custom import destination, is_custom_host
from capstan_sandbox.cloud import policy, rds_passwords
from capstan_sandbox.cloud.throttling import stand_in


@dataclass(frozen=True)
class Answering:
    """The deployment a hostname's requests reach."""

    hostname: str
    account_id: str
    service_name: str
    deployment_id: str | None
    commit_sha: str | None
    registered_at: str | None
    variable_names: tuple[str, ...]
    # Each database the running tasks' variables name, and whether they connect to it.
    databases: tuple[rds_passwords.Connection, ...] = ()


@dataclass(frozen=True)
class SiteObject:
    """What a static website's distribution serves for one path."""

    body: bytes
    content_type: str


def answering(
    endpoint: Endpoint,
    operator: AwsSession,
    domain: str,
    hostname: str,
    path: str = "/",
    *,
    scheme: str = "http",
    query: str = "",
) -> Any:
    """`Answering` for a web server's `hostname`, `Redirect` when its load balancer's listener
    for `scheme` redirects, `SiteObject` for a static website's, or `NoAnswer` saying where the
    path stops (blocking calls)."""
    operator = _stand_in_session(endpoint, operator.credentials)
    zone_id = route53.find_zone(operator, domain)
    record = route53.find_record(operator, zone_id, hostname) if zone_id else None
    if record is None or "AliasTarget" not in record:
        return NoAnswer(404, f"No DNS record for {hostname}: no web server answers here.")
    dns_name = str(record["AliasTarget"]["DNSName"]).rstrip(".").lower()
    return answering_at(endpoint, dns_name, hostname, path, scheme=scheme, query=query)


def answering_at(
    endpoint: Endpoint,
    dns_name: str,
    hostname: str,
    path: str = "/",
    *,
    scheme: str = "http",
    query: str = "",
    custom: bool = False,
) -> Any:
    """What `answering` finds once `hostname` has led to `dns_name` (a load balancer's or a
    distribution's). A `custom` hostname (a customer's own, `front_custom`) reaches a load
    balancer's HTTPS listener only with a certificate of the listener covering it (SNI)."""
    if dns_name.endswith(".cloudfront.net"):
        return _site(endpoint, dns_name, hostname, path)
    if ".elb." not in dns_name:
        return NoAnswer(
            502,
            f"{hostname} is served by {dns_name}, neither a load balancer nor a CloudFront "
            "distribution; the sandbox front shows web servers and static websites only.",
        )
    region = dns_name.split(".elb.")[0].rsplit(".", 1)[-1]
    request = ViewerRequest(scheme, hostname, path, query)
    owned: tuple[str, dict[str, Any] | NoAnswer | Redirect] | None = _in_its_account(
        endpoint,
        dns_name,
        lambda admin: behind_load_balancer(
            admin, region, dns_name, request, certificate_needed=custom
        ),
    )
    if owned is None:
        return NoAnswer(502, f"The load balancer {dns_name} that {hostname} points to is gone.")
    account_id, found = owned
    if isinstance(found, NoAnswer | Redirect):
        return found
    databases = _databases(account_id, region, found.pop("service_arn"))
    return Answering(hostname=hostname, account_id=account_id, databases=databases, **found)


def _databases(
    account_id: str, region: str, service_arn: str
) -> tuple[rds_passwords.Connection, ...]:
    """Per database the service's running tasks name, the first refusal among them (or a
    connection that succeeds); nothing when this process's simulator does not run the service."""
    from capstan_sandbox.cloud.simulator import simulator

    running = simulator().ecs.services.get((account_id, region, service_arn))
    found: dict[str, rds_passwords.Connection] = {}
    for task in list(running.tasks) if running is not None else []:
        if not task.healthy:
            continue
        for connection in rds_passwords.connections(account_id, region, task.environment):
            seen = found.get(connection.variable)
            if seen is None or (seen.error is None and connection.error is not None):
                found[connection.variable] = connection
    return tuple(found[name] for name in sorted(found))


def _site(endpoint: Endpoint, dns_name: str, hostname: str, path: str) -> SiteObject | NoAnswer:
    owned: tuple[str, SiteObject | NoAnswer] | None = _in_its_account(
        endpoint, dns_name, lambda admin: _behind_distribution(admin, dns_name, hostname, path)
    )
    if owned is None:
        return NoAnswer(502, f"The distribution {dns_name} that {hostname} points to is gone.")
    return owned[1]


# The account each DNS name was last found in, by sandbox: looked in first. A sandbox may hold
# hundreds of accounts (the test suite makes one an organization), each a role to assume and a
# listing; the others are still looked in when the name is not there. Dropped all at once past
# `_OWNERS_KEPT` names.
_OWNERS: dict[tuple[str | None, str], str] = {}
_OWNERS_KEPT = 10_000
Found = TypeVar("Found")


def _in_its_account(
    endpoint: Endpoint, dns_name: str, look: Callable[[AwsSession], Found | None]
) -> tuple[str, Found] | None:
    """(account, what `look` found there, not None) in the first of the organization's accounts
    where it finds anything; None when it finds nothing in any."""
    key = (endpoint.url, dns_name)
    known = _OWNERS.get(key)
    for account_id in _accounts(endpoint, first=known):
        try:
            with stand_in(organization_access(endpoint, account_id)) as admin, aws_errors():
                found = look(admin)
        except CloudError:
            continue  # an account the organization cannot enter (its management account)
        if found is not None:
            if len(_OWNERS) >= _OWNERS_KEPT:
                _OWNERS.clear()
            _OWNERS[key] = account_id
            return account_id, found
    return None


def _behind_distribution(
    session: AwsSession, dns_name: str, hostname: str, path: str
) -> SiteObject | NoAnswer | None:
    cloudfront = session.client("cloudfront", region="us-east-1")
    summary = next(
        (
            item
            for page in cloudfront.get_paginator("list_distributions").paginate()
            for item in page["DistributionList"].get("Items") or []
            if str(item["DomainName"]).rstrip(".").lower() == dns_name
        ),
        None,
    )
    if summary is None:
        return None
    described = cloudfront.get_distribution(Id=summary["Id"])["Distribution"]
    config = described["DistributionConfig"]
    aliases = [alias.lower() for alias in config.get("Aliases", {}).get("Items") or []]
    if hostname not in aliases:
        return NoAnswer(403, f"The distribution {dns_name} has no alternate name {hostname}.")
    if not config.get("Enabled") or described.get("Status") != "Deployed":
        return NoAnswer(503, f"The distribution of {hostname} is not deployed and enabled yet.")
    origin = config["Origins"]["Items"][0]
    bucket = str(origin["DomainName"]).split(".s3.", 1)[0]
    behaviour = config.get("DefaultCacheBehavior", {})
    viewer_function = bool(behaviour.get("FunctionAssociations", {}).get("Items"))
    key = _object_key(path, viewer_function, str(config.get("DefaultRootObject") or ""))
    origin_path = str(origin.get("OriginPath") or "").strip("/")
    full_key = f"{origin_path}/{key}" if origin_path else key
    if not _cloudfront_may_read(session, described, origin, bucket, full_key):
        return NoAnswer(403, f"{hostname}{path}: AccessDenied (the bucket does not let it read).")
    try:
        with aws_errors():
            stored = session.client("s3").get_object(Bucket=bucket, Key=full_key)
    except CloudError:
        return NoAnswer(403, f"{hostname}{path}: AccessDenied (no such object in the origin).")
    return SiteObject(
        body=stored["Body"].read(),
        content_type=str(stored.get("ContentType") or "application/octet-stream"),
    )


def _cloudfront_may_read(
    session: AwsSession, distribution: dict[str, Any], origin: dict[str, Any], bucket: str, key: str
) -> bool:
    """CloudFront reads a private bucket through the origin's access control, as the service
    `cloudfront.amazonaws.com` for that distribution: only if the bucket's policy allows
    `s3:GetObject` to it, with `AWS:SourceArn` the distribution's ARN (S3 evaluates the policy
    as it would for any caller; without an access control CloudFront asks anonymously)."""
    if not origin.get("OriginAccessControlId"):
        return False
    try:
        with aws_errors():
            document = session.client("s3").get_bucket_policy(Bucket=bucket)["Policy"]
    except CloudError:
        return False  # no policy: nobody but the account reads the bucket
    _, partition, _, _, account, _ = str(distribution["ARN"]).split(":", 5)
    request = policy.Request(
        action="s3:GetObject",
        resource=f"arn:{partition}:s3:::{bucket}/{key}",
        context={
            "aws:sourcearn": [str(distribution["ARN"])],
            "aws:sourceaccount": [account],
        },
        principals=frozenset({"cloudfront.amazonaws.com"}),
    )
    return policy.evaluate([document], request) is policy.Decision.ALLOW


def _object_key(path: str, viewer_function: bool, root_object: str) -> str:
    """The object a viewer path asks for: what `capstan-site-index` (the account's viewer
    function, `cloud/aws/cloudfront_functions.py`) rewrites it to, or without it the default
    root object for `/` alone."""
    if viewer_function:
        if path.endswith("/"):
            path += "index.html"
        elif "." not in path.rsplit("/", 1)[-1]:
            path += "/index.html"
    elif path == "/" and root_object:
        path = "/" + root_object
    return path.lstrip("/")


_sessions: dict[tuple[Endpoint, str], AwsSession] = {}
_sessions_lock = threading.Lock()


def _stand_in_session(endpoint: Endpoint, credentials: Credentials | None) -> AwsSession:
    """The front's own session for `credentials` (the operator's, the organization's), kept for
    the process, its calls marked as the data plane's."""
    assert credentials is not None, "the front runs only with the sandbox cloud"
    key = (endpoint, credentials.access_key_id)
    with _sessions_lock:
        session = _sessions.get(key)
        if session is None or session.closed:
            session = _sessions[key] = stand_in(AwsSession(endpoint, credentials))
        return session


def _accounts(endpoint: Endpoint, *, first: str | None) -> Iterator[str]:
    """The organization's accounts, `first` (when given) before the others, which are only
    listed when it is not the one looked for."""
    if first is not None:
        yield first
    with aws_errors():
        organizations = _stand_in_session(endpoint, MANAGEMENT).client("organizations")
        listed = [
            account["Id"]
            for page in organizations.get_paginator("list_accounts").paginate()
            for account in page["Accounts"]
        ]
    yield from (account_id for account_id in listed if account_id != first)


class ServiceFrontMiddleware:
    """Answers requests for `<name>.<suffix>.<domain>` with the page of the deployment serving
    that hostname; passes every other request on."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        domain: str,
        nameserver: tuple[str, int] | None = None,
        sandbox_cloud_url: str | None = None,
        own_hosts: frozenset[str] = frozenset(),
    ) -> None:
        self.app = app
        self.suffix = "." + domain.strip(".").lower()
        # A customer's own hostname is followed through the public DNS (`front_custom`).
        self.nameserver = nameserver
        self.sandbox_cloud_url = sandbox_cloud_url
        self.own_hosts = own_hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        hostname = _hostname(scope) if scope["type"] == "http" else ""
        custom = (
            self.nameserver is not None
            and self.sandbox_cloud_url is not None
            and is_custom_host(hostname, self.suffix, self.own_hosts)
        )
        if not custom and not hostname.endswith(self.suffix):
            await self.app(scope, receive, send)
            return
        cloud = scope["app"].state.cloud
        path = str(scope.get("path") or "/")
        scheme = str(scope.get("scheme") or "http")
        query = bytes(scope.get("query_string") or b"").decode("latin-1")
        dns_name = ""
        if custom:
            assert self.nameserver is not None and self.sandbox_cloud_url is not None
            nameserver, cloud_url = self.nameserver, self.sandbox_cloud_url
            found_name: str | None = await anyio.to_thread.run_sync(
                lambda: destination(nameserver, cloud_url, hostname)
            )
            dns_name = found_name or ""
            if not dns_name:  # not a name the public DNS routes: this server's own pages
                await self.app(scope, receive, send)
                return
        try:
            found = await cloud.run(
                lambda: (
                    answering_at(
                        cloud.endpoint,
                        dns_name,
                        hostname,
                        path,
                        scheme=scheme,
                        query=query,
                        custom=True,
                    )
                    if custom
                    else answering(
                        cloud.endpoint,
                        cloud.operator,
                        self.suffix[1:],
                        hostname,
                        path,
                        scheme=scheme,
                        query=query,
                    )
                )
            )
        except CloudError as error:
            found = NoAnswer(502, f"The sandbox cloud could not be read: {error.code}.")
        response: Response
        if isinstance(found, Redirect):
            response = RedirectResponse(found.location, status_code=found.status_code)
        elif isinstance(found, Answering):
            response = HTMLResponse(_page(found))
        elif isinstance(found, SiteObject):
            response = Response(found.body, media_type=found.content_type)
        else:
            response = HTMLResponse(_refusal(hostname, found), status_code=found.status_code)
        await response(scope, receive, send)


def _hostname(scope: Scope) -> str:
    raw: bytes = dict(scope.get("headers", [])).get(b"host", b"")
    host = raw.decode("latin-1").lower()
    return host.rsplit(":", 1)[0] if not host.endswith("]") else host


def _page(found: Answering) -> str:
    names = "".join(f"<li><code>{html.escape(name)}</code></li>" for name in found.variable_names)
    rows = [
        ("Service", found.service_name),
        ("Deployment", found.deployment_id or "unknown"),
        ("Commit", found.commit_sha or "unknown"),
        ("Task definition registered", found.registered_at or "unknown"),
        ("Account", found.account_id),
    ]
    table = "".join(
        f'<tr><th scope="row">{html.escape(label)}</th><td data-field="{html.escape(label)}">'
        f"{html.escape(value)}</td></tr>"
        for label, value in rows
    )
    databases = "".join(
        f'<li data-database="{html.escape(item.variable)}"><code>{html.escape(item.url)}</code>: '
        + (
            "connects"
            if item.error is None
            else f'<span role="alert">{html.escape(item.error)}</span>'
        )
        + "</li>"
        for item in found.databases
    )
    return _SHELL.format(
        title=html.escape(found.hostname),
        body=f"<p>This deployment answers at <strong>{html.escape(found.hostname)}</strong> in the "
        f"sandbox cloud.</p><table>{table}</table><h2>Environment variables</h2>"
        f"<ul>{names or '<li>none</li>'}</ul><p>Values are never shown.</p>"
        + (f"<h2>Databases</h2><ul>{databases}</ul>" if databases else ""),
    )


def _refusal(hostname: str, found: NoAnswer) -> str:
    return _SHELL.format(
        title=html.escape(hostname), body=f"<p role='alert'>{html.escape(found.reason)}</p>"
    )


_SHELL = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>{title}</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 44rem; margin: 2rem auto;
 padding: 0 1rem">
<h1>{title}</h1>
{body}
</body></html>
"""
