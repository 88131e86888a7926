"""The gate refuses what the commands refuse (issue 36, item 10): a malformed board config,
a dependency on a task no board holds, control characters in a title or a label; and
``project add --ref`` reads the other board at that ref. Real Git repositories, ledgit run
in-process (tests/gitflow.py)."""

from __future__ import annotations

import json
from pathlib import Path

from gitflow import commit_all, create, ledgit, new_repo, task_file
from gitutil import git

pytest_plugins = ["gitutil"]

BAD_CONFIG = 'id_prefix: "T"\nclaim_ttl: banana\n'


def _repo(tmp_path: Path) -> tuple[Path, str, str]:
    repo = new_repo(tmp_path / "repo")
    base = git("rev-parse", "HEAD", cwd=repo)
    tid = create(repo, "Gate me", "--by", "lead")
    commit_all(repo, "task")
    return repo, base, tid


# --------------------------------------------------------------------------- config.yaml


def test_a_malformed_config_fails_verify_as_every_command(tmp_path: Path,
                                                          git_env: Path) -> None:
    repo, base, _ = _repo(tmp_path)
    (repo / ".ledgit" / "config.yaml").write_text(BAD_CONFIG, encoding="utf-8")
    where = ".ledgit/config.yaml:2: claim_ttl: invalid duration 'banana'"
    for args in (["list"], ["verify"], ["verify", "--all"], ["verify", "--json"],
                 ["verify", "--format", "github"], ["check"]):
        r = ledgit(repo, *args, code=2)
        assert where in r.err and "Traceback" not in r.err, (args, r.err)
        assert len(r.err.strip().splitlines()) == 1, r.err
    # committed past the hook, the gate fails the commit that holds it, naming the line
    git("commit", "-q", "--no-verify", "-am", "bad config", cwd=repo)
    for args in (["--rev", "HEAD"], ["--range", f"{base}..HEAD"]):
        r = ledgit(repo, "verify", *args, code=1)
        assert ".ledgit/config.yaml:2: config: claim_ttl: invalid duration" in r.out, r.out
    report = json.loads(ledgit(repo, "verify", "--rev", "HEAD", "--format", "json",
                               code=1).out)
    assert [(p["path"], p["line"], p["rule"]) for p in report["problems"]] == [
        (".ledgit/config.yaml", 2, "config")]
    # fixed in a later commit: the range still names the commit that held it, --rev passes
    (repo / ".ledgit" / "config.yaml").write_text('id_prefix: "T"\nclaim_ttl: 30m\n',
                                                  encoding="utf-8")
    commit_all(repo, "config fixed")
    ledgit(repo, "verify", "--rev", "HEAD")
    ledgit(repo, "verify")
    r = ledgit(repo, "verify", "--range", f"{base}..HEAD", code=1)
    assert r.out.count("config: claim_ttl") == 1


# --------------------------------------------------------------------------- depends_on


def test_a_dependency_on_no_task_is_refused_unless_asked_for(tmp_path: Path,
                                                            git_env: Path) -> None:
    repo, _, tid = _repo(tmp_path)
    other = create(repo, "Another", "--by", "lead")
    before = task_file(repo, tid).read_bytes()
    for args in (["update", tid, "--set", "depends_on=T-nope"],
                 ["update", tid, "--set", f"depends_on={other},T-nope"],
                 ["update", tid, "--depends", "T-nope"]):
        r = ledgit(repo, *args, "--by", "a", code=4)
        assert "T-nope" in r.err and "--allow-unknown-deps" in r.err, r.err
    r = ledgit(repo, "create", "Blocked on nothing", "--depends", "T-nope", code=4)
    assert "--allow-unknown-deps" in r.err
    assert task_file(repo, tid).read_bytes() == before
    # a known task given by a unique prefix is stored by its full id
    ledgit(repo, "update", tid, "--set", f"depends_on={other[:6]}", "--by", "a")
    assert json.loads(ledgit(repo, "get", tid, "--json").out)["depends_on"] == [other]
    # asked for (the task may be on another branch): stored, and verify warns, exit 0
    ledgit(repo, "update", tid, "--set", "depends_on=T-elsewhere", "--allow-unknown-deps",
           "--by", "a")
    made = create(repo, "Waits on a branch", "--depends", "T-onbranch",
                  "--allow-unknown-deps")
    assert json.loads(ledgit(repo, "get", tid, "--json").out)["depends_on"] == ["T-elsewhere"]
    r = ledgit(repo, "verify")
    warned = [line for line in r.err.splitlines() if "warning" in line]
    assert len(warned) == 2, r.err
    assert any(tid in w and "depends_on" in w and "T-elsewhere" in w for w in warned)
    assert any(made in w and "T-onbranch" in w for w in warned)
    r = ledgit(repo, "verify", "--json")
    assert {(w["task"], w["dependency"]) for w in json.loads(r.out)["warnings"]} == {
        (tid, "T-elsewhere"), (made, "T-onbranch")}


