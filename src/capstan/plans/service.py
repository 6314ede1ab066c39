"""Planning and applying a capstan.yaml: the difference between a project and its file, what it
does to the monthly run-rate, and writing it.

A plan compares the file with the project's live resources by name (services by kind and name,
caches by their `name` label, databases by name, buckets by label) and lists what would be
created, changed field by field, and deleted — deleted only with `prune`; without it, what the
file does not name is left alone and listed as such. A plan computes; it writes nothing and
takes no write lock: it checks every step with the rule functions the API's service functions
apply (`plans/check.py`), in apply's order, so it refuses what apply would refuse, with the
same error. Apply checks the same way, asking the git host and the cloud what its steps need
before it writes, then writes every change through the same service functions the API's
endpoints use, in the request's one transaction, which waits on no network: a change the API
would refuse fails the whole apply, and nothing is written.

Errors name the field as the file does: `web_servers.api.memory`.

A service's variable may be `{database: NAME}`: a database of the file or of the project, stored
as the API's `value_from` reference by the database's id. The id of a database the same apply
creates is known only once it is written, so databases are written before services and the
reference is resolved, by name, when the service's environment is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from capstan.auth.principal import Principal
from capstan.cloud.driver import Cloud
from capstan.crypto import SecretBox
from capstan.plans.check import check
from capstan.plans.diff import make_plan
from capstan.plans.schemas import Applied, CapstanFile, Plan, StartedDeployment
from capstan.plans.steps import Planned
from capstan.plans.write import require_secrets, write
from capstan.registry import ResourceKind

NO_CHANGES = "No changes: the project already matches the file."


async def _planned(
    session: AsyncSession,
    caller: Principal,
    box: SecretBox,
    project_id: str,
    document: CapstanFile,
    *,
    prune: bool,
) -> Planned:
    # What authenticating the caller may have written (a browser session's sliding expiry) is
    # committed first, so that nothing of this request holds the write lock while the plan
    # reads and asks the git host.
    await session.commit()
    return await make_plan(session, caller, project_id, document, prune=prune, box=box)


async def plan(
    session: AsyncSession,
    caller: Principal,
    cloud: Cloud,
    git_host: Any,
    box: SecretBox,
    project_id: str,
    document: CapstanFile,
    *,
    prune: bool,
    kinds: Sequence[ResourceKind],
    domain: str,
) -> Plan:
    """What apply would do, and what it would cost: computed, checked, nothing written."""
    planned = await _planned(session, caller, box, project_id, document, prune=prune)
    await check(session, caller, cloud, git_host, planned, kinds=kinds, domain=domain)
    return planned.plan


async def apply(
    session: AsyncSession,
    caller: Principal,
    cloud: Cloud,
    git_host: Any,
    box: SecretBox,
    project_id: str,
    document: CapstanFile,
    *,
    prune: bool,
    kinds: Sequence[ResourceKind],
    domain: str,
) -> Applied:
    """Write the file's whole desired state in the request's one transaction, once every step
    has been checked: a step the API refuses fails the request, and the transaction (every step
    before it) rolls back."""
    planned = await _planned(session, caller, box, project_id, document, prune=prune)
    require_secrets(planned.steps)
    answers = await check(session, caller, cloud, git_host, planned, kinds=kinds, domain=domain)
    deployments: list[StartedDeployment] = []
    if planned.steps:
        deployments = await write(
            session,
            caller,
            cloud,
            answers,
            box,
            planned.project,
            planned.steps,
            kinds=kinds,
            domain=domain,
        )
    changes = planned.plan.changes
    message = (
        NO_CHANGES
        if not changes
        else f"Applied {len(changes)} change{'s' if len(changes) != 1 else ''}."
    )
    return Applied(
        **planned.plan.model_dump(),
        applied=bool(changes),
        message=message,
        deployments=deployments,
    )
