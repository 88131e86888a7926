"""A board's ``config.yaml`` given as Git stores it (issue 36): the pre-commit hook checks the
staged one, the CI gate the one each commit holds, by the rules every command reads it with
(:func:`ledgit.storage.config.parse_config`). Apart from :mod:`ledgit.integration.taskcheck`,
which the reference-transaction hook loads and which therefore loads no storage module."""

from __future__ import annotations

from ledgit.core.errors import LedgitError
from ledgit.integration.taskcheck import LEDGIT_DIR, Finding, split_located
from ledgit.storage.config import CONFIG_NAME, parse_config

RULE = "config"


def config_path(prefix: str) -> str:
    """The repository path of the config of the board at ``prefix`` (``""``, ``"sub/"``)."""
    return f"{prefix}{LEDGIT_DIR}/{CONFIG_NAME}"


def check_config(path: str, data: bytes | None, commit: str | None = None) -> list[Finding]:
    """One ``config`` finding naming the line and the setting when ``data`` (the bytes of
    the config at ``path``; None: absent, the defaults) is not a config every command
    reads; else none."""
    if data is None:
        return []
    try:
        parse_config(data, path)
    except LedgitError as exc:
        line, message = split_located(exc.message, path)
        return [Finding(path, line, RULE, message, commit)]
    return []
