"""Deliverable 5: the Git layer behaves the same whatever the paths and line endings.

One scenario, run in several worlds: a board with one task is committed (the pre-commit hook
checks it), changed differently on two branches, merged (the driver merges the task file and
its history) and, the other way round, rebased (rebase swaps ours and theirs). The worlds:

* ``plain``: a plain repository path;
* ``hostile-path``: the repository, and the command the hooks and driver run (a wrapper
  script given to ``ledgit install --command``), under directories whose names hold spaces,
  single and double quotes, ``$HOME`` and non-ASCII letters;
* ``subdir-board``: the board in such a subdirectory of the repository (so Git passes the
  driver a quoted ``%P``);
* ``autocrlf``: ``core.autocrlf=true``, so every checkout writes CRLF task files;
* ``shims``: the distributed POSIX shims (``hooks/``, ``mergedriver/ledgit-merge-driver``)
  installed by hand under a hostile ``core.hooksPath``, in a hostile path, with autocrlf.

In every world: the merge is clean, its result and the rebase's are byte-identical to what
the driver computes in process (compared as Git blob ids), ``verify`` passes on the working
tree and at ``--rev HEAD``, the pre-commit hook refuses a tampered history, the
post-checkout hook warms the index, and a write in a CRLF checkout does not churn whole
files.
"""

from __future__ import annotations

import hashlib
import shlex
import shutil
import sys
from pathlib import Path

import pytest
from stresskit import git, isolated_env, ledgit

from ledgit.core.filemerge import merge_history_bytes, merge_task_bytes
from ledgit.core.history import new_event, render_history
from ledgit.core.record import Record, make_record
from ledgit.core.render import render_record

TID = "T-portable00"
HOSTILE_DIR = "wört \"dq\" 'sq' $HOME ß"
SUBDIR = "sub dir 'ü' \"q\""
SHIMS = Path(__file__).resolve().parents[1]


def _versions() -> dict[str, dict[str, bytes]]:
    """base / side / main versions of the task file and its history (fixed clocks)."""
    t0, t1, t2 = ("2026-01-01T00:00:00.000000Z", "2026-01-02T00:00:00.000000Z",
                  "2026-01-03T00:00:00.000000Z")
    base = make_record({"id": TID, "title": "portable", "status": "open", "created": t0,
                        "last_modified": t0, "labels": ["one"]},
                       "## Goal\n\nTravel well.\n\n## Acceptance\n\n- same bytes\n")
    side = make_record({**base.fields, "title": "portable — überall", "last_modified": t1,
                        "items": [{"id": "i-1", "kind": "fact", "text": "paths: 'q' \"dq\"",
                                   "trust": "candidate", "by": "side", "at": t1}]},
                       "Side line first.\n" + base.body)
    main = make_record({**base.fields, "response": "main was here", "last_modified": t2,
                        "labels": ["one", "two"]}, base.body + "- main line last\n")
    genesis = new_event(parents=[], at=t0, actor="setup", op="create", before_state={},
                        after_state=base.state())

    def step(rec: Record, who: str) -> dict[str, bytes]:
        e = new_event(parents=[genesis["id"]], at=rec.fields["last_modified"], actor=who,
                      op="update", before_state=base.state(), after_state=rec.state())
        return {"task": render_record(rec).encode(),
                "history": render_history([genesis, e]).encode()}

    return {"base": {"task": render_record(base).encode(),
                     "history": render_history([genesis]).encode()},
            "side": step(side, "side"), "main": step(main, "main")}


def _write(board: Path, files: dict[str, bytes]) -> None:
    (board / ".ledgit" / "tasks" / f"{TID}.md").write_bytes(files["task"])
    (board / ".ledgit" / "history" / f"{TID}.jsonl").write_bytes(files["history"])


WORLDS = ["plain", "hostile-path", "subdir-board", "autocrlf", "shims"]


