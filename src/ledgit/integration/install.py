"""``ledgit install`` / ``uninstall``: wire ledgit into a repository (DESIGN §8).

``install`` is idempotent and does three things:

1. the merge driver in the repository's shared config (``<common dir>/config``, read by every
   worktree): ``merge.ledgit.name`` and ``merge.ledgit.driver = <python> -c '<entry>'
   merge-driver %O %A %B %L %P`` (:func:`ledgit.integration.hookblock.ledgit_command`) -- an
   absolute command, because Git runs it through the shell from whatever directory the merge
   runs in (gitattributes(5), "Defining a custom merge driver");
2. the attributes that route task files and histories to it, as a marked block in the
   ``.gitattributes`` next to ``.ledgit/`` (versioned: every clone gets them);
3. the hooks ``pre-commit``, ``post-checkout``, ``post-merge`` and ``post-rewrite`` in the
   effective hooks directory (``core.hooksPath`` aware, githooks(5)), each as a block between
   ``# >>> ledgit >>>`` and ``# <<< ledgit <<<`` that runs before whatever the hook already
   did (the block and the hook files: :mod:`ledgit.integration.hookblock`). When the
   repository uses the pre-commit framework (``.pre-commit-config.yaml``), hooks are left to
   it and the snippet to add is printed instead.

``uninstall`` removes exactly those blocks, files and settings. Both are all or nothing
(:func:`preflight`, :class:`_Undo`). ``ledgit doctor`` is :mod:`ledgit.integration.doctor`.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import stat
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from ledgit.core.errors import USAGE, LedgitError
from ledgit.git import repository
from ledgit.integration.driverconfig import ATTRIBUTE_LINES, DRIVER, DRIVER_NAME, driver_command
from ledgit.integration.gate import board_prefix
from ledgit.integration.hookblock import (
    BEGIN,
    CHAINED_SUFFIX,
    END,
    HOOKS,
    PRE_COMMIT_CONFIG,
    REF_HOOK,
    install_hook,
    pre_commit_snippet,
    split_block,
    uninstall_hook,
    uses_pre_commit_framework,
    write_text,
)
from ledgit.storage.board import find_board
from ledgit.storage.index import Index
from ledgit.storage.ownership import adopt_path


def readable_command(command: str | None = None) -> str:
    """How a person would type what ``command`` (default: :func:`ledgit_command`) runs:
    ``ledgit`` when ``ledgit`` on PATH is this installation's console script (its ``#!``
    names this interpreter), else ``<this python> -m ledgit``; a given command as given."""
    if command:
        return command
    found = shutil.which("ledgit")
    if found:
        try:
            with open(found, "rb") as fh:
                first = fh.readline(4096).decode("utf-8", "replace").strip()
        except OSError:
            first = ""
        words = shlex.split(first[2:]) if first.startswith("#!") else []
        if words and os.path.realpath(words[0]) == os.path.realpath(sys.executable):
            return "ledgit"
    return f"{shlex.quote(sys.executable)} -m ledgit"


def attributes_file(cwd: Path) -> Path:
    """The ``.gitattributes`` beside the board (patterns there are relative to it); the work
    tree top when no board is checked out."""

    top = work_tree_top(cwd)
    return top / board_prefix(cwd) / ".gitattributes"


def work_tree_top(cwd: Path, command: str = "install") -> Path:
    """The work tree's top; exit 2 naming ``ledgit COMMAND`` outside a Git work tree."""
    top = repository.toplevel(cwd)
    if top is None:
        raise LedgitError(f"{cwd}: not inside a Git work tree (ledgit {command} needs one)",
                          USAGE)
    return top


# --------------------------------------------------------------------------- attributes


def install_attributes(path: Path) -> str:
    """Add the ledgit attribute lines, as a marked block, unless already there."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    present = {" ".join(line.split()) for line in text.splitlines()}
    if all(line in present for line in ATTRIBUTE_LINES):
        return f"{path}: already routes task files to the ledgit driver"
    block = BEGIN + "\n" + "".join(line + "\n" for line in ATTRIBUTE_LINES) + END + "\n"
    sep = "" if not text or text.endswith("\n") else "\n"
    write_text(path, text + sep + block)
    return f"{path}: added the ledgit merge attributes"


def uninstall_attributes(path: Path) -> str | None:
    """Remove the ledgit attribute block; delete the file when nothing else is left."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    before, block, after = split_block(text)
    if block is None:
        return None
    rest = before + after
    if rest.strip():
        write_text(path, rest)
        return f"{path}: removed the ledgit attributes"
    path.unlink()
    return f"removed {path}"


# --------------------------------------------------------------------------- commands


