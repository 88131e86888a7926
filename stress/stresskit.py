"""Shared machinery of the reliability suite (issue 7): sizes, an isolated Git environment,
the ledgit console script as a subprocess, and readers for what it leaves on disk.

Imported by the stress tests as a plain module (pytest puts ``stress/`` on ``sys.path``); no
fixtures here (they are in ``conftest.py``), and no ``assert`` (helpers raise AssertionError
with a message instead, so pytest need not rewrite this module).
"""

from __future__ import annotations

import json
import os
import random
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: The console script installed next to this Python; ``python -m ledgit`` when it is missing.
_SCRIPT = Path(sys.executable).with_name("ledgit")
LEDGIT: tuple[str, ...] = ((str(_SCRIPT),) if _SCRIPT.is_file()
                           else (sys.executable, "-m", "ledgit"))

IDENTITY = {
    "GIT_AUTHOR_NAME": "Stress Tester", "GIT_AUTHOR_EMAIL": "stress@example.invalid",
    "GIT_COMMITTER_NAME": "Stress Tester", "GIT_COMMITTER_EMAIL": "stress@example.invalid",
}
#: Text that must never reach a user's terminal (DESIGN §9: one clear line, no traceback).
TRACEBACK_MARKERS = ("Traceback (most recent call last)", "internal error")
#: Lock trouble that must stay inside ledgit (issue 7, deliverable 1).
LOCK_MARKERS = ("database is locked", "database table is locked", "is busy", "lock timeout",
                "held for more than", "Resource temporarily unavailable")


# --------------------------------------------------------------------------- sizes


@dataclass(frozen=True)
class Scale:
    """How big a run is: ``small`` (``pytest -m reliability``, CI) or ``full`` (``pytest -m
    stress``).

    ``LEDGIT_STRESS_FACTOR`` (a float) multiplies every size; ``LEDGIT_STRESS_SEED`` fixes
    the random seed (printed with the figures, so a failing run can be repeated).
    """

    name: str
    factor: float
    seed: int

    @property
    def full(self) -> bool:
        return self.name == "full"

    def pick(self, small: int, full: int) -> int:
        """``small`` or ``full`` (by the run's size), times the factor, at least 1."""
        base = full if self.full else small
        return max(1, round(base * self.factor))

    def rng(self, salt: str = "") -> random.Random:
        """A random generator seeded from the run's seed and ``salt``."""
        return random.Random(f"{self.seed}:{salt}")


def make_scale(name: str) -> Scale:
    factor = float(os.environ.get("LEDGIT_STRESS_FACTOR", "1") or "1")
    seed_text = os.environ.get("LEDGIT_STRESS_SEED", "")
    seed = int(seed_text) if seed_text else random.SystemRandom().randrange(1 << 31)
    return Scale(name, factor, seed)


# --------------------------------------------------------------------------- environment


def isolated_env(home: Path, actor: str = "stress") -> dict[str, str]:
    """The environment of every subprocess: no GIT_*/LEDGIT_* from outside, no system or
    user Git config (a throwaway HOME and GIT_CONFIG_GLOBAL), identity from the environment,
    this Python's ``bin`` first on PATH (so hook shims find ``ledgit``)."""
    home.mkdir(parents=True, exist_ok=True)
    gitconfig = home / ".gitconfig"
    if not gitconfig.exists():
        gitconfig.write_text(
            "[user]\n\tname = Stress Tester\n\temail = stress@example.invalid\n"
            "[init]\n\tdefaultBranch = main\n"
            "[protocol \"file\"]\n\tallow = always\n"
            "[advice]\n\tdetachedHead = false\n\tskippedCherryPicks = false\n",
            encoding="utf-8")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GIT_", "LEDGIT_", "PYTEST_", "HYPOTHESIS"))}
    env.update(IDENTITY)
    env.update({
        "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
        "GIT_CONFIG_GLOBAL": str(gitconfig), "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0", "GIT_EDITOR": "true", "LC_ALL": "C.UTF-8",
        "LEDGIT_ACTOR": actor, "LEDGIT_WATCH": "0",  # no in-process watching (docs/watch.md)
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
    })
    return env


