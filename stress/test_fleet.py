"""The fleet simulation (issue 24 item 6, issue 32 item 6, stress/fleet.py): the short form in
CI (``pytest -m reliability``), the full form with ``pytest -m stress`` (8 agents x 25 rounds;
or run ``python stress/fleet.py`` by hand for the figures, docs/reliability.md).

What must hold with ledgit, whether the agents sync through Git's own loop (``git pull``, the
hooks and the merge driver) or with ``ledgit sync``: no acknowledged write lost, no task left
unreadable, the remote verifies, and a pull needs a person only for edits of the same body
lines (appends never). With remote leases (issue 24 item 1) also: no task ended by two
agents, none held by two at once. The baseline (the same script, plain Git) only has to run
and report.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fleet import run_fleet
from stresskit import Figures, Scale

SAME_LINES = "the same body lines"


def test_fleet_with_ledgit(scale: Scale, tmp_path: Path, figures: Figures) -> None:
    report = run_fleet(tmp_path, agents=scale.pick(3, 8), rounds=scale.pick(3, 25),
                       tasks=scale.pick(20, 200), layout="mixed", sync="mixed",
                       seed=scale.seed)
    print(f"\nfleet: {json.dumps(report)}")
    figures.update({k: v for k, v in report.items() if k != "p50_p95_seconds"})
    holds(report)


def test_fleet_with_ledgit_sync(scale: Scale, tmp_path: Path, figures: Figures) -> None:
    """Every agent syncs with ``ledgit sync`` (worktrees of one clone among them): the same
    guarantees, with no Git commit, pull or push of the agents' own."""
    report = run_fleet(tmp_path, agents=scale.pick(3, 8), rounds=scale.pick(2, 25),
                       tasks=scale.pick(20, 200), layout="mixed", sync="ledgit",
                       seed=scale.seed)
    print(f"\nfleet with ledgit sync: {json.dumps(report)}")
    figures.update({k: v for k, v in report.items() if k != "p50_p95_seconds"})
    holds(report)
    timed = report["p50_p95_seconds"]
    assert timed["sync"]["n"] >= timed["loop"]["n"] > 0
    assert not {"commit", "pull --rebase", "pull --no-rebase", "push"} & set(timed)


def holds(report: dict[str, Any]) -> None:
    """What must hold with ledgit (module docstring)."""
    assert report["failures"] == []
    assert report["acknowledged_writes"] > 0
    assert report["acknowledged_writes_lost"] == 0, report["lost_by_kind"]
    assert report["tasks_unreadable"] == 0
    assert report["verify_ok"]
    assert set(report["why_a_person"]) <= {SAME_LINES}, report["why_a_person"]
    if report["remote_leases"]:
        assert report["tasks_ended_by_two_agents"] == 0
        assert report["tasks_held_by_two_agents_at_once"] == 0


def test_fleet_baseline_runs_and_reports(scale: Scale, tmp_path: Path) -> None:
    report = run_fleet(tmp_path, agents=scale.pick(3, 8), rounds=scale.pick(3, 25),
                       tasks=scale.pick(20, 200), layout="mixed", sync="mixed",
                       baseline=True, seed=scale.seed)
    print(f"\nfleet baseline: {json.dumps(report)}")
    assert report["failures"] == []
    assert report["acknowledged_writes"] > 0
    assert {"p50", "p95"} <= set(report["p50_p95_seconds"]["commit"])
