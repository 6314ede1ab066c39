"""Where the CLI keeps its sign-in: `$XDG_CONFIG_HOME/capstan/config.toml` (else
`~/.config/capstan/config.toml`), mode 0600, holding the server's URL, the API token (and its id
when `capstan login` created it, so `logout` can revoke it) and the default project.

`CAPSTAN_URL` and `CAPSTAN_TOKEN` override the file (CI, scripts). This is the client's only
reader of environment variables, as `capstan.config` is the server's.
"""

from __future__ import annotations

import json
import os
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path

URL_VARIABLE = "CAPSTAN_URL"
TOKEN_VARIABLE = "CAPSTAN_TOKEN"  # noqa: S105 (the variable's name, not a secret)
DEFAULT_URL = "http://127.0.0.1:8000"
_KEYS = ("url", "token", "token_id", "project")


@dataclass(frozen=True)
class ClientConfig:
    url: str | None = None
    token: str | None = None
    # The id of the token when `capstan login` created it (logout revokes it); None when the
    # token was given with `--token`.
    token_id: str | None = None
    project: str | None = None

    def with_changes(self, **changes: str | None) -> ClientConfig:
        return replace(self, **changes)


def config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "capstan" / "config.toml"


def load_file() -> ClientConfig:
    """What the file holds (nothing when there is no file)."""
    path = config_path()
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        return ClientConfig()
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise ConfigFileError(f"Cannot read {path}: {error}") from error
    return ClientConfig(**{key: _text(data.get(key)) for key in _KEYS})


def load() -> ClientConfig:
    """The file, with `CAPSTAN_URL` and `CAPSTAN_TOKEN` over it."""
    stored = load_file()
    url = os.environ.get(URL_VARIABLE) or stored.url
    token = os.environ.get(TOKEN_VARIABLE)
    if token:
        # A token from the environment is not the one login created: never revoke by that id.
        return stored.with_changes(url=url, token=token, token_id=None)
    return stored.with_changes(url=url)


def save(config: ClientConfig) -> Path:
    """Write the file atomically, readable by its owner only (0600, directory 0700)."""
    path = config_path()
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    lines = [
        f"{key} = {json.dumps(value, ensure_ascii=False)}\n"  # a valid TOML basic string
        for key in _KEYS
        if (value := getattr(config, key)) is not None
    ]
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(descriptor, "w") as file:
            file.write("".join(lines))
        os.chmod(temporary, 0o600)  # whatever the umask or an older file said
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return path


class ConfigFileError(Exception):
    """The config file exists but cannot be read."""


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
