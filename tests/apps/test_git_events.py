"""What apps do on git events (`capstan.apps.git_events`): pushes deploy the auto-deploy services of
their repository and branch with the pushed commit, a push during a deploy makes one more
deployment, and deleted branches and closed pull requests remove previews where the project asks
for it. Every test pushes to a repository of its own (see tests/git_host/events_helpers.py)."""

from __future__ import annotations

from capstan.cloud.aws import names
from capstan_sandbox.git_host.records import FIRST_COMMIT_MESSAGE
from tests.apps.helpers import Ready
from tests.apps.processes import account_sessions
from tests.git_host.events_helpers import (
    deployments,
    installation_of,
    new_repository,
    org_fixture,
    preview_push_shas,
    push,
    pushed_shas,
    recent_deliveries,
    wait_processed,
    wait_pushed,
    web_path,
    worker_path,
)
from tests.polling import wait_until

shop = org_fixture()
neighbour = org_fixture()


def test_a_push_deploys_the_auto_deploy_services_of_its_repository_and_branch(
    shop: Ready, neighbour: Ready
) -> None:
    server, org = shop.org.server, shop.org
    repo = new_repository(server, installation_of(org), installation_of(neighbour.org))
    other_repo = new_repository(server, installation_of(org))
    web = web_path(shop, repo=repo, auto_deploy=True)
    jobs = worker_path(shop, repo=repo, auto_deploy=True)
    manual = worker_path(shop, repo=repo)  # auto_deploy defaults to false
    elsewhere = worker_path(shop, repo=other_repo, auto_deploy=True)
    theirs = worker_path(neighbour, repo=repo, auto_deploy=True)
    # Pushed, and its deliveries processed, before any preview of it: none takes this push.
    wait_processed(server, *(d["guid"] for d in push(server, repo, "topic")["deliveries"]))
    previews = {
        path: org.api.post(f"{path}/previews", json={"branch": "topic"}).json()["id"]
        for path in (web, manual)
    }

    pushed = push(server, repo, "main")
    # One delivery per installation that can read the repository, each taken at once.
    assert len(pushed["deliveries"]) == 2
    assert {d["status_code"] for d in pushed["deliveries"]} == {202}
    sha = pushed["sha"]
    wait_pushed(org, web, sha)
    wait_pushed(org, jobs, sha)
    wait_pushed(neighbour.org, theirs, sha)  # any organization deploying it
    assert deployments(org, web)[0]["trigger"] == "push"  # the newest
    wait_processed(server, *(d["guid"] for d in pushed["deliveries"]))
    for path in (manual, elsewhere):
        assert pushed_shas(org, path) == [], path
    for preview_id in previews.values():
        assert preview_push_shas(server, preview_id) == []

    # Previews follow their branch, whatever their parent's auto_deploy; services on other
    # branches do not move.
    topic = push(server, repo, "topic")
    wait_processed(server, *(d["guid"] for d in topic["deliveries"]))
    for preview_id in previews.values():
        assert preview_push_shas(server, preview_id) == [topic["sha"]]
    for path in (web, jobs, manual):
        assert topic["sha"] not in pushed_shas(org, path)


def test_a_deployment_carries_its_commits_message(shop: Ready) -> None:
    """The message the git host gives for the deployed commit: the branch head's when a
    deployment reads it (a create, a redeploy), the pushed commit's for a push."""
    server, org = shop.org.server, shop.org
    repo = new_repository(server, installation_of(org), default_branch="main")
    jobs = worker_path(shop, repo=repo, auto_deploy=True)
    shop.wait_for(jobs, "running", timeout=60)
    [created] = deployments(org, jobs)
    assert created["commit_message"] == FIRST_COMMIT_MESSAGE

    message = "Fix the checkout total\n\nRounding happened per line, not per order."
    sha = push(server, repo, "main", breaks_build=False, message=message)["sha"]
    wait_pushed(org, jobs, sha)
    assert deployments(org, jobs)[0]["commit_message"] == message

    assert org.api.post(f"{jobs}/redeploy").status_code == 202
    redeploy = wait_until(
        lambda: (latest := deployments(org, jobs)[0])["commit_sha"] and latest,
        what="the redeploy to read the branch head",
    )
    assert (redeploy["trigger"], redeploy["commit_sha"]) == ("redeploy", sha)
    assert redeploy["commit_message"] == message