@dataclass
class Result:
    """One finished command: argv, exit code, stdout, stderr, wall seconds, and CPU seconds
    (user + system of the children reaped meanwhile: exact when this process runs one
    command at a time, which is how the timing checks call it; a loaded machine stretches
    wall time, not CPU time)."""

    args: tuple[str, ...]
    code: int
    out: str
    err: str
    seconds: float
    cpu: float = 0.0

    def json(self) -> Any:
        return json.loads(self.out)

    def describe(self) -> str:
        return (f"$ {' '.join(self.args)}\n-> exit {self.code} in {self.seconds:.2f}s\n"
                f"stdout: {self.out[-2000:]}\nstderr: {self.err[-2000:]}")


def run(args: Sequence[str], cwd: Path, env: Mapping[str, str], *,
        timeout: float = 120, input: str | None = None) -> Result:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(list(args), cwd=cwd, env=dict(env), capture_output=True,
                          timeout=timeout, input=input.encode() if input is not None else None)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Result(tuple(args), proc.returncode, proc.stdout.decode("utf-8", "replace"),
                  proc.stderr.decode("utf-8", "replace"), seconds, cpu)


def ledgit(args: Sequence[str], cwd: Path, env: Mapping[str, str], *,
           ok: Iterable[int] | None = (0,), timeout: float = 120,
           input: str | None = None) -> Result:
    """Run the real ``ledgit`` console script. Raises AssertionError when the exit code is
    not in ``ok`` (None: any) or when stderr holds a traceback or an internal error."""
    res = run([*LEDGIT, *args], cwd, env, timeout=timeout, input=input)
    check_clean_stderr(res)
    if ok is not None and res.code not in set(ok):
        raise AssertionError(f"unexpected exit code\n{res.describe()}")
    return res


def git(args: Sequence[str], cwd: Path, env: Mapping[str, str], *, check: bool = True,
        timeout: float = 120) -> Result:
    res = run(["git", *args], cwd, env, timeout=timeout)
    if check and res.code != 0:
        raise AssertionError(f"git failed\n{res.describe()}")
    return res


def check_clean_stderr(res: Result) -> None:
    """No traceback and no internal error on stderr, and no exit 70 (DESIGN §9)."""
    bad = [m for m in TRACEBACK_MARKERS if m in res.err]
    if bad or res.code == 70:
        raise AssertionError(f"traceback or internal error reached the user\n{res.describe()}")


# --------------------------------------------------------------------------- boards on disk


def task_ids(root: Path) -> list[str]:
    tasks = root / ".ledgit" / "tasks"
    return sorted(p.name[:-3] for p in tasks.iterdir()
                  if p.name.endswith(".md") and not p.name.startswith("."))


def read_events(path: Path) -> list[dict[str, Any]]:
    """The events of a history file (lines that parse as JSON objects)."""
    out = []
    for line in path.read_bytes().decode("utf-8", "replace").splitlines():
        if line.strip():
            out.append(json.loads(line))
    return out


def histories(root: Path) -> dict[str, list[dict[str, Any]]]:
    hdir = root / ".ledgit" / "history"
    return {p.name[:-6]: read_events(p) for p in sorted(hdir.glob("*.jsonl"))
            if not p.name.startswith(".")}


def leftovers(root: Path) -> list[str]:
    """Temp files and other dot-files ledgit may leave in the board's directories."""
    out = []
    for sub in ("tasks", "history"):
        d = root / ".ledgit" / sub
        if d.is_dir():
            out += [f"{sub}/{n}" for n in os.listdir(d) if n.startswith(".") or ".tmp" in n]
    return sorted(out)


def snapshot(paths: Iterable[Path]) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in paths}


@dataclass
class Figures:
    """Numbers a test reports (printed in the terminal summary: see conftest.py)."""

    values: dict[str, Any] = field(default_factory=dict)

    def __setitem__(self, key: str, value: Any) -> None:
        self.values[key] = value

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def add(self, key: str, n: float = 1) -> None:
        self.values[key] = self.values.get(key, 0) + n

    def update(self, other: Mapping[str, Any]) -> None:
        self.values.update(other)


def copytree(src: Path, dst: Path) -> None:
    shutil.copytree(src, dst, symlinks=True)
