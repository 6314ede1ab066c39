"""`capstan worker` started alone (no `create_app` in its process) runs every kind's reconcilers
and reads the same kinds — the same network users and task-role grants — as the API process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from capstan.app import create_app
from capstan.config import Settings
from capstan.registry import reconcilers
from capstan.workers import make_runtime

WORKER_ALONE = """
import json, sys
from capstan.config import Settings
from capstan.registry import reconcilers
from capstan.workers import make_runtime

runtime = make_runtime(None, None, None, Settings(_env_file=None, secret_key="x" * 40))
print(json.dumps({
    "create_app_loaded": "capstan.app" in sys.modules,
    "kinds": [kind.name for kind in runtime.kinds],
    "queues": sorted(r.kind for r in reconcilers(runtime)),
    "grants": [kind.name for kind in runtime.kinds if kind.task_grants is not None],
    "network_users": [kind.name for kind in runtime.kinds if kind.network_users is not None],
}))
"""


def _what_it_runs(kinds: Any, queues: list[str]) -> dict[str, Any]:
    return {
        "create_app_loaded": False,
        "kinds": [kind.name for kind in kinds],
        "queues": sorted(queues),
        "grants": [kind.name for kind in kinds if kind.task_grants is not None],
        "network_users": [kind.name for kind in kinds if kind.network_users is not None],
    }


def test_a_worker_alone_sees_the_kinds_create_app_sees(tmp_path: Path) -> None:
    alone = subprocess.run(
        [sys.executable, "-c", WORKER_ALONE],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert alone.returncode == 0, alone.stderr
    seen_alone = json.loads(alone.stdout)

    app = create_app(Settings(_env_file=None, secret_key="x" * 40))
    runtime = make_runtime(None, None, None, app.state.settings, app.state.kinds)  # type: ignore[arg-type]
    seen_by_app = _what_it_runs(app.state.kinds, [r.kind for r in reconcilers(runtime)])

    assert seen_alone == seen_by_app
    # Not vacuous: the API process's kinds run reconcilers, grant the task role and use the
    # network — what an empty registry in a worker process used to lose.
    assert seen_by_app["grants"] and seen_by_app["network_users"]
    assert "project_network" in seen_by_app["queues"]
