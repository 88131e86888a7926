"""``ledgit forge update`` (issue 27, DESIGN §12): a pull request branch whose only conflicts
with its base are task files is merged with ledgit's driver by a bot, checked, and pushed with
a lease; a forge (a bare repository here) then merges it by fast-forward or by a plain merge
with no driver anywhere, and the gate passes at every step.

The full run (``LEDGIT_FORGE_BRANCHES=20``, or the ``stress`` marker) takes each of 20
branches through; the default takes 4."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from forgeflow import (
    SPEC,
    Forge,
    agent_branch,
    events_at,
    forge_merge,
    gate,
    make_forge,
    outcome_lines,
    run_workflow,
    tip,
)
from gitflow import commit_all, create, edit_body, ledgit
from gitutil import git
from sourcetree import copy_sources

from ledgit.integration.workflows import GATE, UPDATE, WORKFLOWS, gate_text, workflow_text

pytest_plugins = ["gitutil"]

BRANCHES = int(os.environ.get("LEDGIT_FORGE_BRANCHES", "4"))
FULL = 20


def worktrees(repo: Path) -> list[str]:
    return [line for line in git("worktree", "list", "--porcelain", cwd=repo).splitlines()
            if line.startswith("worktree ")]


def code_clash(forge: Forge) -> str:
    """A branch that edits a shared task and the app's second line, then ``main`` edits that
    line too (pushed): a conflict no driver may resolve. Returns the branch's tip."""
    agent = forge.agent
    git("fetch", "-q", "origin", cwd=agent)
    git("switch", "-q", "-C", "code-clash", "origin/main", cwd=agent)
    ledgit(agent, "update", forge.shared[0], "--label", "clash", "--by", "clasher")
    (agent / "src" / "app.txt").write_text("line one\nline two, the branch's\nline three\n")
    head = commit_all(agent, "clash")
    git("push", "-q", "origin", "code-clash", cwd=agent)
    git("switch", "-q", "-C", "main-edit", "origin/main", cwd=agent)
    (agent / "src" / "app.txt").write_text("line one\nline two, main's\nline three\n")
    commit_all(agent, "main edits the app")
    git("push", "-q", "origin", "main-edit:main", cwd=agent)
    return head


def run_forge(forge: Forge, n: int, tmp_path: Path) -> None:
    """Issue 27's acceptance: ``n`` agents push ``n`` branches touching overlapping tasks (and
    one branch also conflicting in code); after each push to ``main`` the command runs as the
    workflow runs it (the open branches, ``--conflicting``); the forge merges each branch in
    turn, alternately by fast-forward and by a plain merge; the gate passes on every
    intermediate ``main``; ``main`` ends holding every event of every branch."""
    solo = solo_branch(forge)  # touches no shared task: the forge can merge it as it is
    clash = code_clash(forge)  # main moves on here: solo is behind from the start
    branches = {f"agent-{i}": agent_branch(forge, f"agent-{i}", i) for i in range(n)}
    wanted = set().union(*(events_at(forge.bare, t) for t in [*branches.values(), solo]))
    open_branches = sorted(branches, key=lambda b: int(b.split("-")[1]))
    updates = 0
    start = tip(forge.bare, "main")
    for k in range(n):
        # the workflow, on the push to main: every open pull request, only those a forge
        # cannot merge; exit 1 because one of them conflicts in code
        ran = run_workflow(forge.bot, tmp_path, [*open_branches, "code-clash", "solo"])
        assert ran.returncode == 1, ran.stdout + ran.stderr
        said = outcome_lines(ran.stdout)
        assert said.pop("code-clash") == ("conflicts outside task files; left untouched: "
                                          "src/app.txt")
        assert tip(forge.bare, "code-clash") == clash  # left untouched
        assert said.pop("solo") == ("a line merge of origin/main has no conflict (left to "
                                    "the forge)")
        assert tip(forge.bare, "solo") == solo
        assert set(said) == set(open_branches), ran.stdout
        for name, line in said.items():
            assert line.startswith(("merged origin/main by ledgit's driver, pushed ",
                                    "a line merge of origin/main has no conflict",
                                    "up to date with origin/main")), (name, line)
            updates += line.startswith("merged")
        branch = open_branches.pop(0)
        old, new = forge_merge(forge.bare, branch, no_ff=k % 2 == 1)
        gate(forge.bare, f"{old}..{new}")
    assert updates >= n - 1  # every branch but the first needed the driver at least once
    old, new = forge_merge(forge.bare, "solo", no_ff=True)  # the forge's own line merge
    gate(forge.bare, f"{old}..{new}")
    final = tip(forge.bare, "main")
    gate(forge.bare, f"{start}..{final}")
    lost = wanted - events_at(forge.bare, final)
    assert not lost, f"{len(lost)} event(s) lost: {sorted(lost)[:5]}"
    assert worktrees(forge.bot) == [f"worktree {forge.bot}"]
    print(f"forge: {n} branches on overlapping tasks + 1 clean + 1 code conflict, {n} "
          f"workflow runs, {updates} driver merges pushed, {len(wanted)} events, 0 lost, "
          f"{n + 1} gates green, 0 human steps")


