"""Files that are not ledgit's under ``* merge=ledgit`` get exactly Git's own merge (issue 12
item 10): real merges, compared byte for byte with the same merge in a twin repository whose
attributes name no driver."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from gitflow import commit_all, git_rc, new_repo
from gitutil import commit_file, git

pytest_plugins = ["gitutil"]

CRLF_BASE = b"one\r\ntwo\r\nthree\r\nfour\r\nfive\r\n"


def _repo(root: Path, *, everything: bool) -> Path:
    """A board repository; with ``everything`` its attributes say ``* merge=ledgit``."""
    repo = new_repo(root)
    if everything:
        attributes = repo / ".gitattributes"
        attributes.write_text("* merge=ledgit\n" + attributes.read_text())
        commit_all(repo, "every file through the ledgit driver")
    return repo


def _merge(repo: Path, path: str, base: bytes, main: bytes, feature: bytes) -> tuple[int, bytes]:
    """Commit ``base``, change it to ``feature`` on a branch and to ``main`` on main, merge the
    branch into main; (git merge's exit code, the file's bytes after it)."""
    commit_file(repo, path, base, "base")
    git("checkout", "-q", "-b", "feature", cwd=repo)
    commit_file(repo, path, feature, "feature")
    git("checkout", "-q", "main", cwd=repo)
    commit_file(repo, path, main, "main")
    proc = git_rc(repo, "merge", "--no-edit", "feature")
    return proc.returncode, (repo / path).read_bytes()


def _both(tmp_path: Path, path: str, base: bytes, main: bytes,
          feature: bytes) -> tuple[tuple[int, bytes], tuple[int, bytes]]:
    ours = _merge(_repo(tmp_path / "driver", everything=True), path, base, main, feature)
    gits = _merge(_repo(tmp_path / "plain", everything=False), path, base, main, feature)
    return ours, gits


def test_a_crlf_text_file_merges_clean_with_every_cr_kept(tmp_path: Path,
                                                         git_env: Path) -> None:
    main = CRLF_BASE.replace(b"one", b"ONE")
    feature = CRLF_BASE.replace(b"five", b"FIVE")
    (code, data), plain = _both(tmp_path, "notes/win.txt", CRLF_BASE, main, feature)
    assert code == 0 and data == b"ONE\r\ntwo\r\nthree\r\nfour\r\nFIVE\r\n"
    assert (code, data) == plain


def test_a_conflicting_text_file_gets_gits_own_markers(tmp_path: Path, git_env: Path) -> None:
    main = CRLF_BASE.replace(b"three", b"three (main)")
    feature = CRLF_BASE.replace(b"three", b"three (feature)")
    (code, data), plain = _both(tmp_path, "README.txt", CRLF_BASE, main, feature)
    assert code == 1 and (code, data) == plain
    assert b"<<<<<<< HEAD\r\n" in data or b"<<<<<<< HEAD\n" in data
    assert b">>>>>>> feature" in data and data.count(b"three (") == 2


def test_a_binary_file_is_left_as_ours_and_conflicted(tmp_path: Path, git_env: Path) -> None:
    base = os.urandom(3000).replace(b"\n", b"\0")
    main, feature = b"\0main" + base[5:], base[:-7] + b"\0feature"
    (code, data), plain = _both(tmp_path, "assets/logo.bin", base, main, feature)
    assert code == 1 and data == main and len(data) == 3000  # nothing spliced
    assert (code, data) == plain
    repo = tmp_path / "driver"
    assert git("diff", "--name-only", "--diff-filter=U", cwd=repo) == "assets/logo.bin"


@pytest.mark.parametrize("style", ["diff3", "zdiff3"])
def test_the_conflict_style_is_gits_too(tmp_path: Path, git_env: Path, style: str) -> None:
    main = CRLF_BASE.replace(b"two", b"2")
    feature = CRLF_BASE.replace(b"two", b"II")
    results = []
    for name, everything in (("driver", True), ("plain", False)):
        repo = _repo(tmp_path / name, everything=everything)
        git("config", "merge.conflictStyle", style, cwd=repo)
        results.append(_merge(repo, "a.txt", CRLF_BASE, main, feature))
    # Git 2.39 tells a driver no commit names (%S/%X/%Y came in 2.44): the base section is
    # labelled "base" where Git writes the merge base's short id; the rest is byte-identical.
    plain = re.sub(rb"(?m)^\|{7} [0-9a-f]+\r$", b"||||||| base\r", results[1][1])
    assert results[0][0] == results[1][0] == 1 and results[0][1] == plain
    assert b"||||||| base\r\n" in results[0][1]
