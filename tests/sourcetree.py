"""A copy of this checkout's sources, as a fresh clone has them, for the tests that build the
package (a build writes ``*.egg-info`` and ``build/`` beside the sources: never in the
checkout itself)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]


def source_files() -> list[str]:
    """The checkout's files a clone would have, plus new ones not yet committed (``git ls-files
    --cached --others --exclude-standard``): never a virtual environment, a cache or a build
    left in the checkout. Deleted files still in the index are left out."""
    proc = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                          cwd=PROJECT, capture_output=True, check=True)
    names = [n.decode() for n in proc.stdout.split(b"\0") if n]
    return [n for n in names if (PROJECT / n).is_file()]


def copy_sources(target: Path, skip: tuple[str, ...] = ()) -> Path:
    """Copy :func:`source_files` (except those under a top-level folder in ``skip``) into
    ``target``; returns ``target``."""
    for name in source_files():
        if name.split("/", 1)[0] in skip:
            continue
        dest = target / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(PROJECT / name, dest)
    return target
