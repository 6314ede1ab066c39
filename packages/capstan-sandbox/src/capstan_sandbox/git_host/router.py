"""The sandbox git host's HTTP face, under `/sandbox/git_host/` (sandbox mode only, public):

- `GET  /apps/{slug}/installations/new`            the app's install page: approves at once, and
                                                   (OAuth during installation) issues a code
- `POST /login/oauth/access_token`                 client id + secret + code -> user token
- `GET  /api/user/installations`                   user token: the installations it may administer
- `GET  /api/app`                                  app JWT
- `GET  /api/app/installations/{id}`               app JWT
- `DELETE /api/app/installations/{id}`             app JWT (uninstall)
- `POST /api/app/installations/{id}/access_tokens` app JWT
- `GET  /api/installation/repositories`            installation token
- `GET  /api/repos/{owner}/{repo}[/branches[/{b}]]` installation token (its repositories only)
- `PUT|DELETE /api/app/installations/{id}/suspended` app JWT (suspend, unsuspend)
- `GET  /api/app/hook/deliveries[/{id}]`           app JWT: the app's recent webhook deliveries
- `POST /api/app/hook/deliveries/{id}/attempts`    app JWT: redeliver (same body, same GUID)
- `POST /control/failures`                         not GitHub: the next API calls are slow or fail
- `POST /repos`                                    not GitHub: a new repository (optionally
                                                   readable by chosen installations only)
- `POST /repos/{owner}/{repo}/push`                not GitHub: a commit on a branch -> `push`
- `DELETE /repos/{owner}/{repo}/branches/{b}`      not GitHub: delete a branch -> `delete` + `push`
- `POST /repos/{owner}/{repo}/pulls/close`         not GitHub: close (or merge) a pull request ->
                                                   `pull_request` closed (+ `push` to the base)

Uninstalling, suspending and unsuspending deliver the `installation` webhook; the control
endpoints deliver theirs (signed, see `webhooks`) before they answer.

The `/api` routes answer in GitHub's shapes, errors included (`{message, documentation_url}`); the
OAuth endpoint answers as github.com does (a 200 with `error` when it refuses). Handlers are plain
functions (run in the thread pool) where they can be: the store locks and writes a file.
"""

from __future__ import annotations

from fastapi import APIRouter

from capstan_sandbox.git_host import control, deliveries, install_flow, rest_api
from capstan_sandbox.git_host.http import PREFIX

router = APIRouter(prefix=PREFIX, include_in_schema=False)
for part in (install_flow, rest_api, deliveries, control):
    router.include_router(part.router)
