"""The fleet simulation (issue 24 item 6, stress/fleet.py): the short form in CI, the full form
with ``pytest -m stress`` (8 agents x 25 rounds; or run ``python stress/fleet.py`` by hand for
the figures, docs/reliability.md).

What must hold with ledgit: no acknowledged write lost, no task left unreadable, the remote
verifies, and a pull needs a person only for edits of the same body lines (appends never).
With remote leases (issue 24 item 1) also: no task ended by two agents, none held by two at
once. The baseline (the same script, plain Git) only has to run and report.
"""

from __future__ import annotations

import json
from pathlib import Path

from fleet import run_fleet
from stresskit import Figures, Scale

SAME_LINES = "the same body lines"


def test_fleet_with_ledgit(scale: Scale, tmp_path: Path, figures: Figures) -> None:
    report = run_fleet(tmp_path, agents=scale.pick(3, 8), rounds=scale.pick(3, 25),
                       tasks=scale.pick(20, 200), layout="mixed", sync="mixed",
                       seed=scale.seed)
    print(f"\nfleet: {json.dumps(report)}")
    figures.update({k: v for k, v in report.items() if k != "p50_p95_seconds"})
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
