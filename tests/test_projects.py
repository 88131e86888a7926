"""Boards across projects (issue 17): registrations, --project, ALIAS:ID dependencies, with
three real repositories: ``app``, its sibling ``lib`` (working tree) and ``spec`` (pinned by
a Git ref)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from gitutil import git, isolate_env

from ledgit.__main__ import run


class Repos:
    def __init__(self, tmp: Path, capsys: pytest.CaptureFixture[str],
                 monkeypatch: pytest.MonkeyPatch) -> None:
        self.tmp, self.capsys, self.monkeypatch = tmp, capsys, monkeypatch
        for name in ("app", "lib", "spec"):
            repo = tmp / name
            git("init", "-q", str(repo), cwd=tmp)
            assert self.cli(name, "init")[0] == 0
            self.commit(name, "init")

    def cli(self, where: str, *args: str) -> tuple[int, str, str]:
        self.monkeypatch.chdir(self.tmp / where)
        self.capsys.readouterr()
        code = run(list(args))
        got = self.capsys.readouterr()
        return code, got.out, got.err

    def ok(self, where: str, *args: str) -> str:
        code, out, err = self.cli(where, *args)
        assert code == 0, (args, out, err)
        return out.strip()

    def json(self, where: str, *args: str) -> dict:
        return json.loads(self.ok(where, *args, "--json"))

    def commit(self, where: str, message: str) -> None:
        git("add", "-A", cwd=self.tmp / where)
        git("commit", "-q", "--allow-empty", "-m", message, cwd=self.tmp / where)


@pytest.fixture
def repos(tmp_path: Path, capsys: pytest.CaptureFixture[str],
          monkeypatch: pytest.MonkeyPatch) -> Repos:
    isolate_env(tmp_path / "home", monkeypatch)
    monkeypatch.setenv("LEDGIT_ACTOR", "agent-a")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home" / ".config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home" / ".cache"))
    return Repos(tmp_path, capsys, monkeypatch)


def ready_ids(r: Repos, where: str = "app") -> list[str]:
    return [t["id"] for t in r.json(where, "ready")["tasks"]]


def test_a_task_depending_on_another_boards_task_is_blocked_until_it_is_done(repos: Repos
                                                                          ) -> None:
    r = repos
    lib_task = r.ok("lib", "create", "Ship the client API")
    r.ok("app", "project", "add", "lib", "../lib")
    assert (r.tmp / "app/.ledgit/projects.yaml").read_text().count("../lib") == 1
    app_task = r.ok("app", "create", "Use the client API", "--depends", f"lib:{lib_task[:8]}")
    fields = r.json("app", "get", app_task)
    assert fields["depends_on"] == [f"lib:{lib_task}"]  # resolved to the full id there
    ext = fields["external_dependencies"]
    assert [(e["dependency"], e["status"]) for e in ext] == [(f"lib:{lib_task}", "open")]
    assert "working tree of" in ext[0]["source"]
    assert ready_ids(r) == []
    code, _, err = r.cli("app", "claim", app_task)
    assert code == 2 and f"lib:{lib_task} (open)" in err
    r.ok("lib", "claim", lib_task)
    r.ok("lib", "complete", lib_task, "--response", "shipped")
    assert ready_ids(r) == [app_task]
    r.ok("app", "claim", app_task)
    assert r.cli("app", "verify")[0] == 0


def test_project_option_reads_and_writes_the_registered_board_and_fails_closed(repos: Repos
                                                                           ) -> None:
    r = repos
    lib_task = r.ok("lib", "create", "Lib work")
    code, _, err = r.cli("app", "list", "--project", "lib")
    assert code == 4 and "'lib' is not registered" in err and err.count("\n") == 1
    r.ok("app", "project", "add", "lib", "../lib")
    assert lib_task in r.ok("app", "list", "--project", "lib")
    r.ok("app", "update", lib_task, "--title", "Lib work, renamed", "--project", "lib")
    assert r.json("lib", "get", lib_task)["title"] == "Lib work, renamed"
    assert r.cli("lib", "verify")[0] == 0
    # every row of --projects names its board
    app_task = r.ok("app", "create", "App work")
    rows = r.json("app", "list", "--projects")["tasks"]
    assert {(t["board"], t["id"]) for t in rows} == {("app", app_task), ("lib", lib_task)}
    text = r.ok("app", "ready", "--projects")
    assert any(line.startswith("lib ") and lib_task in line for line in text.splitlines())


def test_a_removed_sibling_and_a_renamed_alias_fail_closed_and_show_unknown(repos: Repos
                                                                        ) -> None:
    r = repos
    lib_task = r.ok("lib", "create", "Lib work")
    r.ok("app", "project", "add", "lib", "../lib")
    app_task = r.ok("app", "create", "App work", "--depends", f"lib:{lib_task}")
    # renamed alias: the dependency still names "lib", which is no longer registered
    r.ok("app", "project", "remove", "lib")
    r.ok("app", "project", "add", "library", "../lib")
    ext = r.json("app", "get", app_task)["external_dependencies"][0]
    assert ext["status"] == "UNKNOWN" and "'lib' is not registered" in ext["reason"]
    code, out, _ = r.cli("app", "verify")
    assert code == 1 and "project 'lib' is not registered" in out
    assert ready_ids(r) == []
    r.ok("app", "project", "remove", "library")
    r.ok("app", "project", "add", "lib", "../lib")
    assert r.cli("app", "verify")[0] == 0
    # removed sibling: every way in says so in one line
    r.ok("lib", "complete", lib_task, "--response", "done", "--outcome", "done")
    assert ready_ids(r) == [app_task]
    shutil.rmtree(r.tmp / "lib")
    ext = r.json("app", "get", app_task)["external_dependencies"][0]
    assert ext["status"] == "UNKNOWN" and "no ledgit board at" in ext["reason"]
    assert ready_ids(r) == []
    code, _, err = r.cli("app", "list", "--project", "lib")
    assert code == 4 and "no ledgit board at" in err
    listing = r.json("app", "project", "list")["projects"]
    assert listing[0]["readable"] is False
    code, _, err = r.cli("app", "claim", app_task)
    assert code == 2 and "(missing)" in err


def test_a_board_pinned_at_a_ref_is_read_there_and_follows_the_ref_when_it_moves(repos: Repos
                                                                             ) -> None:
    r = repos
    spec_task = r.ok("spec", "create", "Write the spec")
    r.commit("spec", "spec task")
    git("tag", "v1", cwd=r.tmp / "spec")
    r.ok("app", "project", "add", "spec", "../spec", "--ref", "v1")
    app_task = r.ok("app", "create", "Implement the spec", "--depends", f"spec:{spec_task}")
    # done in spec's working tree (and committed), but v1 still says open
    r.ok("spec", "complete", spec_task, "--response", "written")
    r.commit("spec", "spec done")
    ext = r.json("app", "get", app_task)["external_dependencies"][0]
    assert ext["status"] == "open" and ext["source"].startswith("v1 at ")
    assert ready_ids(r) == []
    # the ref moves: the board is read at its new commit
    git("tag", "-f", "v1", cwd=r.tmp / "spec")
    ext = r.json("app", "get", app_task)["external_dependencies"][0]
    assert ext["status"] == "done"
    assert ready_ids(r) == [app_task]
    # a pinned board is read-only through the alias
    code, _, err = r.cli("app", "update", spec_task, "--title", "x", "--project", "spec")
    assert code == 2 and "read at ref v1" in err
    assert r.json("spec", "get", spec_task)["title"] == "Write the spec"
    # a ref that names nothing fails closed
    code, _, err = r.cli("app", "project", "add", "bad", "../spec", "--ref", "no-such-ref")
    assert code == 4 and "'no-such-ref' does not resolve" in err
    assert "bad" not in (r.tmp / "app/.ledgit/projects.yaml").read_text()


def test_a_dependency_cycle_across_boards_is_reported_and_never_loops(repos: Repos) -> None:
    r = repos
    r.ok("app", "project", "add", "lib", "../lib")
    r.ok("lib", "project", "add", "app", "../app")
    lib_task = r.ok("lib", "create", "Lib side")
    app_task = r.ok("app", "create", "App side", "--depends", f"lib:{lib_task}")
    r.ok("lib", "update", lib_task, "--depends", f"app:{app_task}")
    readout = r.json("app", "get", app_task)
    assert readout["dependency_cycle"] == [f"app:{app_task}", f"lib:{lib_task}",
                                           f"app:{app_task}"]
    code, out, _ = r.cli("app", "verify")
    assert code == 1 and "dependency cycle across boards" in out
    assert ready_ids(r) == [] and ready_ids(r, "lib") == []


def test_a_board_may_refuse_to_be_reached_and_user_registrations_override(repos: Repos
                                                                      ) -> None:
    r = repos
    lib_task = r.ok("lib", "create", "Private work")
    r.ok("app", "project", "add", "lib", "../lib")
    (r.tmp / "lib/.ledgit/projects.yaml").write_text("name: lib\nallow: [client]\n")
    code, _, err = r.cli("app", "list", "--project", "lib")
    assert code == 2 and "does not allow 'app'" in err
    (r.tmp / "app/.ledgit/projects.yaml").write_text(
        (r.tmp / "app/.ledgit/projects.yaml").read_text() + 'name: "client"\n')
    assert lib_task in r.ok("app", "list", "--project", "lib")
    # a per-user registration of the alias overrides the team's (a moved checkout)
    shutil.copytree(r.tmp / "lib", r.tmp / "elsewhere")
    r.ok("app", "project", "add", "lib", str(r.tmp / "elsewhere"), "--user")
    listing = r.json("app", "project", "list")["projects"]
    assert [(p["alias"], p["source"]) for p in listing] == [("lib", "user")]
    assert (r.tmp / "home/.config/ledgit/projects.yaml").exists()
    # a malformed file: one line naming file, line and field
    (r.tmp / "app/.ledgit/projects.yaml").write_text("projects:\n  lib: {path: ../lib, x: 1}\n")
    code, _, err = r.cli("app", "project", "list")
    assert code == 2 and "projects.yaml:2" in err and "projects.lib.x" in err


def test_this_board_is_never_registered_nor_listed_twice(repos: Repos) -> None:
    """Found by a fresh-user trial: ``project add self .`` listed every task twice in
    ``ready --projects``. Registering the board itself is refused (exit 2, nothing written);
    one already on file (hand-written, or through a link) and a second alias of one board are
    left out of ``--projects`` with a warning naming them."""
    r = repos
    tid = r.ok("app", "create", "Only once")
    for path in (".", str(r.tmp / "app"), "../app"):
        code, out, err = r.cli("app", "project", "add", "self", path)
        assert code == 2 and out == "", err
        assert err == (f"ledgit: project add self: {path} is this board ({r.tmp / 'app'}); it "
                       f"reaches its own tasks without a registration (depend on ID, not "
                       f"self:ID)\n")
    assert not (r.tmp / "app/.ledgit/projects.yaml").exists()
    (r.tmp / "link").symlink_to(r.tmp / "app")
    (r.tmp / "app/.ledgit/projects.yaml").write_text(
        'projects:\n  "lib": {path: "../lib"}\n  "lib2": {path: "../lib/."}\n'
        '  "self": {path: "../link"}\n')
    lib_task = r.ok("lib", "create", "Lib work")
    code, out, err = r.cli("app", "ready", "--projects", "--json")
    assert code == 0, err
    got = json.loads(out)
    assert sorted((t["board"], t["id"]) for t in got["tasks"]) == [("app", tid),
                                                                    ("lib", lib_task)]
    assert got["boards"] == ["app", "lib"]
    assert f"ledgit: warning: project self is this board ({r.tmp / 'link'}); left out " \
           f"(ledgit project remove self)" in err
    assert "ledgit: warning: project lib2 is project lib" in err


def test_adding_a_directory_without_a_board_registers_nothing_and_says_so(repos: Repos
                                                                         ) -> None:
    r = repos
    before = r.json("app", "project", "list")["projects"]
    code, _, err = r.cli("app", "project", "add", "nope", "../nonexistent")
    assert code == 4
    assert "no ledgit board at" in err and "nothing registered" in err
    assert "registered in" not in err
    assert r.json("app", "project", "list")["projects"] == before