def solo_branch(forge: Forge) -> str:
    """A branch that only creates a task of its own: pushed, returns its tip."""
    git("fetch", "-q", "origin", cwd=forge.agent)
    git("switch", "-q", "-C", "solo", "origin/main", cwd=forge.agent)
    create(forge.agent, "a task of its own", "--by", "solo")
    head = commit_all(forge.agent, "solo")
    git("push", "-q", "origin", "solo", cwd=forge.agent)
    return head


def test_branches_touching_the_same_tasks_all_merge_with_no_person(
        tmp_path: Path, git_env: Path) -> None:
    run_forge(make_forge(tmp_path), BRANCHES, tmp_path)


@pytest.mark.stress
def test_twenty_branches_all_merge_with_no_person(tmp_path: Path, git_env: Path) -> None:
    run_forge(make_forge(tmp_path), FULL, tmp_path)


def test_a_plain_merge_of_such_branches_conflicts_without_the_command(
        tmp_path: Path, git_env: Path) -> None:
    """What the command is for: without it the forge cannot merge the second branch."""
    forge = make_forge(tmp_path)
    agent_branch(forge, "one", 0)
    agent_branch(forge, "two", 1)
    forge_merge(forge.bare, "one", no_ff=False)
    proc = subprocess.run(["git", "merge-tree", "--write-tree", "--name-only", "main", "two"],
                          cwd=forge.bare, capture_output=True, text=True, check=False)
    assert proc.returncode == 1 and ".ledgit/" in proc.stdout


def test_idempotent_one_line_per_outcome_and_json(tmp_path: Path, git_env: Path) -> None:
    forge = make_forge(tmp_path)
    one = agent_branch(forge, "one", 0)
    two = agent_branch(forge, "two", 1)
    forge_merge(forge.bare, "one", no_ff=False)
    result = ledgit(forge.bot, "forge", "update", "two", "--base", "main")
    lines = result.out.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"two: merged origin/main by ledgit's "
                                                   f"driver, pushed {two[:12]}..")
    updated = tip(forge.bare, "two")
    assert git("rev-parse", "two^1", cwd=forge.bare) == two  # the branch's old tip, kept
    assert git("rev-parse", "two^2", cwd=forge.bare) == tip(forge.bare, "main")
    again = ledgit(forge.bot, "forge", "update", "two", "--base", "main", "--json")
    doc = json.loads(again.out)
    assert doc["base"] == "main" and doc["remote"] == "origin"
    assert doc["branches"] == [{"branch": "two", "outcome": "up-to-date", "old": updated,
                                "new": updated, "pushed": False, "files": [], "attempts": 1,
                                "message": "two: up to date with origin/main (nothing "
                                           "pushed)"}]
    assert tip(forge.bare, "two") == updated
    # the forge now fast-forwards, and the gate passes
    old, new = forge_merge(forge.bare, "two", no_ff=False)
    assert new == updated
    gate(forge.bare, f"{old}..{new}")
    # a branch already merged into a base that moved on: nothing to do either
    merged = ledgit(forge.bot, "forge", "update", "one", "--base", "main")
    assert merged.out == "one: already in origin/main (nothing pushed)\n"
    assert tip(forge.bare, "one") == one


def test_rebase_instead_of_merge(tmp_path: Path, git_env: Path) -> None:
    forge = make_forge(tmp_path)
    agent_branch(forge, "one", 0)
    two = agent_branch(forge, "two", 1)
    wanted = events_at(forge.bare, two)
    forge_merge(forge.bare, "one", no_ff=False)
    result = ledgit(forge.bot, "forge", "update", "two", "--base", "main", "--rebase")
    assert "two: rebased onto origin/main by ledgit's driver, pushed" in result.out
    rebased = tip(forge.bare, "two")
    assert git("rev-parse", "two^", cwd=forge.bare) == tip(forge.bare, "main")  # linear
    assert wanted <= events_at(forge.bare, rebased)
    old, new = forge_merge(forge.bare, "two", no_ff=False)
    gate(forge.bare, f"{old}..{new}")


