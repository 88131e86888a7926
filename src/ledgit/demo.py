"""``ledgit demo``: a scripted session in a throwaway Git repository, printed as it runs.

Single worktree for now: init, two tasks, a claim, a state item, its acceptance, an update, a
completion and a verification. Every step is a real ``ledgit`` process, so what the demo shows
is what a user gets.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Sequence

import click


def _env(root: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("GIT_") and k not in ("LEDGIT_ROOT", "LEDGIT_ACTOR")}
    env.update({"GIT_CONFIG_NOSYSTEM": "1", "HOME": root, "NO_COLOR": "1"})
    return env


def _run(argv: Sequence[str], cwd: str, env: dict[str, str], show: bool = True) -> str:
    if show:
        click.echo(f"$ {shlex.join(argv)}")
    cmd = list(argv)
    if cmd[0] == "ledgit":
        cmd = [sys.executable, "-m", "ledgit", *cmd[1:]]
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    out = proc.stdout + proc.stderr
    if show and out:
        click.echo("  " + out.rstrip("\n").replace("\n", "\n  "))
    if proc.returncode != 0:
        raise click.ClickException(f"demo step failed (exit {proc.returncode}): "
                                   f"{shlex.join(argv)}")
    return proc.stdout.strip()


@click.command("demo")
@click.option("--keep", is_flag=True, help="Keep the throwaway repository and print its path.")
def demo_cmd(keep: bool) -> int:
    """Run a scripted session in a throwaway Git repository and print what it did."""
    tmp = tempfile.mkdtemp(prefix="ledgit-demo-")
    repo = os.path.join(tmp, "repo")
    os.mkdir(repo)
    env = _env(tmp)
    try:
        click.echo(f"# a throwaway repository: {repo}")
        _run(["git", "init", "-q"], repo, env)
        _run(["git", "config", "user.name", "demo"], repo, env, show=False)
        _run(["git", "config", "user.email", "demo@example.invalid"], repo, env, show=False)
        _run(["ledgit", "init"], repo, env)
        click.echo("\n# two tasks; the second depends on the first")
        first = _run(["ledgit", "create", "Make the dialer retry", "--goal",
                      "Dropped calls are retried once.", "--accept", "a dropped call is retried",
                      "--accept", "a second drop is reported", "--owner", "olga", "--priority",
                      "1"], repo, env)
        second = _run(["ledgit", "create", "Document retries", "--depends", first], repo, env)
        _run(["ledgit", "ready"], repo, env)
        click.echo("\n# an agent claims the first task and records what it learnt")
        _run(["ledgit", "claim", first, "--by", "agent-a", "--note",
              "reading dialer.py first"], repo, env)
        item = _run(["ledgit", "item", "add", first, "--by", "agent-a", "--kind", "fact",
                     "--text", "the dialer already has a retry hook", "--evidence",
                     "dialer.py:88"], repo, env)
        click.echo("\n# the owner accepts it: locked state survives handoffs")
        _run(["ledgit", "accept", first, item, "--by", "olga"], repo, env)
        _run(["ledgit", "update", first, "--by", "agent-a", "--next-action",
              "wire the hook", "--response", "hook found, wiring it"], repo, env)
        _run(["ledgit", "get", first, "--no-body"], repo, env)
        _run(["ledgit", "handoff", first], repo, env)
        click.echo("\n# done; the second task becomes ready")
        _run(["ledgit", "complete", first, "--by", "agent-a", "--response",
              "retry wired through the existing hook; tests added"], repo, env)
        _run(["ledgit", "ready"], repo, env)
        _run(["ledgit", "history", first], repo, env)
        _run(["ledgit", "verify", "--all"], repo, env)
        click.echo(f"\n# done: {second} is ready for the next agent")
    finally:
        if keep:
            click.echo(f"# kept: {repo}")
        else:
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)
    return 0
