"""The monorepo sample, `capstan-samples/hello-monorepo`: a web app in `services/api`, a worker in
`services/jobs` (each with its own Dockerfile) and a static site in `site` whose `npm run build`
leaves `site/dist`. Its `capstan-sandbox.json` declares every file (`image_files`, read by the
build tools' `git checkout`) and what the site's build produces (`files` under `publish_dir`,
which for this sample is the path from the repository's root)."""

from __future__ import annotations

from typing import Any

MONOREPO_SAMPLE = "hello-monorepo"
API_DIR = "services/api"
JOBS_DIR = "services/jobs"
SITE_DIR = "site"

_FILES = {
    "README.md": "# hello-monorepo\n\nA web app, a worker and a static site in one repository.\n",
    f"{API_DIR}/Dockerfile": (
        "FROM python:3.12-slim\nWORKDIR /app\nCOPY . /app\nEXPOSE 8080\n"
        'CMD ["python", "/app/app.py"]\n'
    ),
    f"{API_DIR}/app.py": "print('hello from services/api')\n",
    f"{JOBS_DIR}/Dockerfile": (
        'FROM python:3.12-slim\nWORKDIR /jobs\nCOPY . /jobs\nCMD ["python", "/jobs/worker.py"]\n'
    ),
    f"{JOBS_DIR}/worker.py": "print('hello from services/jobs')\n",
    f"{SITE_DIR}/package.json": (
        '{"name": "hello-monorepo-site", "private": true,\n'
        ' "scripts": {"build": "mkdir -p dist && cp index.html dist/"}}\n'
    ),
    f"{SITE_DIR}/index.html": "<!doctype html><title>hello-monorepo</title>\n",
}


def monorepo_build_file(branch: str) -> dict[str, Any]:
    page = (
        '<!doctype html>\n<html><head><meta charset="utf-8"><title>hello-monorepo</title></head>\n'
        "<body><h1>hello-monorepo</h1>\n<p>The site of a monorepo, built in site/.</p>\n"
        f"<p>Built from ${{SOURCE_REPO}}@${{SOURCE_COMMIT}}, branch {branch}.</p></body></html>\n"
    )
    return {
        "build": "succeed",
        "image_files": _FILES,
        "build_command": "npm ci && npm run build",
        "publish_dir": f"{SITE_DIR}/dist",
        "files": {"index.html": page},
    }