def test_a_push_during_a_deploy_makes_one_more_deployment_of_the_pushed_commit(
    shop: Ready,
) -> None:
    server, org = shop.org.server, shop.org
    repo = new_repository(server, installation_of(org), default_branch="main")
    jobs = worker_path(shop, repo=repo, auto_deploy=True)
    # While the first deployment (of main's head) is under way; this one builds and runs.
    sha = push(server, repo, "main", breaks_build=False)["sha"]

    shop.wait_for(jobs, "running", timeout=60)
    latest, first = deployments(org, jobs)
    assert (latest["trigger"], latest["status"], latest["commit_sha"]) == ("push", "running", sha)
    # The first never runs: it stays superseded, even if a reconcile pass was under way when the
    # push arrived (that pass loses on the deployment's status and starts over).
    assert (first["trigger"], first["status"]) == ("create", "superseded")
    # What runs is the image built from exactly that commit.
    account_id = org.api.get("/api/cloud_account").json()["account_id"]
    assert server.settings.sandbox_cloud_url
    with account_sessions(server.settings.sandbox_cloud_url, account_id) as (customer, _):
        ecs = customer.client("ecs")
        [service] = ecs.describe_services(
            cluster=names.cluster_name(shop.project["id"]),
            services=[names.service_name(jobs.rsplit("/", 1)[1])],
        )["services"]
        definition = ecs.describe_task_definition(taskDefinition=service["taskDefinition"])
        # The release keeps the image by digest: the digest the commit's tag named.
        (image,) = customer.client("ecr").describe_images(
            repositoryName=names.repository_name(jobs.rsplit("/", 1)[1]),
            imageIds=[{"imageTag": sha}],
        )["imageDetails"]
    running = definition["taskDefinition"]["containerDefinitions"][0]["image"]
    assert running.endswith(f"@{image['imageDigest']}") and latest["image"] == running


def test_deleted_branches_and_closed_pull_requests_remove_previews_when_the_project_asks(
    shop: Ready,
) -> None:
    server, org = shop.org.server, shop.org
    repo = new_repository(server, installation_of(org))
    jobs = worker_path(shop, repo=repo)

    def preview_of(branch: str) -> str:
        push(server, repo, branch)
        created = org.api.post(f"{jobs}/previews", json={"branch": branch})
        assert created.status_code == 201, created.text
        return f"{jobs}/previews/{created.json()['id']}"

    def delete_branch(branch: str) -> None:
        with server.client() as client:
            response = client.delete(f"/sandbox/git_host/repos/{repo}/branches/{branch}")
        assert response.status_code == 204, response.text
        deliveries = recent_deliveries(server, "delete")
        wait_processed(server, *(d["guid"] for d in deliveries[:1]))

    def close(branch: str, merged: bool) -> None:
        with server.client() as client:
            response = client.post(
                f"/sandbox/git_host/repos/{repo}/pulls/close",
                json={"head": branch, "merged": merged},
            )
        assert response.status_code == 200, response.text
        wait_processed(server, *(d["guid"] for d in response.json()["deliveries"]))

    # The setting is off by default: previews stay.
    kept = preview_of("old-idea")
    delete_branch("old-idea")
    assert org.api.get(kept).status_code == 200

    settings = {"git_settings": {"delete_previews_on_branch_delete": True}}
    assert org.api.patch(shop.base, json=settings).status_code == 200
    try:
        gone, merged = preview_of("gone"), preview_of("merged")
        delete_branch("gone")
        assert org.api.get(gone).status_code == 404
        # Merged or not, a closed pull request is the end of its branch's preview.
        close("merged", merged=True)
        assert org.api.get(merged).status_code == 404
        for path in (kept, jobs):  # other branches' previews, and the service, stay
            assert org.api.get(path).status_code == 200, path
    finally:
        settings["git_settings"]["delete_previews_on_branch_delete"] = False
        org.api.patch(shop.base, json=settings)
