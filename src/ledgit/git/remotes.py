"""Talking to a remote through the ``git`` CLI, unattended (DESIGN §4, §13): the environment
that never stops for a password, and what ``git push --porcelain`` says of one ref. Shared by
remote leases (:mod:`ledgit.git.leases`) and the sync's transport
(:mod:`ledgit.git.transport`); imports no pygit2, so a claim does not pay for it.
"""

from __future__ import annotations

import os
from typing import NamedTuple

from ledgit.git.repository import no_git_env


class PushOutcome(NamedTuple):
    """What the remote said of one ref: ``ok`` (the ref now holds what was pushed, or is
    deleted), ``flag`` (``git push --porcelain``'s flag: ``*``, ``+``, ``-``, ``=``, `` ``,
    ``!``; empty when there was no status line), ``reason`` (e.g. ``stale info``, ``remote
    rejected``, ``fetch first``), ``detail`` (the remote's message: its ``remote:`` lines and
    the reason), ``reached`` (False: the remote could not be reached at all; ``detail`` holds
    the transport's last error line)."""

    ok: bool
    flag: str
    reason: str
    detail: str
    reached: bool

    @property
    def raced(self) -> bool:
        """The push lost a race: the ref was not at the expected old value (the lease), or
        moved to something ours does not contain."""
        return not self.ok and self.reached and (
            "stale info" in self.reason or "fetch first" in self.reason
            or "non-fast-forward" in self.reason or "cannot lock ref" in self.detail)


def unattended_env() -> dict[str, str]:
    """The environment of a ``git fetch``/``git push`` that must never stop for a password or
    a host-key question (an agent's sync, a lease): ``GIT_TERMINAL_PROMPT=0`` and SSH in
    batch mode, messages in the C locale (they are read)."""
    return {**no_git_env(), "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", "LANGUAGE": "",
            "GIT_SSH_COMMAND": os.environ.get("GIT_SSH_COMMAND", "ssh -o BatchMode=yes")}


def push_outcome(out: str, err: str, ref: str) -> PushOutcome:
    """The outcome for ``ref`` from ``git push --porcelain``'s stdout and stderr
    (git-push(1) "OUTPUT": ``<flag> TAB <from>:<to> TAB <summary> (<reason>)``)."""
    remote_says = [line.removeprefix("remote:").strip() for line in err.splitlines()
                   if line.startswith("remote:") and line.removeprefix("remote:").strip()]
    for line in out.splitlines():
        parts = line.split("\t")
        if len(parts) >= 3 and parts[1].endswith(":" + ref):
            flag, summary = parts[0], parts[2]
            reason = ""
            if "(" in summary and summary.endswith(")"):
                reason = summary[summary.index("(") + 1:-1]
            ok = flag in ("*", "+", "-", "=", " ")
            text = summary.strip("[]") if not reason else summary
            detail = "; ".join([*remote_says, text]) if not ok else ""
            return PushOutcome(ok, flag, reason or summary.strip("[]"), detail, True)
    return PushOutcome(False, "", "", last_error(err, "git push failed"), False)


def last_error(err: str, default: str) -> str:
    """The line of git's stderr ``err`` that says what failed (its first ``fatal:`` or
    ``error:`` line, else its first line), without the prefix; ``default`` when empty."""
    lines = [line.strip() for line in err.splitlines() if line.strip()]
    fatal = [line for line in lines if line.startswith(("fatal:", "error:"))]
    return (fatal or lines or [default])[0].removeprefix("fatal: ").removeprefix("error: ")
