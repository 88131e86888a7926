"""``ledgit demo``: three agents, three worktrees, the CI gate -- on a machine without a Git
identity; a story of about 40 lines (issue 18), the detail behind --verbose. The story runs
through the console script, --verbose through ``python -m ledgit`` (each demo run costs ~6 s
of CPU, so the two entry points share these two runs)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

#: The console script next to this Python (what a user types), else ``python -m ledgit``.
_SCRIPT = Path(sys.executable).with_name("ledgit")
CONSOLE_SCRIPT = [str(_SCRIPT)] if _SCRIPT.is_file() else [sys.executable, "-m", "ledgit"]


def demo(tmp_path: Path, *args: str, argv0: list[str] = CONSOLE_SCRIPT
         ) -> tuple[subprocess.CompletedProcess[str], float]:
    """``ledgit demo ARGS`` as a process (the console script unless ``argv0`` says otherwise)
    on a machine without a Git identity; returns the process and its wall seconds."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "LEDGIT_"))}
    env.update(HOME=str(tmp_path), GIT_CONFIG_NOSYSTEM="1", XDG_CONFIG_HOME=str(tmp_path),
               TMPDIR=str(tmp_path))
    started = time.monotonic()
    proc = subprocess.run([*argv0, "demo", *args], cwd=tmp_path,
                          env=env, capture_output=True, text=True, check=False, timeout=600)
    return proc, time.monotonic() - started


def test_demo_tells_the_story_in_about_40_lines(tmp_path: Path) -> None:
    proc, elapsed = demo(tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    lines = out.splitlines()
    assert 20 <= len(lines) <= 45, out
    assert not [line for line in lines if len(line) > 100], out
    assert "warning" not in (out + proc.stderr).lower()
    assert proc.stderr.strip().startswith("# ") and len(proc.stderr.splitlines()) == 1
    # who won each contested field, one line each, with the rule that decided it
    assert re.search(r"export claim: agent-a keeps it, agent-b lost it \(both claimed it; "
                     r"the earlier claim wins\)", out), out
    assert "export labels: merged: ci, reliability (both changed it;" in out
    assert "export next_action: agent-c's value (both changed it; the later change wins)" in out
    assert "next action: reproduce the crash in CI first" in out
    # those lines sit under the rebase that made them
    b_block = out.split("agent-b: Git ran")[1].split("agent-c: Git ran")[0]
    assert "export claim:" in b_block and "labels" not in b_block
    assert re.search(r"\((\d+) more fields came from one side only; --verbose lists them\)",
                     out)
    assert "agent-b: ledgit heartbeat export -> exit 6: claim lost to agent-a" in out
    assert "3 commit(s), 9 task check(s): ok" in out  # the gate's verdict
    assert lines[-2].startswith("verified: 3 commits from three agents")
    assert lines[-1] == "to explore the repository yourself: ledgit demo --keep"
    assert "CONFLICT" not in out and "--command" not in out
    assert not list(tmp_path.glob("ledgit-demo-*")), "the throwaway repository is removed"
    assert elapsed < 180, f"the demo took {elapsed:.1f} s"


def test_demo_verbose_shows_every_step_and_keep_prints_the_path(tmp_path: Path) -> None:
    proc, _ = demo(tmp_path, "--verbose", "--keep", argv0=[sys.executable, "-m", "ledgit"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "warning" not in (out + proc.stderr).lower()
    assert "[agent-b] $ ledgit claim T-" in out and "$ git rebase main" in out
    assert "$ ledgit verify --range start..main" in out and "\n  [main] $ ledgit install\n" in out
    assert "labels from agent-b" in out and "priority from agent-c" in out
    assert "export claim from main (both claimed it" not in out  # told once, as the summary
    kept = re.search(r"^kept: (\S+)  \(explore: cd (\S+); ledgit list", out, re.M)
    assert kept, out
    main = Path(kept[2])
    assert Path(kept[1]).is_dir() and main == Path(kept[1]) / "main"
    assert (main / ".ledgit" / "tasks").is_dir()
    log = subprocess.run(["git", "log", "--format=%an", "start..main"], cwd=main,
                         capture_output=True, text=True, check=True).stdout.split()
    assert log == ["lead"] * 3
