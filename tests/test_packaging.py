"""Issue 34, items 1 and 3: ``python -m build`` makes an sdist and a wheel that carry the code,
its data and the licence; the wheel installs in a clean virtual environment and passes a smoke
test there; ``forge install-workflow`` pins a ledgit installed from a VCS URL to its commit and
refuses one installed from a local file; no file of the repository installs ``ledgit`` by
bare name from an index.

Offline and in seconds: the build runs without an isolated environment (the test extra
brings ``build`` and ``setuptools``), and the clean environment (``venv --without-pip``) gets
the package by this pip (``pip --python``) with ``--no-deps``: its dependencies are the test
environment's, reached through a ``.pth`` line (its site-packages only: no ``.pth`` there is
read, so the checkout's editable ledgit is not on that path). ``pip check`` there holds the
wheel's ``Requires-Dist`` to what is installed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest
from leaseutil import git_daemon
from sourcetree import PROJECT, copy_sources, source_files

from ledgit import __version__
from ledgit.operations.origin import origin_of

SKIP = ("bench", "stress", "tests")  # what the package build does not need
PACKAGE_DATA = ("ledgit/py.typed", "ledgit/data/cli.md", "ledgit/data/forge-update.yml",
                "ledgit/data/gate.yml", "ledgit/data/stateframe.task.ledger.schema.json",
                "ledgit/data/stateframe.LICENSE", "ledgit/boardpage/templates/board.html.j2",
                "ledgit/boardpage/templates/board.css", "ledgit/boardpage/templates/board.js")


def run(argv: list[str | Path], cwd: Path, env: dict[str, str] | None = None,
        code: int = 0) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True,
                          env=env or clean_env(), check=False, timeout=300)
    assert proc.returncode == code, f"{argv}: {proc.returncode}\n{proc.stdout}{proc.stderr}"
    return proc


def clean_env() -> dict[str, str]:
    """The test's environment without what would put the checkout's ledgit first."""
    return {k: v for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "VIRTUAL_ENV") and not k.startswith("LEDGIT_")}


def clean_venv(where: Path) -> Path:
    """A virtual environment without pip, whose dependencies are the test environment's (a
    ``.pth`` line naming its site-packages); returns its ``bin``."""
    run([sys.executable, "-m", "venv", "--without-pip", where], where.parent)
    py = where / "bin" / "python"
    site = run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
               where.parent).stdout.strip()
    Path(site, "_ledgit_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return where / "bin"


def pip_into(bin_dir: Path, *args: str) -> None:
    run([sys.executable, "-m", "pip", "--python", bin_dir / "python", "install", "-q",
         "--no-deps", *args], bin_dir.parent)


def test_the_built_wheel_installs_in_a_clean_venv_and_works(tmp_path: Path) -> None:
    src = copy_sources(tmp_path / "src", skip=SKIP)
    dist = tmp_path / "dist"
    run([sys.executable, "-m", "build", "--no-isolation", "--outdir", dist, src], src)
    [sdist] = dist.glob("ledgit-*.tar.gz")
    [wheel] = dist.glob("ledgit-*.whl")
    assert wheel.name == f"ledgit-{__version__}-py3-none-any.whl"

    with zipfile.ZipFile(wheel) as whl:
        names = set(whl.namelist())
        info = f"ledgit-{__version__}.dist-info"
        meta = whl.read(f"{info}/METADATA").decode()
        entry = whl.read(f"{info}/entry_points.txt").decode()
    assert set(PACKAGE_DATA) <= names, set(PACKAGE_DATA) - names
    assert f"{info}/licenses/LICENSE" in names
    assert "License-Expression: MIT" in meta and "License-File: LICENSE" in meta
    pyproject = (PROJECT / "pyproject.toml").read_text(encoding="utf-8")
    declared = re.findall(r'(?m)^    "([^"]+)",$', pyproject.split("dependencies = [", 1)[1]
                          .split("]", 1)[0])
    required = re.findall(r"(?m)^Requires-Dist: ([^;\n]+)$", meta)
    assert [r.replace(" ", "") for r in required] == declared
    assert re.search(r"(?m)^ledgit = ledgit\.__main__:main$", entry)
    with tarfile.open(sdist) as tar:
        top = f"ledgit-{__version__}/"
        members = {m.name.removeprefix(top) for m in tar.getmembers()}
    assert {"LICENSE", "README.md", "pyproject.toml", "setup.py", "docs/cli.md",
            "src/ledgit/data/gate.yml"} <= members

    bin_dir = clean_venv(tmp_path / "venv")
    pip_into(bin_dir, "--no-index", str(wheel))
    run([sys.executable, "-m", "pip", "--python", bin_dir / "python", "check"], tmp_path)
    where = run([bin_dir / "python", "-c", "import ledgit; print(ledgit.__file__)"], tmp_path)
    assert Path(where.stdout.strip()).is_relative_to(tmp_path / "venv")
    ledgit = bin_dir / "ledgit"
    assert run([ledgit, "--version"], tmp_path).stdout == f"ledgit {__version__}\n"
    repo = tmp_path / "repo"
    run(["git", "init", "-q", repo], tmp_path)
    run([ledgit, "init"], repo)
    run([ledgit, "install"], repo)
    tid = run([ledgit, "create", "works from a wheel", "--by", "ada"], repo).stdout.strip()
    listed = json.loads(run([ledgit, "list", "--json"], repo).stdout)
    assert [t["id"] for t in listed["tasks"]] == [tid]
    run(["git", "add", "-A"], repo)
    run(["git", "commit", "-q", "-m", "a task"], repo)  # the hooks run this installation
    assert '"readout"' in run([ledgit, "help", "json"], repo).stdout  # the packaged cli.md
    # installed from a file on this machine: CI cannot install that, so nothing is written
    refused = run([ledgit, "forge", "install-workflow"], repo, code=2)
    assert "local path" in refused.stderr and "--ledgit-spec" in refused.stderr
    assert not (repo / ".github").exists()


def test_install_workflow_pins_a_vcs_install_to_its_commit(tmp_path: Path) -> None:
    served = tmp_path / "served"
    src = copy_sources(served / "ledgit", skip=SKIP)
    run(["git", "init", "-q"], src)
    run(["git", "add", "-A"], src)
    run(["git", "commit", "-q", "-m", "ledgit's sources"], src)
    commit = run(["git", "rev-parse", "HEAD"], src).stdout.strip()
    bin_dir = clean_venv(tmp_path / "venv")
    with git_daemon(served) as url:
        vcs = f"git+{url}ledgit"
        pip_into(bin_dir, "--no-build-isolation", f"ledgit @ {vcs}@{commit}")
    spec = f"ledgit @ {vcs}@{commit}"
    repo = tmp_path / "repo"
    run(["git", "init", "-q", repo], tmp_path)
    ledgit = bin_dir / "ledgit"
    assert run([ledgit, "forge", "install-workflow", "--print-spec"], repo).stdout == f"{spec}\n"
    shape = json.loads(run([ledgit, "forge", "install-workflow", "--json"], repo).stdout)
    assert shape["ledgit_spec"] == spec and shape["origin"] == "vcs"
    for name in ("ledgit.yml", "ledgit-forge.yml"):
        text = (repo / ".github" / "workflows" / name).read_text(encoding="utf-8")
        assert re.findall(r'LEDGIT_SPEC: "([^"]*)"', text) and all(
            found == spec for found in re.findall(r'LEDGIT_SPEC: "([^"]*)"', text)), name
    # an extra's install hint names the same source (ledgit mcp without the SDK would say it)
    hint = run([bin_dir / "python", "-c", "from ledgit.operations.extrahint import "
                "install_hint; print(install_hint('mcp'))"], repo).stdout.strip()
    assert hint == f"pip install 'ledgit[mcp] @ {vcs}@{commit}'"


@pytest.mark.parametrize("kind", ["vcs", "archive", "local", "index"])
def test_each_recorded_origin_gives_its_requirement(kind: str) -> None:
    recorded = {
        "vcs": {"url": "https://example.invalid/ledgit.git",
                "vcs_info": {"vcs": "git", "commit_id": "a" * 40, "requested_revision": "main"}},
        "archive": {"url": "https://example.invalid/ledgit-0.1.0-py3-none-any.whl",
                    "archive_info": {"hashes": {"sha256": "b" * 64}}},
        "local": {"url": "file:///home/ada/ledgit", "dir_info": {"editable": True}},
        "index": None,
    }[kind]
    origin = origin_of(None if recorded is None else json.dumps(recorded), "0.1.0")
    assert origin.kind == kind
    assert origin.spec == {
        "vcs": f"ledgit @ git+https://example.invalid/ledgit.git@{'a' * 40}",
        "archive": f"ledgit @ https://example.invalid/ledgit-0.1.0-py3-none-any.whl"
                   f"#sha256={'b' * 64}",
        "local": None,
        "index": "ledgit==0.1.0",
    }[kind]


def test_no_file_installs_ledgit_by_bare_name() -> None:
    """A bare ``pip install ledgit`` installs whatever an index holds under that name (or
    nothing): no workflow, recipe, script or page of the repository says it."""
    bare = re.compile(r"pip3? install (?:-[-\w]+ )*(['\"]?)ledgit(?:\[[\w,]+\])?\1"
                      r"(?=\s|$|&|;|\))(?!\s*(?:@|==))", re.MULTILINE)
    found = []
    for name in source_files():
        path = PROJECT / name
        if path.suffix in (".png", ".jsonl") or name.startswith("tests/data/"):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        found += [f"{name}: {m.group(0)}" for m in bare.finditer(text)]
    assert found == []


def test_the_readme_starts_from_the_problem_and_installs_what_it_uses() -> None:
    """The first screen says who ledgit is for and what goes wrong without it; "Start here"
    keeps the two commands a newcomer pastes (CI runs the second's test command), installs
    the extras the next paragraphs use, and names the licence."""
    readme = (PROJECT / "README.md").read_text(encoding="utf-8")
    first_screen = "\n".join(readme.splitlines()[:24])
    for words in ("several coding agents", "The problem", "same task", "notes",
                  "What ledgit does", "LICENSE"):
        assert words in first_screen, words
    start = readme.split("## Start here", 1)[1].split("\n## ", 1)[0]
    assert "pip install -e . && ledgit demo" in start
    assert "pip install -e '.[test]' && python -m pytest -n auto -q" in start
    assert "pip install -e '.[board]'" in start and "pip install -e '.[mcp]'" in start
    ci = (PROJECT / ".ci" / "run").read_text(encoding="utf-8")
    assert "python -m pytest -n auto -q          # the README's test command" in ci
    for section in ("## How it compares", "## Add ledgit to your repository",
                    "## The daily loop", "ledgit install", "Every clone runs `ledgit install`"):
        assert section in readme, section
