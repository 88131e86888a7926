"""ledgit.git.repository against real repositories built with the git CLI."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from gitutil import commit_file, git

from ledgit.core.errors import USAGE, LedgitError
from ledgit.git import gitindex, objects, repository

pytest_plugins = ["gitutil"]

ODD = [".ledgit/tasks/with space.md", ".ledgit/tasks/\"quoted\" 'too'.md",
       ".ledgit/tasks/tâche-é.md"]


@pytest.fixture(params=["pygit2", "cli"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Run a test once through pygit2 and once through the git CLI fallback."""
    monkeypatch.setattr(objects, "_use_pygit2", request.param == "pygit2")
    yield request.param


@pytest.fixture
def repo(git_repo: Path) -> Path:
    """A repository with one commit: a board of three tasks and a file outside it."""
    for name in ("T-1", "T-2", "T-3"):
        (git_repo / ".ledgit/tasks").mkdir(parents=True, exist_ok=True)
        (git_repo / f".ledgit/tasks/{name}.md").write_text(f"{name} v1\n")
    (git_repo / "README").write_text("readme\n")
    git("add", ".", cwd=git_repo)
    git("commit", "-q", "-m", "base", cwd=git_repo)
    return git_repo


def rev_parse(cwd: Path, *args: str) -> Path:
    """What `git rev-parse ARGS` prints, as an absolute resolved path."""
    return (cwd / git("rev-parse", *args, cwd=cwd)).resolve()


# --- environment and running -------------------------------------------------------------------