def _scenario(tmp: Path, world: str) -> dict[str, str]:
    env = isolated_env(tmp / "home")
    hostile = world in ("hostile-path", "shims")
    top = tmp / (HOSTILE_DIR if hostile else "plain") / ("re po" if hostile else "repo")
    top.parent.mkdir(parents=True)
    git(["init", "-q", str(top)], tmp, env)
    if world in ("autocrlf", "shims"):
        git(["config", "core.autocrlf", "true"], top, env)
    board = top / SUBDIR if world == "subdir-board" else top
    board.mkdir(exist_ok=True)
    ledgit(["init", str(board)], board, env)
    rel = "" if board == top else f"{SUBDIR}/"
    task_rel, hist_rel = f"{rel}.ledgit/tasks/{TID}.md", f"{rel}.ledgit/history/{TID}.jsonl"
    if world == "hostile-path":
        wrapper_dir = tmp / HOSTILE_DIR / "bin 'w'"
        wrapper_dir.mkdir()
        wrapper = wrapper_dir / "led git"
        wrapper.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -m ledgit \"$@\"\n")
        wrapper.chmod(0o755)
        ledgit(["install", "--command", shlex.quote(str(wrapper))], board, env)
        cfg = git(["config", "merge.ledgit.driver"], top, env).out
        assert str(wrapper) in cfg or shlex.quote(str(wrapper)) in cfg
    elif world == "shims":
        hooks = tmp / HOSTILE_DIR / "hooks 'h' dir"
        shutil.copytree(SHIMS / "hooks", hooks)
        driver = tmp / HOSTILE_DIR / "driver dir" / "ledgit-merge-driver"
        driver.parent.mkdir()
        shutil.copy(SHIMS / "mergedriver" / "ledgit-merge-driver", driver)
        for p in [*hooks.iterdir(), driver]:
            p.chmod(0o755)
        git(["config", "core.hooksPath", str(hooks)], top, env)
        git(["config", "merge.ledgit.name", "ledgit"], top, env)
        git(["config", "merge.ledgit.driver", f"{shlex.quote(str(driver))} %O %A %B %L %P"],
            top, env)
        (board / ".gitattributes").write_text(
            (SHIMS / "mergedriver" / "gitattributes").read_text(encoding="utf-8"))
    else:
        ledgit(["install"], board, env)
    versions = _versions()
    _write(board, versions["base"])
    git(["add", "-A"], top, env)
    git(["commit", "-q", "-m", "base"], top, env)
    if world in ("autocrlf", "shims"):
        for p in (board / task_rel[len(rel):], board / hist_rel[len(rel):]):
            p.unlink()
        git(["checkout", "--", "."], top, env)
        assert b"\r\n" in (board / task_rel[len(rel):]).read_bytes(), "not a CRLF checkout"
    ledgit(["verify", "--all"], board, env)

    git(["checkout", "-q", "-b", "side"], top, env)
    _write(board, versions["side"])
    git(["commit", "-q", "-am", "side"], top, env)
    git(["checkout", "-q", "main"], top, env)
    _write(board, versions["main"])
    git(["commit", "-q", "-am", "main"], top, env)
    merge = git(["merge", "-q", "--no-edit", "side"], top, env, check=False)
    assert merge.code == 0, merge.describe()
    assert "fell back" not in merge.err and "not on PATH" not in merge.err, merge.err
    out = {"merge-task": git(["rev-parse", f"HEAD:{task_rel}"], top, env).out.strip(),
           "merge-history": git(["rev-parse", f"HEAD:{hist_rel}"], top, env).out.strip()}
    ledgit(["verify", "--all"], board, env)
    ledgit(["verify", "--rev", "HEAD"], board, env)

    git(["checkout", "-q", "-b", "rebased", "side"], top, env)
    rebase = git(["rebase", "-q", "main~1"], top, env, check=False)
    assert rebase.code == 0, rebase.describe()
    out["rebase-task"] = git(["rev-parse", f"HEAD:{task_rel}"], top, env).out.strip()
    out["rebase-history"] = git(["rev-parse", f"HEAD:{hist_rel}"], top, env).out.strip()
    ledgit(["verify", "--all"], board, env)

    # The pre-commit hook runs, and refuses a tampered history.
    hist = board / hist_rel[len(rel):]
    saved = hist.read_bytes()
    hist.write_bytes(saved.replace(b"main was here", b"main WAS here", 1)
                     .replace(b"portable", b"p0rtable", 1))
    git(["add", hist_rel], top, env)
    refused = git(["commit", "-q", "-m", "tampered"], top, env, check=False)
    assert refused.code != 0 and "ledgit" in refused.err, refused.describe()
    git(["reset", "-q", "HEAD", "--", hist_rel], top, env)
    hist.write_bytes(saved)
    git(["checkout", "-q", "--", hist_rel], top, env)

    # The post-checkout hook warms this worktree's index (a board below the top has its own:
    # docs/git.md, "Every board is guarded").
    private = top / ".git" / "ledgit"
    index = (private / "boards" / SUBDIR if rel else private) / "index.sqlite3"
    index.unlink(missing_ok=True)
    git(["checkout", "-q", "main"], top, env)
    assert index.is_file(), "post-checkout did not build the index"

    # A write in this checkout changes lines, not line endings.
    ledgit(["update", TID, "--response", "written here"], board, env)
    numstat = git(["diff", "--numstat", "--", task_rel], top, env).out.split()
    assert numstat and int(numstat[0]) <= 3 and int(numstat[1]) <= 3, numstat
    git(["commit", "-q", "-am", "a write"], top, env)
    ledgit(["verify", "--rev", "HEAD"], board, env)
    assert git(["status", "--porcelain"], top, env).out.strip() == ""
    return out


def _blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _expected() -> dict[str, str]:
    """What every world must produce: the driver's own answer, computed in process."""
    v = _versions()
    task, conflict, _ = merge_task_bytes(v["base"]["task"], v["main"]["task"],
                                         v["side"]["task"], 7, f".ledgit/tasks/{TID}.md")
    assert not conflict
    hist, conflict, _ = merge_history_bytes(v["base"]["history"], v["main"]["history"],
                                            v["side"]["history"], 7,
                                            f".ledgit/history/{TID}.jsonl")
    assert not conflict
    ids = {"task": _blob_id(task), "history": _blob_id(hist)}
    return {"merge-task": ids["task"], "merge-history": ids["history"],
            "rebase-task": ids["task"], "rebase-history": ids["history"]}


@pytest.mark.parametrize("world", WORLDS)
def test_git_layer_is_portable(world: str, tmp_path: Path) -> None:
    assert _scenario(tmp_path, world) == _expected()
