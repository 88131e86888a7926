"""``ledgit demo``: three agents, three worktrees, one board -- Git as the concurrency layer.

In a throwaway repository (its own identity and config: it runs on a machine with no Git
identity), three agents each work in their own worktree (git-worktree(1)) on the same shared
tasks without seeing each other: they claim, update, add state items and complete. Then they
rebase onto ``main`` in turns and fast-forward it, as a merge queue would. Every field-level
merge the driver makes is printed (which fields came from whom, which claim won), the agent
that lost a contested claim is refused on its next heartbeat, and finally the CI gate checks
every commit of ``main``. Exit 0 only when the gate passes. Every step is a real ``ledgit``
or ``git`` process, so what the demo shows is what a user gets.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import click

AGENTS = ("agent-a", "agent-b", "agent-c")
IDENTITY = {"GIT_AUTHOR_NAME": "ledgit demo", "GIT_AUTHOR_EMAIL": "demo@ledgit.invalid",
            "GIT_COMMITTER_NAME": "ledgit demo", "GIT_COMMITTER_EMAIL": "demo@ledgit.invalid"}


class Demo:
    """The throwaway repository and how to run commands in it."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.main = tmp / "main"
        self.log = tmp / "merges.log"
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith("GIT_") and k not in ("LEDGIT_ROOT", "LEDGIT_ACTOR",
                                                              "LEDGIT_MERGE_LOG")}
        self.env.update(IDENTITY, GIT_CONFIG_NOSYSTEM="1", HOME=str(tmp), NO_COLOR="1",
                        GIT_CONFIG_GLOBAL=str(tmp / "gitconfig"),
                        LEDGIT_MERGE_LOG=str(self.log))
        self.titles: dict[str, str] = {}
        self.log_seen = 0

    def wt(self, agent: str) -> Path:
        return self.tmp / agent

    def run(self, argv: Sequence[str], cwd: Path, *, show: bool = True,
            expect: int | None = 0, quiet: bool = False) -> subprocess.CompletedProcess[str]:
        """Run one step; print it (``$ cmd`` in ``[where]``) and its output unless quiet."""
        where = cwd.name
        if show:
            click.echo(f"  [{where}] $ {shlex.join(argv)}")
        cmd = list(argv)
        if cmd[0] == "ledgit":
            cmd = [sys.executable, "-m", "ledgit", *cmd[1:]]
        proc = subprocess.run(cmd, cwd=cwd, env=self.env, capture_output=True, text=True,
                              check=False)
        out = (proc.stdout + proc.stderr).strip("\n")
        if show and out and not quiet:
            click.echo("      " + out.replace("\n", "\n      "))
        if expect is not None and proc.returncode != expect:
            if not show or quiet:
                click.echo(out, err=True)
            raise click.ClickException(f"demo step failed (exit {proc.returncode}, wanted "
                                       f"{expect}): {shlex.join(argv)}")
        return proc

    def ledgit(self, agent: str, *args: str, show: bool = True, expect: int | None = 0) -> str:
        cwd = self.main if agent == "main" else self.wt(agent)
        by = [] if agent == "main" else ["--by", agent]
        return self.run(["ledgit", *args, *by], cwd, show=show, expect=expect).stdout.strip()

    def git(self, cwd: Path, *args: str, show: bool = True, quiet: bool = True) -> str:
        return self.run(["git", *args], cwd, show=show, quiet=quiet).stdout.strip()

    def merges(self, agent: str) -> list[str]:
        """The driver's provenance lines since the last call, in words: during a rebase Git
        calls upstream "ours" and the commit being replayed "theirs" (git-rebase(1))."""
        try:
            lines = self.log.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []
        new, self.log_seen = lines[self.log_seen:], len(lines)
        split = [line.partition(": ")[::2] for line in new]
        # A contested claim gets one line ("claim contested: ..."), not also "claim from".
        contested = {path for path, what in split if what.startswith("claim contested")}
        out: list[str] = []
        for path, what in split:
            if path in contested and what.startswith("claim from "):
                continue
            m = re.search(r"([^/]+)\.(md|jsonl)$", path)
            task = m.group(1) if m else path
            name = f"{task} ({self.titles[task]})" if task in self.titles else task
            what = re.sub(r"\bfrom ours\b", "from main", what)
            what = re.sub(r"\bfrom theirs\b", f"from {agent}", what)
            kind = "history" if path.endswith(".jsonl") else "fields"
            out.append(f"{name} [{kind}]: {what}")
        return out


