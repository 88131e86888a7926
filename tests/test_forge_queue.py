"""A merge queue of pull requests that all touch the same tasks goes through with no person
(issue 27, docs/git.md "Merge queues"): each entry, when its turn comes, is brought up to date
with the base by ``ledgit forge update``, its gate runs on what will land, and the forge lands
it by fast-forward. Without the command every entry after the first would be thrown out of the
queue as conflicting.

``LEDGIT_FORGE_QUEUE=20`` (or the ``stress`` marker) runs a queue of 20; the default is 4."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from forgeflow import agent_branch, events_at, gate, is_ancestor, make_forge, tip
from gitflow import ledgit
from gitutil import git

pytest_plugins = ["gitutil"]

QUEUE = int(os.environ.get("LEDGIT_FORGE_QUEUE", "4"))


def run_queue(tmp_path: Path, n: int) -> None:
    forge = make_forge(tmp_path)
    queue = [f"pr-{i}" for i in range(n)]
    tips = {name: agent_branch(forge, name, i, extra=1) for i, name in enumerate(queue)}
    wanted = set().union(*(events_at(forge.bare, t) for t in tips.values()))
    start = tip(forge.bare, "main")
    conflicting = 0
    for name in queue:
        base = tip(forge.bare, "main")
        plain = subprocess.run(["git", "merge-tree", "--write-tree", base, name],
                               cwd=forge.bare, capture_output=True, check=False)
        conflicting += plain.returncode == 1
        # the queue's turn for this entry: up to date first, by the bot ...
        result = ledgit(forge.bot, "forge", "update", name, "--base", "main")
        assert result.out.startswith((f"{name}: merged origin/main",
                                      f"{name}: up to date")), result.text
        head = tip(forge.bare, name)
        assert is_ancestor(forge.bare, tips[name], head)  # the entry's own commits kept
        # ... then its gate, on exactly what will land ...
        gate(forge.bare, f"{base}..{head}")
        # ... then the forge lands it: a fast-forward, no merge of its own
        assert is_ancestor(forge.bare, base, head)
        git("update-ref", "refs/heads/main", head, base, cwd=forge.bare)
    assert conflicting == n - 1  # what a queue without the command would have thrown out
    final = tip(forge.bare, "main")
    gate(forge.bare, f"{start}..{final}")
    assert not wanted - events_at(forge.bare, final)
    assert git("rev-list", "--count", f"{start}..{final}", "--merges", cwd=forge.bare) \
        == str(n - 1)  # one driver merge per entry after the first, made by the bot
    print(f"queue: {n} entries on the same tasks, {conflicting} a plain merge would have "
          f"thrown out, {n - 1} driver merges, {n} fast-forwards, {len(wanted)} events, "
          f"0 lost, {n + 1} gates green")


def test_a_queue_of_entries_touching_the_same_tasks_needs_no_person(
        tmp_path: Path, git_env: Path) -> None:
    run_queue(tmp_path, QUEUE)


@pytest.mark.stress
def test_a_queue_of_twenty(tmp_path: Path, git_env: Path) -> None:
    run_queue(tmp_path, 20)
