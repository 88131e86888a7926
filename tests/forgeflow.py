"""Helpers for the forge tests: a bare repository standing for the forge, agents' and the
bot's clones, a forge's own merge (fast-forward, or a plain merge with no driver anywhere),
and the events a commit holds. Use with the ``git_env`` fixture of :mod:`gitutil`."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import yaml
from gitflow import commit_all, create, ledgit, new_repo
from gitutil import git

from ledgit.integration.workflows import workflow_text

#: What the tests' workflows install ledgit from (a pinned version: what an index would give).
SPEC = "ledgit==0.1.0"


class Forge(NamedTuple):
    bare: Path  # the forge's repository
    agent: Path  # a clone the agents work in (one branch at a time)
    bot: Path  # the clone the workflow runs the command in (no ledgit install)
    shared: list[str]  # task ids every agent touches some of


def make_forge(root: Path, shared: int = 3) -> Forge:
    """A forge (bare) whose ``main`` holds a board with ``shared`` tasks and a code file
    ``src/app.txt``, and two clones of it; nobody ran ``ledgit install`` (the board's
    ``.gitattributes`` is not committed either: a clone that never ran it)."""
    seed = new_repo(root / "seed", install=False)
    ids = [create(seed, f"shared task {n}", "--by", "seed") for n in range(shared)]
    (seed / "src").mkdir()
    (seed / "src" / "app.txt").write_text("line one\nline two\nline three\n")
    commit_all(seed, "shared tasks and the app")
    bare = root / "forge.git"
    git("init", "-q", "--bare", str(bare), cwd=root)
    git("push", "-q", str(bare), "main:main", cwd=seed)
    agent, bot = root / "agent", root / "bot"
    git("clone", "-q", str(bare), str(agent), cwd=root)
    git("clone", "-q", str(bare), str(bot), cwd=root)
    return Forge(bare, agent, bot, ids)


def agent_branch(forge: Forge, name: str, n: int, *, extra: int = 0) -> str:
    """Agent ``n`` makes branch ``name`` from the forge's ``main``: edits two of the shared
    tasks (a label, a priority, a note), creates a task of its own, commits, pushes. Returns
    the pushed tip."""
    agent = forge.agent
    git("fetch", "-q", "origin", cwd=agent)
    git("switch", "-q", "-C", name, "origin/main", cwd=agent)
    by = f"agent-{n}"
    touched = [forge.shared[n % len(forge.shared)], forge.shared[(n + 1) % len(forge.shared)]]
    for k, tid in enumerate(dict.fromkeys(touched)):
        ledgit(agent, "update", tid, "--label", f"a{n}", "--priority", str((n + k) % 5),
               "--note", f"agent {n} was here", "--by", by)
    create(agent, f"agent {n}'s own task", "--by", by)
    for _ in range(extra):
        ledgit(agent, "update", touched[0], "--label", f"a{n}x", "--by", by)
    tip = commit_all(agent, f"agent {n}")
    git("push", "-q", "origin", f"{name}:{name}", cwd=agent)
    return tip


def is_ancestor(repo: Path, ancestor: str, commit: str) -> bool:
    return subprocess.run(["git", "merge-base", "--is-ancestor", ancestor, commit], cwd=repo,
                          check=False).returncode == 0


def tip(bare: Path, ref: str) -> str:
    return git("rev-parse", ref, cwd=bare)


def events_at(repo: Path, rev: str) -> set[tuple[str, str]]:
    """Every (task, event id) in the histories of commit ``rev``."""
    names = git("ls-tree", "-r", "--name-only", rev, "--", ".ledgit/history", cwd=repo)
    found: set[tuple[str, str]] = set()
    for path in names.splitlines():
        task = os.path.basename(path).removesuffix(".jsonl")
        for line in git("show", f"{rev}:{path}", cwd=repo).splitlines():
            if line.strip():
                found.add((task, json.loads(line)["id"]))
    return found


def forge_merge(bare: Path, branch: str, *, no_ff: bool) -> tuple[str, str]:
    """Merge ``branch`` into ``main`` as a forge does: a fast-forward when it can and
    ``no_ff`` is off, else a plain merge (``git merge-tree`` in the bare repository: no
    driver, no attributes, no hooks), which must be clean. Returns (old main, new main)."""
    old, head = tip(bare, "main"), tip(bare, branch)
    if not no_ff and is_ancestor(bare, old, head):
        git("update-ref", "refs/heads/main", head, old, cwd=bare)
        return old, head
    proc = subprocess.run(["git", "merge-tree", "--write-tree", old, head], cwd=bare,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, f"the forge cannot merge {branch}:\n{proc.stdout}"
    tree = proc.stdout.splitlines()[0]
    merged = git("commit-tree", tree, "-p", old, "-p", head, "-m",
                 f"Merge pull request {branch}", cwd=bare)
    git("update-ref", "refs/heads/main", merged, old, cwd=bare)
    return old, merged


def gate(bare: Path, spec: str) -> None:
    """The CI gate on the forge (``ledgit verify --range``, in the bare repository): it
    must pass."""
    result = ledgit(bare, "verify", "--range", spec, code=None)
    assert result.code == 0, f"the gate failed on {spec}:\n{result.text}"


def run_workflow(bot: Path, tmp: Path, open_prs: list[str], *, event: str = "push",
                 head_ref: str = "") -> subprocess.CompletedProcess[str]:
    """The shipped workflow's ``ledgit forge update`` step, run as GitHub runs a ``run:``
    step (``bash --noprofile --norc -eo pipefail``) in the bot's clone, on a push to ``main``
    (or ``event``). What only GitHub has stands at the edge: ``gh pr list`` prints
    ``open_prs`` (the open same-repository pull requests), ``pip`` writes its arguments to
    ``tmp/pip-args`` and installs nothing (this ledgit is the installed one) and ``ledgit``
    runs this ledgit. The step's own ``env`` (LEDGIT_SPEC) is given as GitHub gives it."""
    doc = yaml.safe_load(workflow_text(spec=SPEC))
    [job] = doc["jobs"].values()
    script = job["steps"][-1]["run"]
    step_env = {k: str(v) for k, v in job["steps"][-1]["env"].items() if "${{" not in str(v)}
    tools = tmp / "workflow-bin"
    tools.mkdir(exist_ok=True)
    prs = tmp / "open-prs.txt"
    prs.write_text("".join(f"{name}\n" for name in open_prs))
    for name, body in (("gh", f"cat '{prs}'"),
                       ("pip", f"printf '%s\\n' \"$@\" > '{tmp / 'pip-args'}'"),
                       ("ledgit", f"exec {shlex.quote(sys.executable)} -m ledgit \"$@\"")):
        (tools / name).write_text(f"#!/bin/sh\n{body}\n")
        (tools / name).chmod(0o755)
    env = {**os.environ, **step_env, "PATH": f"{tools}{os.pathsep}{os.environ['PATH']}",
           "EVENT": event, "BASE": "main", "HEAD_REF": head_ref, "GH_TOKEN": "unused"}
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
                          cwd=bot, env=env, capture_output=True, text=True, check=False)


def outcome_lines(stdout: str) -> dict[str, str]:
    """``{branch: the rest of its line}`` from ``forge update``'s text output."""
    return dict(line.split(": ", 1) for line in stdout.splitlines() if ": " in line)
