"""``ledgit demo``: three agents, three worktrees, the CI gate -- on a machine without a Git
identity."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path


def test_demo_merges_three_agents_and_passes_the_gate(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "LEDGIT_"))}
    env.update(HOME=str(tmp_path), GIT_CONFIG_NOSYSTEM="1", XDG_CONFIG_HOME=str(tmp_path))
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "ledgit", "demo"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, check=False, timeout=300)
    elapsed = time.monotonic() - started
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "claim contested: agent-a (earlier) keeps it; agent-b lost it" in out
    assert "labels from agent-b" in out and "priority from agent-c" in out
    assert "claim lost to agent-a" in out
    assert "3 commit(s), 9 task check(s): ok" in out
    assert "# verified: 3 commits from three agents" in out
    assert "CONFLICT" not in out
    # the driver's lines sit under the rebase that made them, before main fast-forwards
    b_block = out.split("$ git rebase main")[2].split("$ git merge -q --ff-only agent-b")[0]
    assert "claim contested:" in b_block and "labels from agent-b" in b_block
    assert "claim from main" not in b_block  # the contested claim gets one line, not two
    assert "(Make the nightly export resumable) [fields]" in b_block  # tasks by id and title
    assert "labels: merged from both sides" in out and "from merged" not in out
    assert elapsed < 60, f"the demo took {elapsed:.1f} s"
