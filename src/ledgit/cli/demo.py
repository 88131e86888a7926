"""``ledgit demo``: three agents, three worktrees, one board -- Git as the concurrency layer.

In a throwaway repository (its own identity and config: it runs on a machine with no Git
identity), three agents each work in their own worktree (git-worktree(1)) on the same shared
tasks without seeing each other: they claim, update, add state items and complete. Then they
rebase onto ``main`` in turns and fast-forward it, as a merge queue would. The demo tells
what each agent did, what the merge driver decided for every field both sides changed (one
line each: who won and by which rule of docs/merge.md), that the agent which lost a contested
claim is refused on its next heartbeat, and the CI gate's verdict over every commit of
``main``. ``--verbose`` shows every command and its output and every field the driver
merged; ``--keep`` keeps the repository to explore. Exit 0 only when the gate passes. Every
step is a real ``ledgit`` or ``git`` process, so what the demo shows is what a user gets.
"""

from __future__ import annotations

import json
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
from typing import Any

import click

AGENTS = ("agent-a", "agent-b", "agent-c")
# The demo's own Git identity: the tasks on main are created by "lead" (its user.name).
GITCONFIG = ("[user]\n\tname = lead\n\temail = lead@ledgit.invalid\n"
             "[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n")
WIDTH = 100  # no line of the default output is longer (tests/test_demo.py)


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 1] + "…"


class Demo:
    """The throwaway repository and how to run commands in it."""

    def __init__(self, tmp: Path, *, verbose: bool = False) -> None:
        self.tmp = tmp
        self.main = tmp / "main"
        self.log = tmp / "merges.log"
        self.verbose = verbose
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("GIT_", "LEDGIT_"))}
        self.env.update(GIT_CONFIG_NOSYSTEM="1", HOME=str(tmp), NO_COLOR="1",
                        GIT_CONFIG_GLOBAL=str(tmp / "gitconfig"), LEDGIT_WATCH="0",
                        LEDGIT_MERGE_LOG=str(self.log))
        self.names: dict[str, str] = {}  # task id -> the story's short name
        self.log_seen = 0
        self.last_stderr = ""

    def wt(self, agent: str) -> Path:
        return self.main if agent == "main" else self.tmp / agent

    def say(self, line: str = "", *, verbose: bool = False) -> None:
        """Print a line of the story (``verbose``: only with --verbose)."""
        if self.verbose or not verbose:
            click.echo(line)

    def run(self, argv: Sequence[str], cwd: Path, *,
            expect: int | None = 0) -> subprocess.CompletedProcess[str]:
        """Run one step; with --verbose print it (``[where] $ cmd``) and its output."""
        if self.verbose:
            click.echo(f"  [{cwd.name}] $ {shlex.join(argv)}")
        cmd = list(argv)
        if cmd[0] == "ledgit":
            cmd = [sys.executable, "-m", "ledgit", *cmd[1:]]
        proc = subprocess.run(cmd, cwd=cwd, env=self.env, capture_output=True, text=True,
                              check=False)
        out = (proc.stdout + proc.stderr).strip("\n")
        self.last_stderr = proc.stderr.strip()
        if self.verbose and out:
            click.echo("      " + out.replace("\n", "\n      "))
        if expect is not None and proc.returncode != expect:
            if not self.verbose:
                click.echo(out, err=True)
            raise click.ClickException(f"demo step failed (exit {proc.returncode}, wanted "
                                       f"{expect}): {shlex.join(argv)}")
        return proc

    def ledgit(self, agent: str, *args: str, expect: int | None = 0) -> str:
        by = [] if agent == "main" else ["--by", agent]
        return self.run(["ledgit", *args, *by], self.wt(agent), expect=expect).stdout.strip()

    def git(self, cwd: Path, *args: str) -> str:
        return self.run(["git", *args], cwd).stdout.strip()

    def task(self, where: str, tid: str) -> dict[str, Any]:
        """The readout of ``tid`` in ``where`` (``ledgit get --json``), not shown."""
        verbose, self.verbose = self.verbose, False
        try:
            doc: dict[str, Any] = json.loads(self.run(["ledgit", "get", tid, "--json"],
                                                      self.wt(where)).stdout)
        finally:
            self.verbose = verbose
        return doc

    def merges(self) -> list[tuple[str, str]]:
        """The driver's lines (LEDGIT_MERGE_LOG) since the last call: (task id, what)."""
        try:
            lines = self.log.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []
        new, self.log_seen = lines[self.log_seen:], len(lines)
        out = []
        for line in new:
            path, _, what = line.partition(": ")
            m = re.search(r"([^/]+)\.(md|jsonl)$", path)
            out.append((m.group(1) if m else path, what))
        return out