def _scenario(d: Demo) -> int:
    a, b, c = AGENTS
    click.echo("# 1. a board in a throwaway repository, wired into Git")
    d.tmp.joinpath("gitconfig").write_text("")
    d.main.mkdir()
    d.git(d.main, "init", "-q", "-b", "main")
    d.ledgit("main", "init")
    d.ledgit("main", "install", "--command", f"{shlex.quote(sys.executable)} -m ledgit")
    titles = ("Make the nightly export resumable", "Document the cursor file",
              "Add a crash test to CI")
    export = d.ledgit("main", "create", titles[0], "--priority", "1",
                      "--goal", "A crash mid-export resumes where it stopped.",
                      "--accept", "kill -9 during an export, restart: output equals a clean run",
                      "--body", "Notes go here.")
    docs = d.ledgit("main", "create", titles[1], "--priority", "3")
    crash = d.ledgit("main", "create", titles[2], "--priority", "2")
    d.titles = {export: titles[0], docs: titles[1], crash: titles[2]}
    d.git(d.main, "add", "-A")
    d.git(d.main, "commit", "-q", "-m", "three shared tasks")
    root = d.git(d.main, "rev-parse", "HEAD", show=False)

    click.echo("\n# 2. three agents, three worktrees (each gets its own index on checkout)")
    for agent in AGENTS:
        d.git(d.main, "worktree", "add", "-q", "-b", agent, str(d.wt(agent)))

    click.echo("\n# 3. they work at the same time; none sees the others' changes")
    d.ledgit(a, "claim", export, "--note", "cursor file first")
    time.sleep(0.002)  # b's claim is strictly later than a's
    d.ledgit(b, "claim", export, "--note", "I'll take the export too")
    d.ledgit(c, "claim", crash)
    d.ledgit(a, "item", "add", export, "--kind", "decision",
             "--text", "the cursor lives next to the output and is fsynced per batch")
    d.ledgit(b, "update", export, "--label", "reliability", "--next-action",
             "write the torn-batch detector")
    d.ledgit(c, "update", export, "--priority", "0", "--label", "ci")
    d.ledgit(b, "claim", docs)
    d.ledgit(b, "complete", docs, "--response", "docs/cursor.md describes the format")
    d.ledgit(c, "item", "add", crash, "--kind", "fact",
             "--text", "the CI runner allows kill -9 of child processes")
    d.ledgit(a, "update", crash, "--label", "needs-export")
    d.ledgit(c, "update", crash, "--response", "crash test drafted in ci/crash.sh")
    for agent in AGENTS:
        d.git(d.wt(agent), "add", "-A")
        d.git(d.wt(agent), "commit", "-q", "-m", f"{agent}: work on the shared tasks")

    click.echo("\n# 4. each agent rebases onto main in turn; main fast-forwards (a merge queue)")
    for agent in AGENTS:
        d.git(d.wt(agent), "rebase", "main")
        merged = d.merges(agent)  # what the merge driver did during this rebase
        for line in merged:
            click.echo(f"      merged: {line}")
        if not merged:
            click.echo("      (nothing to merge: main had not moved)")
        d.git(d.main, "merge", "-q", "--ff-only", agent)

    click.echo("\n# 5. the merged state on main")
    d.ledgit("main", "get", export, "--no-body")
    click.echo("\n# 6. the claim agent-b lost in the merge is refused (exit 6), not silently kept")
    d.git(d.wt(b), "rebase", "-q", "main", show=False)
    d.ledgit(b, "heartbeat", export, expect=6)
    d.ledgit(a, "heartbeat", export)

    click.echo("\n# 7. the CI gate over every commit of main")
    gate = d.run(["ledgit", "verify", "--range", f"{root}..main"], d.main, expect=None)
    full = d.run(["ledgit", "verify", "--rev", "main"], d.main, expect=None)
    ok = gate.returncode == 0 and full.returncode == 0
    count = len(d.git(d.main, "rev-list", f"{root}..main", show=False).split())
    click.echo(f"\n# {'verified' if ok else 'FAILED'}: {count} commits from three agents, "
               f"merged with no conflict and no lost event; "
               f"the gate {'passes' if ok else 'fails'}")
    return 0 if ok else 1


@click.command("demo")
@click.option("--keep", is_flag=True, help="Keep the throwaway repository and print its path.")
def demo_cmd(keep: bool) -> int:
    """Three agents in three worktrees share tasks; Git merges their work; the gate checks it."""
    tmp = Path(tempfile.mkdtemp(prefix="ledgit-demo-"))
    started = time.monotonic()
    try:
        code = _scenario(Demo(tmp))
        click.echo(f"# {time.monotonic() - started:.1f} s", err=True)
        return code
    finally:
        if keep:
            click.echo(f"# kept: {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