# --------------------------------------------------------------------------- control characters


def test_control_characters_in_a_title_or_a_label_are_refused(tmp_path: Path,
                                                             git_env: Path) -> None:
    repo, base, tid = _repo(tmp_path)
    before = task_file(repo, tid).read_bytes()
    for args, field in ((["create", "bell\x07here"], "title"),
                        (["create", "ok", "--label", "a\x1bb"], "labels[0]"),
                        (["update", tid, "--title", "vt\x0bhere"], "title"),
                        (["update", tid, "--title", "csi\x9bx"], "title"),
                        (["update", tid, "--label", "x\x7f"], "labels[0]"),
                        (["update", tid, "--set", "labels=fine,esc\x1b[31m"], "labels[1]")):
        r = ledgit(repo, *args, "--by", "a", code=2)
        assert f"{field}: control character" in r.err, (args, r.err)
        assert "Traceback" not in r.err
    assert task_file(repo, tid).read_bytes() == before
    # a hand edit that writes one (YAML escapes it) is refused by verify and the gate
    path = task_file(repo, tid)
    path.write_text(path.read_text(encoding="utf-8").replace("title: Gate me",
                                                             'title: "Gate\\x07me"'),
                    encoding="utf-8")
    r = ledgit(repo, "verify", code=1)
    assert "title: control character U+0007" in r.out + r.err
    git("commit", "-q", "--no-verify", "-am", "bell", cwd=repo)
    r = ledgit(repo, "verify", "--rev", "HEAD", code=1)
    assert "schema: title: control character U+0007" in r.out, r.out
    # a tab is text (YAML's printable); so is Unicode beyond the controls: NBSP, a
    # zero-width joiner, an emoji
    ledgit(repo, "create", "caf\u00e9\u00a0\U0001f469\u200d\U0001f4bb\tx", "--label",
           "\u00e9t\u00e9", "--by", "a")


# --------------------------------------------------------------------------- project --ref


def test_project_add_with_a_ref_reads_the_board_at_that_ref(tmp_path: Path,
                                                            git_env: Path) -> None:
    app = new_repo(tmp_path / "app", install=False)
    spec = new_repo(tmp_path / "spec", install=False)
    task = create(spec, "Write the spec")
    commit_all(spec, "spec task")
    git("tag", "v1", cwd=spec)
    # the sibling's work tree moved on to a commit without a board
    git("rm", "-q", "-r", ".ledgit", cwd=spec)
    commit_all(spec, "board moved away")
    assert not (spec / ".ledgit").exists()
    r = ledgit(app, "project", "add", "spec", "../spec", "--ref", "v1")
    assert "spec" in r.out
    made = create(app, "Implement it", "--depends", f"spec:{task}")
    ext = json.loads(ledgit(app, "get", made, "--json").out)["external_dependencies"][0]
    assert ext["status"] == "open" and ext["source"].startswith("v1 at ")
    # the other way round: a board in the work tree but none at the ref is refused
    git("checkout", "-q", "v1", cwd=spec)
    assert (spec / ".ledgit").is_dir()
    empty_tree = git("hash-object", "-t", "tree", "--stdin", cwd=spec, input=b"")
    git("tag", "bare", git("commit-tree", "-m", "no board", empty_tree, cwd=spec), cwd=spec)
    r = ledgit(app, "project", "add", "nothing", "../spec", "--ref", "bare", code=4)
    assert "no ledgit board at bare" in r.err, r.err
    assert "nothing" not in (app / ".ledgit" / "projects.yaml").read_text(encoding="utf-8")