def test_a_push_racing_the_bot_is_never_overwritten(tmp_path: Path, git_env: Path) -> None:
    """The agent pushes between the bot's fetch and its push (from the bot's pre-push hook:
    after the lease was checked against the remote's refs, before the remote updates the
    ref): the remote refuses the bot's push, the bot fetches again, merges again and pushes;
    the agent's commit and its events are in the result."""
    forge = make_forge(tmp_path)
    agent_branch(forge, "one", 0)
    two = agent_branch(forge, "two", 1)
    forge_merge(forge.bare, "one", no_ff=False)
    # the agent's next commit on "two", made now, pushed by the hook
    ledgit(forge.agent, "update", forge.shared[1], "--label", "late", "--by", "agent-1")
    late = commit_all(forge.agent, "agent 1, later")
    late_events = events_at(forge.agent, late)
    marker = tmp_path / "raced"
    hook = forge.bot / ".git" / "hooks" / "pre-push"
    hook.write_text("#!/bin/sh\n"
                    f"if [ ! -e '{marker}' ]; then\n"
                    f"  touch '{marker}'\n"
                    "  unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE\n"
                    f"  git -C '{forge.agent}' push -q origin two:two || exit 1\n"
                    "fi\n"
                    "cat >/dev/null\n")
    hook.chmod(0o755)
    result = ledgit(forge.bot, "forge", "update", "two", "--base", "main", "--json")
    [outcome] = json.loads(result.out)["branches"]
    assert marker.exists()
    assert outcome["outcome"] == "updated" and outcome["attempts"] == 2
    assert outcome["old"] == late  # the lease of the second attempt: the agent's push
    head = tip(forge.bare, "two")
    assert subprocess.run(["git", "merge-base", "--is-ancestor", late, head],
                          cwd=forge.bare, check=False).returncode == 0
    assert late_events | events_at(forge.bare, two) <= events_at(forge.bare, head)
    old, new = forge_merge(forge.bare, "two", no_ff=True)
    gate(forge.bare, f"{old}..{new}")


def test_a_branch_that_keeps_moving_is_reported(tmp_path: Path, git_env: Path) -> None:
    """Every attempt raced (the hook pushes each time): exit 5, the branch as the agent left
    it, one line saying to run again."""
    forge = make_forge(tmp_path)
    agent_branch(forge, "one", 0)
    agent_branch(forge, "two", 1)
    forge_merge(forge.bare, "one", no_ff=False)
    hook = forge.bot / ".git" / "hooks" / "pre-push"
    hook.write_text("#!/bin/sh\nunset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE\n"
                    f"cd '{forge.agent}' && git commit -q --allow-empty -m more "
                    "&& git push -q origin two:two\ncat >/dev/null\n")
    hook.chmod(0o755)
    result = ledgit(forge.bot, "forge", "update", "two", "--base", "main", code=5)
    assert result.out.startswith("two: moved on origin during each of 3 attempts (")
    assert result.out.rstrip().endswith("left untouched, run again")
    assert tip(forge.bare, "two") == git("rev-parse", "HEAD", cwd=forge.agent)


def test_a_push_the_forge_refuses_is_no_race(tmp_path: Path, git_env: Path) -> None:
    """A server hook (a protected branch) refuses the bot's push: reported at once, not
    retried as a race, and the next branch is still done."""
    forge = make_forge(tmp_path)
    agent_branch(forge, "one", 0)
    guarded = agent_branch(forge, "guarded", 1)
    agent_branch(forge, "two", 2)
    forge_merge(forge.bare, "one", no_ff=False)
    hook = forge.bare / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\nwhile read old new ref; do\n"
                    "  if [ \"$ref\" = refs/heads/guarded ]; then\n"
                    "    echo 'guarded by policy' >&2; exit 1\n"
                    "  fi\ndone\n")
    hook.chmod(0o755)
    result = ledgit(forge.bot, "forge", "update", "guarded", "two", "--base", "main",
                    "--json", code=1)
    guarded_out, two_out = json.loads(result.out)["branches"]
    assert guarded_out["outcome"] == "rejected" and guarded_out["attempts"] == 1
    assert guarded_out["message"].startswith("guarded: origin refused the push (")
    assert tip(forge.bare, "guarded") == guarded
    assert two_out["outcome"] == "updated"