class _Undo:
    """What install/uninstall changed, to put back when a later step fails (issue 13: all or
    nothing): each file's bytes and mode (or its absence) before its first change, and the
    directories made."""

    def __init__(self) -> None:
        self.files: dict[Path, tuple[bytes, int] | None] = {}
        self.dirs: list[Path] = []

    def keep(self, *paths: Path) -> None:
        """Remember ``paths`` as they are now (before the first change only)."""
        for path in paths:
            if path in self.files:
                continue
            try:
                self.files[path] = (path.read_bytes(), stat.S_IMODE(path.stat().st_mode))
            except FileNotFoundError:
                self.files[path] = None

    def made(self, directory: Path) -> None:
        """``directory`` is about to be made (when missing)."""
        if not directory.exists():
            self.dirs.append(directory)

    def restore(self) -> None:
        """Put every remembered file back; remove what did not exist. Best effort."""
        for path, before in reversed(list(self.files.items())):
            try:
                if before is None:
                    if path.is_file() or path.is_symlink():
                        path.unlink()
                    continue
                data, mode = before
                if path.is_file() and path.read_bytes() == data:
                    continue
                tmp = path.with_name(f".{path.name}.ledgit-undo-{os.getpid()}")
                tmp.write_bytes(data)
                tmp.chmod(mode)
                os.replace(tmp, path)
            except OSError:
                continue
        for directory in reversed(self.dirs):
            try:
                directory.rmdir()
            except OSError:
                continue


def preflight(attributes: Path, hooks_dir: Path | None, command: str) -> None:
    """Refuse, before anything is changed, what install/uninstall could not finish: an
    attributes file that is a directory or not UTF-8, a hooks dir that is a file, a hook that
    is a directory (one line naming the file; issue 13)."""
    if attributes.is_dir():
        raise LedgitError(f"{attributes}: is a directory, not a .gitattributes file "
                          f"(ledgit {command} changed nothing)", USAGE)
    try:
        data = attributes.read_bytes()
    except FileNotFoundError:
        data = b""
    except OSError as exc:
        raise LedgitError(f"{attributes}: cannot read: {exc.strerror} (ledgit {command} "
                          f"changed nothing)", USAGE) from None
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise LedgitError(f"{attributes}:{line}: not UTF-8 text (byte {exc.start}), which "
                          f"ledgit edits as UTF-8; convert it (ledgit {command} changed "
                          f"nothing)", USAGE) from None
    if hooks_dir is None:
        return
    if hooks_dir.exists() and not hooks_dir.is_dir():
        raise LedgitError(f"{hooks_dir}: not a directory, but Git runs hooks from there "
                          f"(ledgit {command} changed nothing)", USAGE)
    for name in HOOKS:
        if (hooks_dir / name).is_dir():
            raise LedgitError(f"{hooks_dir / name}: is a directory, not a hook script "
                              f"(ledgit {command} changed nothing)", USAGE)


def _all_or_nothing(undo: _Undo, command: str, step: Callable[[], list[str]]) -> list[str]:
    """Run ``step``; when it fails, restore what ``undo`` kept and raise one line."""
    try:
        return step()
    except (LedgitError, OSError, UnicodeError) as exc:
        undo.restore()
        if isinstance(exc, LedgitError):
            message = exc.message
        elif isinstance(exc, OSError):
            message = f"{exc.filename or ''}: {exc.strerror or exc}".lstrip(": ")
        else:
            message = str(exc)
        raise LedgitError(f"{message} (ledgit {command} changed nothing)", USAGE) from None


def _relative_hooks_dirs(cwd: Path) -> list[Path] | None:
    """With a relative ``core.hooksPath`` (husky's ``.husky``), each worktree runs the hooks
    of its own copy of that folder (githooks(5)): every worktree's, main first. None when
    ``core.hooksPath`` is unset or absolute (one hooks dir for all)."""
    value = repository.config_get(cwd, "core.hooksPath")
    if not value or os.path.isabs(os.path.expanduser(value)):
        return None
    return [Path(os.path.normpath(os.path.join(wt, value)))
            for wt in repository.list_worktrees(cwd)]


def install(cwd: Path, *, hooks: bool = True, command: str | None = None) -> list[str]:
    """``ledgit install``: driver config, attributes, hooks (or the pre-commit snippet).
    Returns one line per action. Idempotent. All or nothing: an odd file is refused before
    anything changes, and a step that fails puts back what the earlier ones changed."""
    top = work_tree_top(cwd)
    attributes = attributes_file(cwd)
    hdirs = (_relative_hooks_dirs(cwd) or [repository.hooks_dir(cwd)]) if hooks else []
    preflight(attributes, None, "install")
    for hdir in hdirs:
        preflight(attributes, hdir, "install")
    undo = _Undo()
    undo.keep(repository.common_dir(cwd) / "config", attributes)
    for hdir in hdirs:
        undo.made(hdir)
        undo.keep(*(hdir / n for n in HOOKS), *(hdir / (n + CHAINED_SUFFIX) for n in HOOKS))
    done = _all_or_nothing(undo, "install",
                           lambda: _install(cwd, top, hooks, command, hdirs))
    return [*done, share_line(cwd)]


