"""Fixtures of the reliability suite (issue 7) and the figures it reports.

Every test takes ``scale``: it runs once as ``[small]`` (marked ``reliability``: ``pytest -m
reliability``, which CI runs after the default run) and once as ``[full]`` (marked ``stress``:
``pytest -m stress``). ``LEDGIT_STRESS_FACTOR`` multiplies the
sizes, ``LEDGIT_STRESS_SEED`` repeats a run. Figures (runs, kills, cases, events, merges,
conflicts, seconds) are printed in a "ledgit stress figures" section at the end, and written
as JSON lines to ``$LEDGIT_STRESS_REPORT`` when that is set.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from stresskit import Figures, Scale, git, isolated_env, ledgit, make_scale

# Long-lived processes started here do not watch unless a test asks (docs/watch.md).
os.environ.setdefault("LEDGIT_WATCH", "0")


@pytest.fixture(params=[pytest.param("small", marks=pytest.mark.reliability),
                        pytest.param("full", marks=pytest.mark.stress)])
def scale(request: pytest.FixtureRequest) -> Scale:
    return make_scale(str(request.param))


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def env(home: Path) -> dict[str, str]:
    """The isolated environment (see :func:`stresskit.isolated_env`)."""
    return isolated_env(home)


@pytest.fixture
def repo(tmp_path: Path, env: dict[str, str]) -> Path:
    """A Git repository with an initialised board (nothing committed)."""
    path = tmp_path / "repo"
    git(["init", "-q", str(path)], tmp_path, env)
    ledgit(["init"], path, env)
    return path


@pytest.fixture
def figures(request: pytest.FixtureRequest, scale: Scale) -> Iterator[Figures]:
    figs = Figures({"seed": scale.seed})
    yield figs
    request.node.user_properties.append(("ledgit-figures", json.dumps(figs.values)))


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        return  # an xdist worker: the controller reports
    seen: dict[str, dict[str, Any]] = {}
    for reports in terminalreporter.stats.values():
        for report in reports:
            for key, value in getattr(report, "user_properties", ()) or ():
                if key == "ledgit-figures":
                    seen[report.nodeid] = json.loads(value)
    if not seen:
        return
    terminalreporter.section("ledgit stress figures")
    out_path = os.environ.get("LEDGIT_STRESS_REPORT")
    lines = []
    for nodeid in sorted(seen):
        values = seen[nodeid]
        shown = ", ".join(f"{k}={_fmt(v)}" for k, v in values.items())
        terminalreporter.write_line(f"{nodeid}: {shown}")
        lines.append(json.dumps({"test": nodeid, **values}))
    if out_path:
        with open(out_path, "a", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)