def test_overlapping_body_edits_need_a_person(tmp_path: Path, git_env: Path) -> None:
    forge = make_forge(tmp_path)
    agent = forge.agent
    git("switch", "-q", "-C", "main", "origin/main", cwd=agent)
    tid = create(agent, "with a body", "--body", "The one line.\n", "--by", "seed")
    commit_all(agent, "a task with a body")
    git("push", "-q", "origin", "main", cwd=agent)
    for name in ("one", "two"):
        git("switch", "-q", "-C", name, "origin/main", cwd=agent)
        edit_body(agent, tid, "The one line.", f"Written by {name}.", by=name)
        commit_all(agent, name)
        git("push", "-q", "origin", name, cwd=agent)
    two = tip(forge.bare, "two")
    forge_merge(forge.bare, "one", no_ff=False)
    result = ledgit(forge.bot, "forge", "update", "two", "--base", "main", code=1)
    assert result.out == (f"two: task files need a person (both sides edited the same "
                          f"lines); left untouched: .ledgit/tasks/{tid}.md\n")
    assert tip(forge.bare, "two") == two
    assert worktrees(forge.bot) == [f"worktree {forge.bot}"]


def test_a_result_the_gate_refuses_is_not_pushed(tmp_path: Path, git_env: Path) -> None:
    """A branch that removed a task it never archived: its merge with a base that moved on
    would drop the task's events from the base's history -- the growth rule refuses it."""
    forge = make_forge(tmp_path)
    agent_branch(forge, "one", 0)
    agent = forge.agent
    git("switch", "-q", "-C", "lossy", "origin/main", cwd=agent)
    gone = forge.shared[2]
    git("rm", "-q", f".ledgit/tasks/{gone}.md", f".ledgit/history/{gone}.jsonl", cwd=agent)
    ledgit(agent, "update", forge.shared[0], "--label", "lossy", "--by", "lossy")
    lossy = commit_all(agent, "drops a task")
    git("push", "-q", "origin", "lossy", cwd=agent)
    forge_merge(forge.bare, "one", no_ff=False)
    result = ledgit(forge.bot, "forge", "update", "lossy", "--base", "main", "--json", code=1)
    [outcome] = json.loads(result.out)["branches"]
    assert outcome["outcome"] == "refused" and not outcome["pushed"]
    assert outcome["files"] == [f".ledgit/tasks/{gone}.md"]
    assert f"{gone} removed but not archived" in outcome["message"]
    assert tip(forge.bare, "lossy") == lossy
    assert worktrees(forge.bot) == [f"worktree {forge.bot}"]


def test_all_does_every_branch_behind_the_base(tmp_path: Path, git_env: Path) -> None:
    forge = make_forge(tmp_path)
    for i in range(3):
        agent_branch(forge, f"b{i}", i)
    forge_merge(forge.bare, "b0", no_ff=False)
    result = ledgit(forge.bot, "forge", "update", "--all", "--base", "main")
    assert [line.split(":")[0] for line in result.out.splitlines()] == ["b1", "b2"]
    again = ledgit(forge.bot, "forge", "update", "--all", "--base", "main")
    assert again.out == "every branch of origin is up to date with origin/main (nothing " \
                        "pushed)\n"


def test_usage_and_missing_things(tmp_path: Path, git_env: Path) -> None:
    forge = make_forge(tmp_path)
    agent_branch(forge, "one", 0)
    for args, code, words in (
            (("one", "--all"), 2, "give BRANCH... or --all (not both)"),
            ((), 2, "give BRANCH... or --all"),
            (("nope",), 4, ""),
            (("one", "--remote", "elsewhere"), 4, "no remote 'elsewhere'"),
            (("one", "main"), 2, "main is the base itself")):
        result = ledgit(forge.bot, "forge", "update", *args, "--base", "main", code=code)
        assert words in result.err and len(result.err.splitlines()) <= 1, result.text
    missing = ledgit(forge.bot, "forge", "update", "nope", "--base", "main", code=4)
    assert missing.out == "nope: no such branch on origin\n"
    no_base = ledgit(forge.bot, "forge", "update", "one", "--base", "trunk", code=4)
    assert no_base.err == "ledgit: no branch 'trunk' on origin (the base)\n"


# --------------------------------------------------------------------------- the workflow