def _in_words(what: str, agent: str) -> str:
    """A driver line with Git's side names in the demo's words: during a rebase Git calls the
    upstream (main) "ours" and the commit being replayed (the agent's) "theirs"
    (git-rebase(1))."""
    what = re.sub(r"\bfrom ours\b", "from main", what)
    return re.sub(r"\bfrom theirs\b", f"from {agent}", what)


def _contested_lines(d: Demo, agent: str, merged: list[tuple[str, str]]) -> list[str]:
    """One line per field both sides changed: who won and the rule (docs/merge.md)."""
    claims = {tid: what for tid, what in merged if what.startswith("claim contested: ")}
    lines: list[str] = []
    for tid, what in merged:
        m = re.fullmatch(r"(\w+)(?: from (ours|theirs)|: merged from both sides) \((.+)\)", what)
        if m is None:
            continue
        field, side, rule = m.groups()
        if field == "claim" and tid in claims:
            keeper = re.search(r"contested: (\S+) \(earlier\) keeps it; (\S+) lost it",
                               claims[tid])
            won = f"{keeper[1]} keeps it, {keeper[2]} lost it" if keeper else "kept"
        elif side is None:
            value = d.task(agent, tid).get(field)
            won = ("merged: " + ", ".join(map(str, value))
                   if isinstance(value, list) and field != "items" else "merged")
        else:
            won = f"{'main' if side == 'ours' else agent}'s value"
        lines.append(_clip(f"       {d.names.get(tid, tid)} {field}: {won} ({rule})", WIDTH))
    return lines