def test_no_git_env_strips_repository_pointers_only() -> None:
    env = {"GIT_DIR": "/x", "GIT_WORK_TREE": "/y", "GIT_INDEX_FILE": "i", "GIT_COMMON_DIR": "c",
           "GIT_OBJECT_DIRECTORY": "o", "GIT_AUTHOR_NAME": "a", "GIT_CONFIG_PARAMETERS": "'a.b'",
           "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "k", "GIT_SSH_COMMAND": "ssh", "PATH": "/p"}
    assert repository.no_git_env(env) == {
        "GIT_AUTHOR_NAME": "a", "GIT_CONFIG_PARAMETERS": "'a.b'", "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "k", "GIT_SSH_COMMAND": "ssh", "PATH": "/p"}


def test_inherited_git_dir_does_not_redirect(repo: Path, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    other = tmp_path / "other"
    git("init", "-q", str(other), cwd=tmp_path)
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(other))
    assert repository.toplevel(repo / ".ledgit") == repo.resolve()
    assert repository.head_oid(repo) is not None  # `other` has no commit
    assert repository.discover(repo) == repository.discover(repo / ".ledgit")
    assert repository.discover(repo) == (repo / ".git", repo / ".git", repo)


def test_run_git_failure_is_a_ledgit_error(repo: Path) -> None:
    with pytest.raises(LedgitError) as err:
        repository.run_git(["rev-parse", "--verify", "no-such-branch"], repo)
    assert err.value.code == USAGE
    assert "rev-parse" in str(err.value)
    assert (repository.run_git(["rev-parse", "--verify", "nope"], repo, check=False).returncode
            == 128)


# --- discovery ---------------------------------------------------------------------------------

@pytest.fixture
def layouts(repo: Path, tmp_path: Path) -> dict[str, Path]:
    """Directories in every kind of repository layout the fast path must get right."""
    (repo / "sub/deeper").mkdir(parents=True)
    linked = tmp_path / "linked wt"
    git("worktree", "add", "-q", "-b", "linked", str(linked), cwd=repo)
    (linked / "sub").mkdir()
    bare = tmp_path / "bare.git"
    git("init", "-q", "--bare", str(bare), cwd=tmp_path)
    separate = tmp_path / "separate"
    git("init", "-q", f"--separate-git-dir={tmp_path / 'separate.git'}", str(separate),
        cwd=tmp_path)
    commit_file(separate, "file", "content")
    relative = tmp_path / "relative"
    git("init", "-q", str(relative), cwd=tmp_path)
    (relative / ".git").rename(tmp_path / "relative.git")
    (relative / ".git").write_text("gitdir: ../relative.git\n")
    git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(separate), "mod",
        cwd=repo)
    (tmp_path / "symlink").symlink_to(repo / "sub")
    return {
        "top": repo, "subdir": repo / "sub/deeper", "via a symlink": tmp_path / "symlink",
        "inside .git": repo / ".git",
        "inside .git/refs": repo / ".git/refs", "linked": linked, "linked subdir": linked / "sub",
        "bare": bare, "separate git dir": separate, "relative gitfile": relative,
        "submodule (core.worktree)": repo / "mod",
    }


def test_discovery_agrees_with_git(layouts: dict[str, Path]) -> None:
    for name, where in layouts.items():
        fast = repository.discover(where)
        assert fast is not None
        assert fast.git_dir == rev_parse(where, "--absolute-git-dir"), name
        assert fast.common_dir == rev_parse(where, "--git-common-dir"), name
        if git("rev-parse", "--is-inside-work-tree", cwd=where) == "true":
            assert fast.toplevel == rev_parse(where, "--show-toplevel"), name
        else:
            assert fast.toplevel is None, name


def test_outside_a_repository(tmp_path: Path, git_env: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    assert repository.discover(plain) is None
    assert repository.toplevel(plain) is None
    with pytest.raises(LedgitError, match="not a git repository"):
        repository.git_dir(plain)


def test_ceiling_directories_are_left_to_git(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(repo))
    assert repository.toplevel(repo / ".ledgit/tasks") is None
    assert repository.toplevel(repo) == repo.resolve()


def test_git_path_is_per_worktree(layouts: dict[str, Path]) -> None:
    main, linked = layouts["top"], layouts["linked"]
    assert repository.git_path(main, "ledgit") == main.resolve() / ".git/ledgit"
    assert repository.git_path(linked, "ledgit") == repository.git_dir(linked) / "ledgit"
    assert repository.git_dir(linked).parent == main.resolve() / ".git/worktrees"
    for where in (main, layouts["subdir"], linked, layouts["linked subdir"]):
        for name in ("ledgit", "ledgit/index.sqlite3", "hooks", "refs/heads", "refs/bisect",
                     "logs/HEAD", "config", "index", "info/exclude"):
            expected = rev_parse(where, "--git-path", name)
            assert repository.git_path(where, name) == expected, (where, name)


def test_git_dir_and_common_dir_of_a_linked_worktree(layouts: dict[str, Path]) -> None:
    main = layouts["top"].resolve()
    assert repository.git_dir(layouts["linked subdir"]).parent == main / ".git/worktrees"
    assert repository.common_dir(layouts["linked subdir"]) == main / ".git"
    assert repository.toplevel(layouts["linked subdir"]) == layouts["linked"].resolve()


# --- config and hooks --------------------------------------------------------------------------

def test_config_round_trip_is_shared_by_worktrees(layouts: dict[str, Path]) -> None:
    main, linked = layouts["top"], layouts["linked"]
    git("config", "extensions.worktreeConfig", "true", cwd=main)
    driver = "ledgit merge-driver %O %A %B %P"
    repository.config_set(linked, "merge.ledgit.driver", driver)
    # a value that looks like an option
    repository.config_set(linked, "merge.ledgit.name", "-ledgit-")
    assert repository.config_get(main, "merge.ledgit.driver") == driver
    assert repository.config_get(main, "merge.ledgit.name") == "-ledgit-"
    assert git("config", "--file", str(main / ".git/config"), "merge.ledgit.driver",
               cwd=main) == driver
    assert repository.config_unset(main, "merge.ledgit.driver") is True
    assert repository.config_get(linked, "merge.ledgit.name") == "-ledgit-"
    assert repository.config_unset(main, "merge.ledgit.name") is True
    assert 'merge "ledgit"' not in (main / ".git/config").read_text()  # no empty section left
    assert repository.config_unset(main, "merge.ledgit.name") is False
    assert repository.config_get(main, "merge.ledgit.name") is None


def test_config_get_sees_global_and_rejects_bad_keys(repo: Path, git_env: Path) -> None:
    assert repository.user_name(repo) == "Ada Tester"
    assert repository.user_name(git_env) == "Ada Tester"  # outside any repository
    git("config", "user.name", "Repo Local", cwd=repo)
    assert repository.user_name(repo) == "Repo Local"
    with pytest.raises(LedgitError):
        repository.config_get(repo, "nosection")


def test_hooks_dir(layouts: dict[str, Path], git_env: Path) -> None:
    main, linked, sub = layouts["top"], layouts["linked"], layouts["subdir"]
    assert repository.hooks_dir(sub) == main.resolve() / ".git/hooks"
    assert repository.hooks_dir(linked) == main.resolve() / ".git/hooks"  # hooks are shared
    git("config", "core.hooksPath", ".githooks", cwd=main)
    # githooks(5): relative to where hooks run, the top of the (linked) work tree
    assert repository.hooks_dir(sub) == main.resolve() / ".githooks"
    assert repository.hooks_dir(linked) == linked.resolve() / ".githooks"
    git("config", "core.hooksPath", "/srv/hooks", cwd=main)
    assert repository.hooks_dir(sub) == Path("/srv/hooks")
    git("config", "core.hooksPath", "~/my hooks", cwd=main)
    assert repository.hooks_dir(sub) == git_env / "my hooks"
    assert repository.hooks_dir(layouts["bare"]) == layouts["bare"].resolve() / "hooks"


def test_list_worktrees_skips_prunable_and_bare(layouts: dict[str, Path], tmp_path: Path) -> None:
    main, linked = layouts["top"], layouts["linked"]
    gone = tmp_path / "gone"
    git("worktree", "add", "-q", "--detach", str(gone), cwd=main)
    shutil.rmtree(gone)
    assert repository.list_worktrees(linked) == [main.resolve(), linked.resolve()]
    bare = layouts["bare"]
    commit_file(main, "x", "x")
    git("push", "-q", str(bare), "HEAD:main", cwd=main)
    git("worktree", "add", "-q", str(tmp_path / "from-bare"), "main", cwd=bare)
    assert repository.list_worktrees(bare) == [(tmp_path / "from-bare").resolve()]


# --- the index ---------------------------------------------------------------------------------

def test_staged_files_on_an_unborn_branch(git_repo: Path, backend: str) -> None:
    for path in ODD:
        (git_repo / path).parent.mkdir(parents=True, exist_ok=True)
        (git_repo / path).write_text(path)
    (git_repo / "outside.md").write_text("no")
    git("add", ".", cwd=git_repo)
    assert repository.head_oid(git_repo) is None
    assert gitindex.staged_files(git_repo, ".ledgit/") == {
        path: path.encode() for path in sorted(ODD, key=os.fsencode)}
    assert (gitindex.staged_files(git_repo / ".ledgit", ".ledgit")
            == gitindex.staged_files(git_repo, ".ledgit/"))


def test_staged_files_added_modified_deleted(repo: Path, backend: str) -> None:
    (repo / ".ledgit/tasks/T-1.md").write_text("T-1 v2\n")
    git("rm", "-q", ".ledgit/tasks/T-2.md", cwd=repo)
    for path in ODD:
        (repo / path).write_bytes(b"new\n")
    (repo / "README").write_text("changed, but outside the prefix\n")
    git("add", ".ledgit/tasks", "README", *ODD, cwd=repo)
    (repo / ".ledgit/tasks/T-3.md").write_text("changed, but not staged\n")
    expected: dict[str, bytes | None] = {path: b"new\n" for path in ODD}
    expected |= {".ledgit/tasks/T-1.md": b"T-1 v2\n", ".ledgit/tasks/T-2.md": None}
    assert gitindex.staged_files(repo, ".ledgit/") == dict(sorted(expected.items(),
                                                             key=lambda kv: os.fsencode(kv[0])))
    assert gitindex.staged_files(repo, ".ledgit/history/") == {}
    assert set(gitindex.staged_files(repo, "")) == {*expected, "README"}
    assert gitindex.conflicted_paths(repo, ".ledgit/") == []


def test_staged_files_reads_the_index_git_index_file_names(
        repo: Path, backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    (repo / ".ledgit/tasks/T-1.md").write_text("in the main index\n")
    git("add", ".ledgit/tasks/T-1.md", cwd=repo)
    temp_index = repo / ".git/ledgit-temp-index"
    env = {"GIT_INDEX_FILE": str(temp_index)}
    git("read-tree", "HEAD", cwd=repo, env=env)
    (repo / ".ledgit/tasks/T-9.md").write_text("only in the temporary index\n")
    git("add", ".ledgit/tasks/T-9.md", cwd=repo, env=env)
    assert (gitindex.staged_files(repo, ".ledgit/")
            == {".ledgit/tasks/T-1.md": b"in the main index\n"})
    monkeypatch.setenv("GIT_INDEX_FILE", str(temp_index))
    expected = {".ledgit/tasks/T-9.md": b"only in the temporary index\n"}
    assert gitindex.staged_files(repo, ".ledgit/") == expected
    # relative: git resolves it from the work tree top (where hooks run), not from a subdir
    monkeypatch.setenv("GIT_INDEX_FILE", ".git/ledgit-temp-index")
    assert gitindex.staged_files(repo / ".ledgit/tasks", ".ledgit/") == expected


def test_staged_files_in_a_commit_hook_sees_the_commit_index(repo: Path) -> None:
    """`git commit -a` runs pre-commit with GIT_INDEX_FILE=.git/index.lock: a real hook."""
    script = ("import sys, pathlib; from ledgit.git.gitindex import staged_files\n"
              "got = staged_files(pathlib.Path.cwd(), '.ledgit/')\n"
              "pathlib.Path('.git/seen').write_text(repr(sorted(got.items())))\n")
    hook = repo / ".git/hooks/pre-commit"
    hook.write_text(f"#!/bin/sh\nexec '{sys.executable}' -c \"{script}\"\n")
    hook.chmod(0o755)
    (repo / ".ledgit/tasks/T-1.md").write_text("T-1 v2\n")
    git("commit", "-q", "-a", "-m", "via -a", cwd=repo)
    assert (repo / ".git/seen").read_text() == repr([(".ledgit/tasks/T-1.md", b"T-1 v2\n")])


def test_staged_files_in_a_linked_worktree(repo: Path, tmp_path: Path, backend: str) -> None:
    linked = tmp_path / "linked"
    git("worktree", "add", "-q", "-b", "other", str(linked), cwd=repo)
    commit_file(linked, ".ledgit/tasks/T-1.md", "T-1 on other\n")
    (repo / ".ledgit/tasks/T-2.md").write_text("staged in main\n")
    git("add", ".", cwd=repo)
    (linked / ".ledgit/tasks/T-1.md").write_text("T-1 staged in linked\n")
    git("add", ".", cwd=linked)
    expected = {".ledgit/tasks/T-1.md": b"T-1 staged in linked\n"}
    assert gitindex.staged_files(linked, ".ledgit/") == expected
    assert gitindex.staged_files(repo, ".ledgit/") == {".ledgit/tasks/T-2.md": b"staged in main\n"}
    assert objects.blob_at(linked, "HEAD", ".ledgit/tasks/T-1.md") == b"T-1 on other\n"


def test_submodules_under_the_prefix_are_ignored(repo: Path, tmp_path: Path, backend: str) -> None:
    other = tmp_path / "other"
    git("init", "-q", str(other), cwd=tmp_path)
    commit_file(other, "f", "f")
    git("submodule", "add", "-q", str(other), ".ledgit/mod", cwd=repo)
    assert gitindex.staged_files(repo, ".ledgit/") == {}
    git("commit", "-q", "-m", "submodule", cwd=repo)
    assert (objects.tree_files(repo, "HEAD", ".ledgit/")
            == objects.tree_files(repo, "HEAD~1", ".ledgit/"))
    assert objects.blob_at(repo, "HEAD", ".ledgit/mod") is None
    git("rm", "-q", "--cached", ".ledgit/mod", cwd=repo)
    assert gitindex.staged_files(repo, ".ledgit/") == {}


@pytest.fixture
def conflicted(repo: Path) -> Path:
    """A merge stopped on conflicts: T-1 edited on both sides, T-2 edited here and deleted there,
    T-3 cleanly changed there, a new task added on both sides."""
    git("checkout", "-q", "-b", "theirs", cwd=repo)
    (repo / ".ledgit/tasks/T-1.md").write_text("T-1 theirs\n")
    (repo / ".ledgit/tasks/T-3.md").write_text("T-3 theirs\n")
    (repo / ODD[2]).write_text("added by them\n")
    git("rm", "-q", ".ledgit/tasks/T-2.md", cwd=repo)
    git("add", ".", cwd=repo)
    git("commit", "-q", "-m", "theirs", cwd=repo)
    git("checkout", "-q", "main", cwd=repo)
    (repo / ".ledgit/tasks/T-1.md").write_text("T-1 ours\n")
    (repo / ".ledgit/tasks/T-2.md").write_text("T-2 ours\n")
    (repo / ODD[2]).write_text("added by us\n")
    git("add", ".", cwd=repo)
    git("commit", "-q", "-m", "ours", cwd=repo)
    git("merge", "theirs", cwd=repo, check=False)
    return repo


def test_conflicts_after_a_real_merge(conflicted: Path, backend: str) -> None:
    repo = conflicted
    unmerged = [".ledgit/tasks/T-1.md", ".ledgit/tasks/T-2.md", ODD[2]]
    assert gitindex.conflicted_paths(repo, ".ledgit/") == sorted(unmerged, key=os.fsencode)
    assert gitindex.conflicted_paths(repo, "src/") == []
    assert gitindex.staged_files(repo, ".ledgit/") == {".ledgit/tasks/T-3.md": b"T-3 theirs\n"}
    assert gitindex.conflict_stages(repo, ".ledgit/tasks/T-1.md") == (b"T-1 v1\n", b"T-1 ours\n",
                                                                 b"T-1 theirs\n")
    assert (gitindex.conflict_stages(repo, ".ledgit/tasks/T-2.md")
            == (b"T-2 v1\n", b"T-2 ours\n", None))
    assert gitindex.conflict_stages(repo, ODD[2]) == (None, b"added by us\n", b"added by them\n")
    assert gitindex.conflict_stages(repo, ".ledgit/tasks/T-3.md") == (None, None, None)
    assert repository.in_progress_operation(repo) == "merge"
    assert repository.is_rebase_or_merge_in_progress(repo)


def test_rebase_in_progress(conflicted: Path) -> None:
    repo = conflicted
    git("merge", "--abort", cwd=repo)
    assert repository.in_progress_operation(repo) is None
    assert not repository.is_rebase_or_merge_in_progress(repo)
    git("rebase", "theirs", cwd=repo, check=False)
    assert repository.in_progress_operation(repo) == "rebase"
    assert repository.is_rebase_or_merge_in_progress(repo)


# --- objects and history -----------------------------------------------------------------------

@pytest.fixture
def history(repo: Path) -> dict[str, str]:
    """base -> c1 (edit T-1, add ODD) -> c2 (delete T-2) on main; side branch merged (c3)."""
    ids = {"base": git("rev-parse", "HEAD", cwd=repo)}
    (repo / ".ledgit/tasks/T-1.md").write_text("T-1 v2\n")
    for path in ODD:
        (repo / path).write_text(path)
    git("add", ".", cwd=repo)
    git("commit", "-q", "-m", "c1", cwd=repo)
    ids["c1"] = git("rev-parse", "HEAD", cwd=repo)
    git("rm", "-q", ".ledgit/tasks/T-2.md", cwd=repo)
    git("commit", "-q", "-m", "c2", cwd=repo)
    ids["c2"] = git("rev-parse", "HEAD", cwd=repo)
    git("checkout", "-q", "-b", "side", ids["base"], cwd=repo)
    ids["s1"] = commit_file(repo, ".ledgit/history/T-3.jsonl", "{}\n", "s1")
    git("checkout", "-q", "main", cwd=repo)
    git("merge", "-q", "--no-edit", "side", cwd=repo)
    ids["merge"] = git("rev-parse", "HEAD", cwd=repo)
    return ids


def test_tree_files_and_blob_at(repo: Path, history: dict[str, str], backend: str) -> None:
    base = objects.tree_files(repo, history["base"], ".ledgit/")
    assert base == {f".ledgit/tasks/T-{n}.md": f"T-{n} v1\n".encode() for n in (1, 2, 3)}
    at_c1 = objects.tree_files(repo, history["c1"], ".ledgit/tasks")
    assert at_c1[".ledgit/tasks/T-1.md"] == b"T-1 v2\n"
    assert {p: at_c1[p] for p in ODD} == {p: p.encode() for p in ODD}
    assert list(at_c1) == sorted(at_c1, key=os.fsencode)
    assert (objects.tree_files(repo, "HEAD", ".ledgit/history/")
            == {".ledgit/history/T-3.jsonl": b"{}\n"})
    assert objects.tree_files(repo, "HEAD", "nowhere/") == {}
    assert objects.tree_files(repo, "HEAD", "README") == {"README": b"readme\n"}
    assert objects.blob_at(repo, history["c1"], ODD[1]) == ODD[1].encode()
    assert objects.blob_at(repo, "HEAD~1", ".ledgit/tasks/T-2.md") is None
    assert objects.blob_at(repo, "main", ".ledgit/tasks") is None  # a tree, not a blob
    for call in (lambda: objects.tree_files(repo, "no-such-rev", ".ledgit/"),
                 lambda: objects.blob_at(repo, "--output=x", "README")):
        with pytest.raises(LedgitError) as err:
            call()
        assert err.value.code == USAGE
    with pytest.raises(LedgitError, match="no-such-rev"):
        objects.tree_files(repo, "no-such-rev", ".ledgit/")


def test_changed_paths(repo: Path, history: dict[str, str], backend: str) -> None:
    assert objects.changed_paths(repo, history["base"], "") == [
        ".ledgit/tasks/T-1.md", ".ledgit/tasks/T-2.md", ".ledgit/tasks/T-3.md", "README"]
    assert objects.changed_paths(repo, history["c1"], ".ledgit/") == sorted(
        [".ledgit/tasks/T-1.md", *ODD], key=os.fsencode)
    assert objects.changed_paths(repo, history["c2"], ".ledgit/") == [".ledgit/tasks/T-2.md"]
    assert objects.changed_paths(repo, history["c2"], ".ledgit/history") == []
    # a merge, against its first parent: only what the side branch brought in
    assert (objects.changed_paths(repo, history["merge"], ".ledgit/")
            == [".ledgit/history/T-3.jsonl"])
    with pytest.raises(LedgitError, match="nope"):
        objects.changed_paths(repo, "nope", "")


def test_rev_list(repo: Path, history: dict[str, str]) -> None:
    h = history
    assert objects.rev_list(repo, f"{h['base']}..{h['c2']}") == [h["c1"], h["c2"]]
    assert objects.rev_list(repo, "main~1") == [h["c2"]]
    assert objects.rev_list(repo, f"{h['c2']}..") == [h["s1"], h["merge"]]
    everything = objects.rev_list(repo, f"{h['base']}..main")
    assert set(everything) == {h["c1"], h["c2"], h["s1"], h["merge"]}
    assert everything[-1] == h["merge"]
    assert everything.index(h["c1"]) < everything.index(h["c2"])
    assert objects.rev_list(repo, "main..main") == []
    for spec, bad in (("nope..main", "nope"), ("main..nope", "nope"), ("-n1", "-n1")):
        with pytest.raises(LedgitError, match=bad) as err:
            objects.rev_list(repo, spec)
        assert err.value.code == USAGE
    with pytest.raises(LedgitError, match="A..B"):
        objects.rev_list(repo, "main...side")


def test_head_oid(git_repo: Path) -> None:
    assert repository.head_oid(git_repo) is None
    oid = commit_file(git_repo, "a", "a")
    assert repository.head_oid(git_repo) == oid


# --- repositories pygit2 refuses ---------------------------------------------------------------

def test_partial_clone_falls_back_to_the_cli(repo: Path, history: dict[str, str],
                                              capsys: pytest.CaptureFixture[str]) -> None:
    git("config", "core.repositoryformatversion", "1", cwd=repo)
    git("config", "extensions.partialClone", "origin", cwd=repo)
    (repo / ".ledgit/tasks/T-1.md").write_text("staged\n")
    git("add", ".ledgit/tasks/T-1.md", cwd=repo)
    assert gitindex.staged_files(repo, ".ledgit/") == {".ledgit/tasks/T-1.md": b"staged\n"}
    assert objects.blob_at(repo, history["base"], ".ledgit/tasks/T-2.md") == b"T-2 v1\n"
    assert objects.changed_paths(repo, history["c2"], "") == [".ledgit/tasks/T-2.md"]
    notes = capsys.readouterr().err.splitlines()
    assert len(notes) == 1  # once per repository and process
    assert "partialclone" in notes[0] and "git CLI" in notes[0]


@pytest.mark.parametrize("setup", [
    lambda repo: git("add", "-N", ".ledgit/tasks/T-new.md", cwd=repo),
    lambda repo: git("update-index", "--index-version", "4", cwd=repo),
    lambda repo: git("update-index", "--split-index", cwd=repo),
    lambda repo: git("update-index", "--skip-worktree", ".ledgit/tasks/T-3.md", cwd=repo),
], ids=["intent-to-add", "index-v4", "split-index", "skip-worktree"])
def test_every_index_format_git_writes(repo: Path, setup: Callable[[Path], object],
                                       capsys: pytest.CaptureFixture[str]) -> None:
    """The index is read by git itself: whatever format or flags it holds."""
    (repo / ".ledgit/tasks/T-new.md").write_text("new\n")
    (repo / ".ledgit/tasks/T-1.md").write_text("staged\n")
    git("add", ".ledgit/tasks/T-1.md", cwd=repo)
    setup(repo)
    staged = gitindex.staged_files(repo, ".ledgit/")
    assert staged[".ledgit/tasks/T-1.md"] == b"staged\n"
    assert set(staged) <= {".ledgit/tasks/T-1.md", ".ledgit/tasks/T-new.md"}
    assert gitindex.conflicted_paths(repo, "") == []
    assert capsys.readouterr().err == ""


def test_cat_blobs_reads_names_in_one_process(repo: Path, history: dict[str, str]) -> None:
    oid = git("rev-parse", f"{history['base']}:.ledgit/tasks/T-2.md", cwd=repo)
    names = [oid, "HEAD:README", "HEAD:.ledgit/tasks", "HEAD:no such file",
             f"{history['base']}:.ledgit/tasks/T-2.md", "0" * 40]
    assert objects.cat_blobs(repo / ".ledgit", names) == {
        oid: b"T-2 v1\n", "HEAD:README": b"readme\n", "HEAD:.ledgit/tasks": None,
        "HEAD:no such file": None, f"{history['base']}:.ledgit/tasks/T-2.md": b"T-2 v1\n",
        "0" * 40: None}
    assert objects.cat_blobs(repo, []) == {}
    with pytest.raises(LedgitError):
        objects.cat_blobs(repo, ["HEAD:a\nb"])