def test_install_workflow_writes_the_shipped_files(tmp_path: Path, git_env: Path) -> None:
    forge = make_forge(tmp_path)
    gate_path, path = (forge.bot / WORKFLOWS[n][1] for n in (GATE, UPDATE))
    result = ledgit(forge.bot, "forge", "install-workflow", "--ledgit-spec", SPEC)
    assert result.out == f"written: {gate_path}\nwritten: {path}\n"
    assert path.read_text() == workflow_text(spec=SPEC)
    assert gate_path.read_text() == gate_text(spec=SPEC)
    again = ledgit(forge.bot, "forge", "install-workflow", "--ledgit-spec", SPEC)
    assert again.out == f"unchanged: {gate_path}\nunchanged: {path}\n"
    gate_path.unlink()
    path.write_text(path.read_text() + "# mine\n")
    refused = ledgit(forge.bot, "forge", "install-workflow", "--ledgit-spec", SPEC, code=1)
    assert "exists and differs" in refused.err and "--force" in refused.err
    assert not gate_path.exists()  # nothing half-written
    ledgit(forge.bot, "forge", "install-workflow", "--ledgit-spec", SPEC, "--force")
    assert path.read_text() == workflow_text(spec=SPEC) and gate_path.is_file()
    ledgit(forge.bot, "forge", "install-workflow", "--ledgit-spec", SPEC, "--base", "trunk",
           "--only", "update", "--force")
    assert yaml.safe_load(path.read_text())[True]["push"]["branches"] == ["trunk"]
    ledgit(forge.bot, "forge", "install-workflow", "--ledgit-spec", SPEC, "--base", "a b",
           code=2)


def test_install_workflow_from_a_local_install_needs_a_spec(tmp_path: Path,
                                                           git_env: Path) -> None:
    """This ledgit runs from a checkout (an editable install): CI cannot install that, so
    the command says what to give, in one line, and writes nothing; a named spec is checked."""
    forge = make_forge(tmp_path)
    refused = ledgit(forge.bot, "forge", "install-workflow", code=2)
    assert len(refused.err.splitlines()) == 1 and "--ledgit-spec" in refused.err
    assert "local path" in refused.err and refused.out == ""
    assert not (forge.bot / ".github").exists()
    for bad in ("ledgit", "", "a\nb", "ledgit @ ${{ secrets.X }}", 'ledgit"'):
        assert ledgit(forge.bot, "forge", "install-workflow", "--ledgit-spec", bad,
                      code=2).out == ""
    assert not (forge.bot / ".github").exists()
    shown = ledgit(forge.bot, "forge", "install-workflow", "--print-spec", "--ledgit-spec",
                   SPEC, "--json")
    assert json.loads(shown.out) == {"ledgit_spec": SPEC, "origin": "named"}
    assert not (forge.bot / ".github").exists()


def test_the_workflow_asks_for_least_permissions_and_spares_forks() -> None:
    doc = yaml.safe_load(workflow_text(spec=SPEC))
    on = doc[True]  # YAML 1.1 reads the key "on" as true
    assert set(on) == {"push", "pull_request", "workflow_dispatch"}
    assert on["push"]["branches"] == ["main"]
    assert doc["permissions"] == {"contents": "write", "pull-requests": "read"}
    group = doc["concurrency"]["group"]  # a pull request's run never cancels the base's
    assert "format('pr-{0}', github.event.pull_request.number)" in group
    assert "format('base-{0}', github.ref_name)" in group
    [job] = doc["jobs"].values()
    assert "permissions" not in job
    fork, checkout, _, run = job["steps"]
    same = "github.event.pull_request.head.repo.full_name == github.repository"
    assert fork["if"] == ("github.event_name == 'pull_request' && "
                          "github.event.pull_request.head.repo.full_name != github.repository")
    assert same in checkout["if"] and same in run["if"]
    assert '>> "$GITHUB_STEP_SUMMARY"' in fork["run"]
    assert "gh " not in fork["run"] and "comment" not in fork["run"].replace(
        "comment nowhere", "")
    assert "git pull --no-rebase --no-edit $UPSTREAM $BASE" in fork["run"]
    assert "ledgit forge update $branches --base \"$BASE\" --conflicting" in run["run"]
    assert "isCrossRepository | not" in run["run"]
    assert run["env"]["LEDGIT_SPEC"] == SPEC and 'pip install "$LEDGIT_SPEC"' in run["run"]
    # untrusted names reach the shell through the environment, never spliced into the script
    for step in (fork, run):
        assert "${{" not in step["run"]


