"""The CLI without its optional extras (README's first command installs none): help and the
commands that need no extra run; a command that needs one says which, exit 2, never 70."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

# Each extra's modules made unimportable in the child, as on a plain `pip install -e .`.
HIDE = {"board": ("jinja2", "cmarkgfm", "orjson"), "mcp": ("mcp", "anyio")}


def run_without(extra: str, args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    hide = ", ".join(repr(m) for m in HIDE[extra])
    code = (f"import sys\nfor m in ({hide},):\n    sys.modules[m] = None\n"
            "from ledgit.__main__ import main\nsys.argv[0] = 'ledgit'\nmain(sys.argv[1:])\n")
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, capture_output=True,
                          text=True, check=False, timeout=120)


@pytest.mark.parametrize("args", [["--help"], ["help", "board"], ["board", "--help"]])
def test_help_runs_without_the_board_extra(tmp_path: Path, args: list[str]) -> None:
    proc = run_without("board", args, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "internal error" not in proc.stderr


def test_board_without_its_extra_names_it(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "ledgit", "init", str(tmp_path)], check=True,
                   capture_output=True)
    proc = run_without("board", ["board", "--html", str(tmp_path / "b.html")], tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "[board]" in proc.stderr and "internal error" not in proc.stderr
    assert not (tmp_path / "b.html").exists()


def test_help_runs_without_the_mcp_extra(tmp_path: Path) -> None:
    proc = run_without("mcp", ["--help"], tmp_path)
    assert proc.returncode == 0, proc.stderr
