"""Issue 28, "Line-merged task files speak YAML, not Git": in a clone without ``ledgit
install`` Git line-merges a task file and its history; every read and write that meets the
markers then says so in one line naming the file and ``ledgit resolve`` (exit 1, a merge
conflict, DESIGN §9), never the YAML parser's complaint. Real repositories, real merges."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from gitflow import commit_all, create, git_rc, ledgit, new_repo
from gitutil import git

from ledgit.core.markers import line_merge_refusal

pytest_plugins = ["gitutil"]


def _line_merged(tmp_path: Path) -> tuple[Path, str]:
    """A repository without the driver where ``git merge side`` left a task file and its
    history with Git's own conflict markers; (repo, task id)."""
    repo = new_repo(tmp_path / "repo", install=False)
    tid = create(repo, "One", "--priority", "1", "--by", "lead")
    commit_all(repo, "task")
    git("switch", "-q", "-c", "side", cwd=repo)
    ledgit(repo, "update", tid, "--title", "side title", "--priority", "3", "--by", "bob")
    commit_all(repo, "side")
    git("switch", "-q", "main", cwd=repo)
    ledgit(repo, "update", tid, "--title", "main title", "--priority", "2", "--by", "ann")
    commit_all(repo, "main")
    merge = git_rc(repo, "merge", "--no-edit", "side")
    assert merge.returncode == 1 and "CONFLICT (content)" in merge.stdout
    return repo, tid


def test_every_read_and_write_of_a_line_merged_task_names_the_file_and_resolve(
        tmp_path: Path, git_env: Path) -> None:
    repo, tid = _line_merged(tmp_path)
    task = f".ledgit/tasks/{tid}.md"
    history = f".ledgit/history/{tid}.jsonl"
    for args, path in ((("get", tid), task), (("get", tid, "--json"), task),
                       (("handoff", tid), task), (("item", "list", tid), task),
                       (("update", tid, "--priority", "1", "--by", "ann"), task),
                       (("claim", tid, "--by", "ann"), task),
                       (("complete", tid, "--response", "x", "--by", "ann"), task),
                       (("history", tid), history)):
        r = ledgit(repo, *args, code=1)
        assert r.out == ""
        lines = r.err.splitlines()
        assert len(lines) == 1, (args, r.err)
        assert lines[0].startswith(f"ledgit: {path}:")
        assert "conflict marker" in lines[0] and f"ledgit resolve {path}" in lines[0]
        assert "YAML" not in lines[0] and "JSON" not in lines[0]
    # the board-wide reads skip it with the same line, and ready does not say "no tasks yet"
    for args in (("list",), ("ready",), ("search", "title")):
        r = ledgit(repo, *args)
        assert f"skipped: {task}:" in r.err and f"ledgit resolve {task}" in r.err
        assert "no tasks yet" not in r.err and "YAML" not in r.err
    # and ledgit resolve, named in the hint, fixes it
    ledgit(repo, "resolve")
    assert ledgit(repo, "get", tid, "--json").code == 0


def test_the_next_command_after_git_s_conflict_names_resolve_and_install(
        tmp_path: Path, git_env: Path) -> None:
    """Whatever the next command is -- here one that never reads the conflicted task."""
    repo, tid = _line_merged(tmp_path)
    r = ledgit(repo, "create", "Something else", "--by", "ann")
    hint = r.err.splitlines()[-1]
    assert hint.startswith("ledgit: warning: Git stopped with 2 task file(s) unmerged (")
    assert f".ledgit/tasks/{tid}.md" in hint and "run ledgit resolve" in hint
    assert "then ledgit install" in hint  # this clone has no driver
    assert r.err.count("ledgit resolve") == 1
    ledgit(repo, "resolve")
    assert "Git stopped" not in ledgit(repo, "create", "And more", "--by", "ann").err


def test_markers_in_a_body_alone_are_read_with_a_warning(
        tmp_path: Path, git_env: Path) -> None:
    """A body conflict the driver leaves is still a readable record (unchanged behaviour)."""
    repo = new_repo(tmp_path / "repo", install=False)
    tid = create(repo, "One", "--by", "lead")
    path = repo / ".ledgit" / "tasks" / f"{tid}.md"
    path.write_text(path.read_text() + "<<<<<<< ours\na\n=======\nb\n>>>>>>> theirs\n")
    r = ledgit(repo, "get", tid)
    assert "conflict markers" in r.err and tid in r.out


@pytest.mark.parametrize("text, line", [
    ("---\nid: T-1\n<<<<<<< HEAD\npriority: 2\n=======\npriority: 3\n>>>>>>> side\n---\n", 3),
    ("no markers here\n", None),
])
def test_line_merge_refusal_names_the_first_marker(text: str, line: int | None) -> None:
    message = line_merge_refusal("a.md", text)
    if line is None:
        assert message is None
    else:
        assert message is not None and message.startswith(f"a.md:{line}: 2 conflict marker")
        assert message.endswith("(run: ledgit resolve a.md)")


def test_mcp_get_and_update_of_a_line_merged_task_name_resolve(
        tmp_path: Path, git_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("mcp", reason="the MCP SDK (pip install -e '.[mcp]')")
    import anyio
    from mcp import Client

    from ledgit.mcp.server import build_server

    repo, tid = _line_merged(tmp_path)
    monkeypatch.setenv("LEDGIT_ACTOR", "ann")

    async def run() -> list[dict[str, Any]]:
        server, boards = build_server(repo)
        try:
            async with Client(server) as client:  # type: ignore[arg-type]
                out = []
                for name, args in (("get", {"task": tid}),
                                   ("update", {"task": tid, "priority": 1})):
                    result = await client.call_tool(name, args)
                    assert result.is_error
                    out.append(result.structured_content["error"])  # type: ignore[index]
                return out
        finally:
            boards.close()

    for error in anyio.run(run):
        assert (error["code"], error["kind"]) == (1, "check_failed"), error
        assert f"ledgit resolve .ledgit/tasks/{tid}.md" in error["message"]
