"""Build hook: ship docs/cli.md in the package as ledgit/data/cli.md (``ledgit help json``).

Everything else about the build is in pyproject.toml.
"""

from __future__ import annotations

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPy(build_py):
    """setuptools' build_py, plus the command reference copied into the package data."""

    def run(self) -> None:
        super().run()
        target = Path(self.build_lib) / "ledgit" / "data" / "cli.md"
        target.parent.mkdir(parents=True, exist_ok=True)
        self.copy_file(str(Path(__file__).parent / "docs" / "cli.md"), str(target))


setup(cmdclass={"build_py": BuildPy})