def share_line(cwd: Path) -> str:
    """The last line of ``ledgit install`` (issue 28): the ``git add`` that shares the setup
    with other clones -- ``.gitattributes`` routes their task files to the driver, ``.ledgit/``
    is the board -- while either is untracked or changed; else that they are shared. The
    driver's command and the hooks live in this clone's ``.git/`` and are never shared:
    each clone runs ``ledgit install`` once."""
    paths = [os.path.relpath(attributes_file(cwd), cwd)]
    with contextlib.suppress(LedgitError):  # no board yet: the board line says to make one
        paths.append(os.path.relpath(find_board(cwd).root / ".ledgit", cwd))
    status = repository.run_git(["status", "--porcelain", "--untracked-files=all", "--",
                                 *paths], cwd, check=False)
    quoted = " ".join(shlex.quote(p) for p in paths)
    if status.returncode == 0 and not status.stdout.strip():
        return (f"shared: {', '.join(paths)} committed; each other clone runs ledgit install "
                f"once (the driver and hooks live in .git/)")
    return (f"share it with other clones: git add {quoted} && git commit -m 'ledgit board and "
            f"merge attributes' (then each clone runs ledgit install once)")


def _config_set(cwd: Path, key: str, value: str) -> None:
    """:func:`ledgit.git.repository.config_set`; Git writes the config anew (a lock file
    renamed over it), so root's is given back to the repository's owner (issue 36)."""
    repository.config_set(cwd, key, value)
    adopt_path(repository.common_dir(cwd) / "config")


def _install(cwd: Path, top: Path, hooks: bool, command: str | None,
             hdirs: list[Path]) -> list[str]:
    done: list[str] = []
    want = driver_command(command)
    if repository.config_get(cwd, f"merge.{DRIVER}.name") != DRIVER_NAME:
        _config_set(cwd, f"merge.{DRIVER}.name", DRIVER_NAME)
    shown = f"{readable_command(command)} merge-driver %O %A %B %L %P"
    if repository.config_get(cwd, f"merge.{DRIVER}.driver") != want:
        _config_set(cwd, f"merge.{DRIVER}.driver", want)
        done.append(f"merge driver: configured in {repository.common_dir(cwd) / 'config'}: {shown} "
                    f"(exact command: git config merge.{DRIVER}.driver)")
    else:
        done.append(f"merge driver: already configured: {shown}")
    done.append(install_attributes(attributes_file(cwd)))
    done += _warm_index(cwd)
    if not hooks:
        return done
    if uses_pre_commit_framework(top):
        done.append(f"hooks: {PRE_COMMIT_CONFIG} found, so the pre-commit framework manages "
                    f"hooks; add this to it, then run `pre-commit install`:\n"
                    + pre_commit_snippet())
        # the framework has no reference-transaction stage: the ref guard is ledgit's own
        done += [install_hook(hdir, REF_HOOK, command) for hdir in hdirs]
        return done
    for hdir in hdirs:
        for name in HOOKS:
            done.append(install_hook(hdir, name, command))
    if len(hdirs) > 1 or _relative_hooks_dirs(cwd) is not None:
        done.append("hooks: core.hooksPath is relative "
                    f"({repository.config_get(cwd, 'core.hooksPath')})"
                    f", so each worktree runs its own copy: installed in all {len(hdirs)}; a "
                    f"worktree added later has none until `ledgit install` runs in it (Git "
                    f"finds no post-checkout hook there either)")
    return done


def _warm_index(cwd: Path) -> list[str]:
    """Build or refresh this worktree's index (what the post-checkout hook would have done)."""

    try:
        board = find_board(cwd)
    except LedgitError:
        return [f"board: none here yet; make one with: ledgit init (then commit .ledgit/ and "
                f"{os.path.relpath(attributes_file(cwd), cwd)})"]
    with Index.open(board) as index:
        stats = index.refresh()
    return [f"index: {stats.files} task(s) indexed in {board.private_dir}"]


def uninstall(cwd: Path) -> list[str]:
    """``ledgit uninstall``: remove exactly what install added. One line per action. All
    or nothing, as :func:`install`."""
    work_tree_top(cwd, "uninstall")
    attributes = attributes_file(cwd)
    hdirs = _relative_hooks_dirs(cwd) or [repository.hooks_dir(cwd)]
    for hdir in hdirs:
        preflight(attributes, hdir, "uninstall")
    undo = _Undo()
    undo.keep(repository.common_dir(cwd) / "config", attributes)
    for hdir in hdirs:
        undo.keep(*(hdir / n for n in HOOKS), *(hdir / (n + CHAINED_SUFFIX) for n in HOOKS))
    return _all_or_nothing(undo, "uninstall", lambda: _uninstall(cwd, hdirs))


def _uninstall(cwd: Path, hdirs: list[Path]) -> list[str]:
    done: list[str] = []
    removed = [repository.config_unset(cwd, f"merge.{DRIVER}.{key}") for key in ("driver", "name")]
    adopt_path(repository.common_dir(cwd) / "config")  # rewritten by Git: as _config_set
    if any(removed):
        done.append(f"removed [merge \"{DRIVER}\"] from {repository.common_dir(cwd) / 'config'}")
    line = uninstall_attributes(attributes_file(cwd))
    if line:
        done.append(line)
    for hdir in hdirs:
        for name in HOOKS:
            line = uninstall_hook(hdir, name)
            if line:
                done.append(line)
    return done or ["nothing to remove"]


def format_lines(lines: Sequence[str]) -> str:
    """Join report lines for printing."""
    return "\n".join(lines)