def test_the_workflow_step_on_a_pull_request_and_with_none_open(
        tmp_path: Path, git_env: Path) -> None:
    forge = make_forge(tmp_path)
    agent_branch(forge, "one", 0)
    two = agent_branch(forge, "two", 1)
    forge_merge(forge.bare, "one", no_ff=False)
    ran = run_workflow(forge.bot, tmp_path, ["two"], event="pull_request", head_ref="two")
    assert ran.returncode == 0, ran.stderr
    assert (tmp_path / "pip-args").read_text() == f"install\n{SPEC}\n"
    assert outcome_lines(ran.stdout)["two"].startswith("merged origin/main by ledgit's driver")
    assert git("rev-parse", "two^1", cwd=forge.bare) == two
    none = run_workflow(forge.bot, tmp_path, [])
    assert none.returncode == 0 and none.stdout == "no open pull request into main from this " \
                                                   "repository\n"


def test_the_gate_workflow_stays() -> None:
    """This repository's own gate is the shipped one installing its checkout (``.``)."""
    gate_yml = Path(__file__).resolve().parents[1] / ".github" / "workflows" / "ledgit.yml"
    assert gate_yml.read_text() == gate_text(spec=".")
    doc = yaml.safe_load(gate_yml.read_text())
    # the gate on pull requests and the merge queue (issue 27); push: the forced-update
    # check of issue 25
    assert {"pull_request", "merge_group"} <= set(doc[True])
    installs = [step for job in doc["jobs"].values() for step in job["steps"]
                if "LEDGIT_SPEC" in step.get("env", {})]
    assert len(installs) == 2 and all(s["env"]["LEDGIT_SPEC"] == "." for s in installs)
    assert all(s["run"].startswith('pip install "$LEDGIT_SPEC" && ') for s in installs)


def test_a_built_package_carries_the_workflows(tmp_path: Path) -> None:
    """The workflows are package data: setup.py's build_py puts them beside the code."""
    # a copy of the sources (the build leaves its egg-info behind), without a venv
    project = copy_sources(tmp_path / "src", skip=("bench", "stress", "tests"))
    lib = tmp_path / "lib"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "setup.py", "-q", "build_py", "--build-lib",
                           str(lib)], cwd=project, env=env, capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    for data, _ in WORKFLOWS.values():
        assert (lib / "ledgit" / "data" / data).read_bytes() == (
            project / "src" / "ledgit" / "data" / data).read_bytes()


def test_a_board_in_a_subdirectory(tmp_path: Path, git_env: Path) -> None:
    """The attributes given for the merge reach a board below the top (``**/.ledgit/...``),
    and the growth check reads that board."""
    seed = tmp_path / "seed"
    git("init", "-q", str(seed), cwd=tmp_path)
    ledgit(seed, "init", "sub")
    tid = create(seed / "sub", "deep task", "--by", "seed")
    commit_all(seed, "a board in sub/")
    bare = tmp_path / "forge.git"
    git("init", "-q", "--bare", str(bare), cwd=tmp_path)
    git("push", "-q", str(bare), "main", cwd=seed)
    for n, name in enumerate(("one", "two")):
        git("switch", "-q", "-C", name, "main", cwd=seed)
        ledgit(seed / "sub", "update", tid, "--label", name, "--priority", str(n),
               "--by", name)
        commit_all(seed, name)
        git("push", "-q", str(bare), name, cwd=seed)
    wanted = events_at_sub(bare, "one") | events_at_sub(bare, "two")
    forge_merge(bare, "one", no_ff=False)
    bot = tmp_path / "bot"
    git("clone", "-q", str(bare), str(bot), cwd=tmp_path)
    result = ledgit(bot, "forge", "update", "two", "--base", "main")
    assert "two: merged origin/main by ledgit's driver" in result.out
    old, new = forge_merge(bare, "two", no_ff=True)
    gate(bare, f"{old}..{new}")
    assert wanted <= events_at_sub(bare, "main")
    labels = git("show", f"main:sub/.ledgit/tasks/{tid}.md", cwd=bare)
    assert "labels: [one, two]" in labels  # both sides, by the driver


def events_at_sub(repo: Path, rev: str) -> set[str]:
    names = git("ls-tree", "-r", "--name-only", rev, "--", "sub/.ledgit/history", cwd=repo)
    return {json.loads(line)["id"] for path in names.splitlines()
            for line in git("show", f"{rev}:{path}", cwd=repo).splitlines() if line.strip()}