def _scenario(d: Demo) -> int:
    a, b, c = AGENTS
    d.tmp.joinpath("gitconfig").write_text(GITCONFIG)
    d.main.mkdir()
    d.say("ledgit demo: three agents share one task board in a throwaway Git repository.")
    d.say("Each works in its own worktree, unaware of the others; Git merges their work.")
    d.say()
    d.say("1. main: ledgit init; ledgit install (merge driver, attributes, hooks); three tasks")
    d.git(d.main, "init", "-q", "-b", "main")
    d.ledgit("main", "init")
    d.ledgit("main", "install")
    tasks = (("export", "Make the nightly export resumable", "1"),
             ("docs", "Document the cursor file", "3"), ("crash", "Add a crash test to CI", "2"))
    ids: dict[str, str] = {}
    for name, title, prio in tasks:
        extra = ["--goal", "A crash mid-export resumes where it stopped.",
                 "--accept", "kill -9 during an export, restart: output equals a clean run",
                 "--body", "Notes go here."] if name == "export" else []
        ids[name] = d.ledgit("main", "create", title, "--priority", prio, *extra)
        d.say(f"     {name:<7} {ids[name]}  P{prio}  {title}")
    d.names = {tid: name for name, tid in ids.items()}
    export, docs, crash = ids["export"], ids["docs"], ids["crash"]
    d.git(d.main, "add", "-A")
    d.git(d.main, "commit", "-q", "-m", "three shared tasks")
    d.git(d.main, "tag", "start")

    d.say("2. git worktree add: a worktree and a branch per agent; they work at the same time")
    for agent in AGENTS:
        d.git(d.main, "worktree", "add", "-q", "-b", agent, str(d.wt(agent)))
    d.ledgit(a, "claim", export, "--note", "cursor file first")
    time.sleep(0.002)  # b's claim is strictly later than a's
    d.ledgit(b, "claim", export, "--note", "I'll take the export too")
    d.ledgit(c, "claim", crash)
    d.ledgit(a, "item", "add", export, "--kind", "decision",
             "--text", "the cursor lives next to the output and is fsynced per batch")
    d.ledgit(b, "update", export, "--label", "reliability", "--next-action",
             "write the torn-batch detector")
    d.ledgit(b, "claim", docs)
    d.ledgit(b, "complete", docs, "--response", "docs/cursor.md describes the format")
    d.ledgit(c, "item", "add", crash, "--kind", "fact",
             "--text", "the CI runner allows kill -9 of child processes")
    d.ledgit(a, "update", crash, "--label", "needs-export")
    d.ledgit(c, "update", crash, "--response", "crash test drafted in ci/crash.sh")
    time.sleep(0.002)  # c's next action is strictly later than b's
    d.ledgit(c, "update", export, "--priority", "0", "--label", "ci",
             "--next-action", "reproduce the crash in CI first")
    d.say(f"     {a}  claims export, records a decision on it; labels crash needs-export")
    d.say(f"     {b}  claims export too, labels it reliability, sets its next action; "
          "does docs")
    d.say("              (no shared remote in this demo: with one, a lease refuses that claim)")
    d.say(f"     {c}  claims crash, notes a fact; export: P0, label ci, another next action")
    for agent in AGENTS:
        d.git(d.wt(agent), "add", "-A")
        d.git(d.wt(agent), "commit", "-q", "-m", f"{agent}: work on the shared tasks")
    d.say("     each commits on its own branch")

    d.say("3. they land in turn: git rebase main, then main fast-forwards (as a merge queue does)")
    one_sided = 0
    for agent in AGENTS:
        d.git(d.wt(agent), "rebase", "main")
        merged = d.merges()  # what the merge driver did during this rebase
        names = sorted({d.names.get(tid, tid) for tid, _ in merged})
        if not merged:
            d.say(f"     {agent}: main had not moved; nothing to merge")
        else:
            d.say(f"     {agent}: Git ran ledgit's merge driver on {' and '.join(names)}; "
                  "no conflict")
        for line in _contested_lines(d, agent, merged):
            d.say(line)
        for tid, what in merged:  # --verbose: every other field the driver merged
            if not what.startswith("claim contested") and not what.endswith(")"):
                d.say(_clip(f"       {d.names.get(tid, tid)} {_in_words(what, agent)}", WIDTH),
                      verbose=True)
        one_sided += sum(1 for _, what in merged
                         if re.fullmatch(r"\w+ from (ours|theirs)", what))
        d.git(d.main, "merge", "-q", "--ff-only", agent)
    if not d.verbose:
        d.say(f"     ({one_sided} more fields came from one side only; --verbose lists them)")

    state = d.task("main", export)
    claim = state.get("claim") or {}
    d.say(f"4. main now: export is {state['status']}, claimed by {claim.get('by')}, "
          f"P{state['priority']}, labels {', '.join(state['labels'])}")
    d.say(_clip(f"     next action: {state['next_action']}", WIDTH))
    if d.verbose:
        d.ledgit("main", "get", export, "--no-body")
    d.say(f"5. the claim {b} lost is refused (exit 6), not silently kept")
    d.git(d.wt(b), "rebase", "-q", "main")
    d.ledgit(b, "heartbeat", export, expect=6)
    refused = d.last_stderr.removeprefix("ledgit: ").removeprefix(f"{export}: ")
    d.ledgit(a, "heartbeat", export)
    d.say(_clip(f"     {b}: ledgit heartbeat export -> exit 6: {refused}", WIDTH))
    d.say(f"     {a}: ledgit heartbeat export -> ok, the claim is renewed")

    d.say("6. the CI gate: ledgit verify --range start..main (every commit the agents landed)")
    gate = d.run(["ledgit", "verify", "--range", "start..main"], d.main, expect=None)
    full = d.run(["ledgit", "verify", "--rev", "main"], d.main, expect=None)
    verdict = (gate.stderr.strip().splitlines() or ["(no verdict)"])[-1]
    d.say(f"     {verdict.removeprefix('ledgit verify: ')}")
    ok = gate.returncode == 0 and full.returncode == 0
    count = len(d.git(d.main, "rev-list", "start..main").split())
    d.say(f"{'verified' if ok else 'FAILED'}: {count} commits from three agents, "
          f"{'no conflict, no lost event; the gate passes' if ok else 'the gate fails'}")
    return 0 if ok else 1


@click.command("demo")
@click.option("--keep", is_flag=True,
              help="Keep the throwaway repository and print its path, to explore.")
@click.option("--verbose", "-v", is_flag=True,
              help="Show every command and its output, and every merged field.")
def demo_cmd(keep: bool, verbose: bool) -> int:
    """Three agents in three worktrees share tasks; Git merges their work; the gate checks it."""
    tmp = Path(tempfile.mkdtemp(prefix="ledgit-demo-"))
    started = time.monotonic()
    try:
        code = _scenario(Demo(tmp, verbose=verbose))
        click.echo(f"# {time.monotonic() - started:.1f} s", err=True)
        return code
    finally:
        if keep:
            main = shlex.quote(str(tmp / "main"))
            click.echo(f"kept: {tmp}  (explore: cd {main}; ledgit list; ledgit history "
                       f"<id>; git log --graph --all --oneline)")
        else:
            click.echo("to explore the repository yourself: ledgit demo --keep")
            shutil.rmtree(tmp, ignore_errors=True)
