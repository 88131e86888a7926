"""``ledgit install`` / ``uninstall`` / ``doctor``: wire ledgit into a repository (DESIGN §8).

``install`` is idempotent and does three things:

1. the merge driver in the repository's shared config (``<common dir>/config``, read by every
   worktree): ``merge.ledgit.name`` and ``merge.ledgit.driver = <python> -c '<entry>'
   merge-driver %O %A %B %L %P`` (:func:`ledgit_command`) -- an absolute command, because
   Git runs it through the shell from whatever directory the merge runs in (gitattributes(5),
   "Defining a custom merge driver");
2. the attributes that route task files and histories to it, as a marked block in the
   ``.gitattributes`` next to ``.ledgit/`` (versioned: every clone gets them);
3. the hooks ``pre-commit``, ``post-checkout``, ``post-merge`` and ``post-rewrite`` in the
   effective hooks directory (``core.hooksPath`` aware, githooks(5)), each as a block between
   ``# >>> ledgit >>>`` and ``# <<< ledgit <<<`` that runs before whatever the hook already
   did. A hook that is not a shell script (or not executable) is kept aside as
   ``<hook>.pre-ledgit`` and chained from a new shell hook. When the repository uses the
   pre-commit framework (``.pre-commit-config.yaml``), hooks are left to it and the snippet to
   add is printed instead.

``uninstall`` removes exactly those blocks, files and settings. ``doctor`` checks every
worktree (git-worktree(1)) and prints, per gap, the command that closes it.
"""

from __future__ import annotations

import os
import shlex
import shutil
import stat
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

from ledgit.core.errors import USAGE, LedgitError
from ledgit.git import gitindex, repository
from ledgit.operations.gate import attributes_name_driver, board_prefix, board_prefixes
from ledgit.storage.board import Board, find_board
from ledgit.storage.boardcheck import verify_board
from ledgit.storage.boardinit import BOARD_IGNORE
from ledgit.storage.boardrepair import pending_repairs, repair_board
from ledgit.storage.index import Index
from ledgit.storage.indexfiles import index_dir, private_dir_refusal

DRIVER = "ledgit"
DRIVER_NAME = "ledgit task merge"
HOOKS = ("pre-commit", "post-checkout", "post-merge", "post-rewrite", "pre-merge-commit")
BEGIN = "# >>> ledgit >>>"
END = "# <<< ledgit <<<"
CREATED = "# ledgit: created this file"
CHAINED_SUFFIX = ".pre-ledgit"
PRE_COMMIT_CONFIG = ".pre-commit-config.yaml"
ATTRIBUTE_LINES = (".ledgit/tasks/*.md merge=ledgit", ".ledgit/history/*.jsonl merge=ledgit")
_SHELLS = ("sh", "bash", "dash", "ksh", "zsh", "ash", "busybox")


def pre_commit_snippet() -> str:
    """What to add to ``.pre-commit-config.yaml`` (pre-commit's ``repo``/``rev``/``hooks``
    plus ``default_install_hook_types`` so that ``pre-commit install`` installs the post-*
    hooks too). ``repo`` is this ledgit's source checkout when it runs from one."""
    repo, rev = "<the URL of ledgit's Git repository>", "<a tag or commit of it>"
    source = Path(__file__).resolve().parents[2]
    if (source / ".pre-commit-hooks.yaml").is_file():
        head = repository.head_oid(source) if repository.toplevel(source) == source else None
        if head:
            repo, rev = str(source), head
    return (
        "default_install_hook_types: [pre-commit, post-checkout, post-merge, post-rewrite, "
        "pre-merge-commit]\n"
        "repos:\n"
        f"  - repo: {repo}\n"
        f"    rev: {rev}\n"
        "    hooks:\n"
        "      - id: ledgit-check\n"
        "      - id: ledgit-index\n"
    )


class Gap(NamedTuple):
    """One thing ``doctor`` found missing: where (a worktree), what, and the fixing command."""

    worktree: Path
    what: str
    fix: str

    def __str__(self) -> str:
        return f"{self.worktree}: {self.what} (fix: {self.fix})"


# --------------------------------------------------------------------------- the pieces


# What hooks and the merge driver run: ``python -c``, not ``python -m ledgit`` -- runpy costs
# ~3 ms per process, and Git runs the driver once per conflicted file and the pre-commit hook
# on every commit (DESIGN §10). The script directory entry that ``-c`` (like ``-m``) puts
# first on sys.path is the working directory of the merge or commit: dropped, so no file in
# the repository being merged can stand in for a module ledgit imports.
ENTRY_CODE = ("import sys; sys.path[0] or sys.path.pop(0); "
              "from ledgit.__main__ import main; main()")


def ledgit_command() -> str:
    """The shell words that run this ledgit from anywhere: ``<this python> -c
    '<ENTRY_CODE>'`` (see :data:`ENTRY_CODE`), the same CLI as ``ledgit`` and
    ``python -m ledgit``."""
    return f"{shlex.quote(sys.executable)} -c {shlex.quote(ENTRY_CODE)}"


def driver_command(command: str | None = None) -> str:
    """The ``merge.ledgit.driver`` value (gitattributes(5): Git substitutes %O %A %B %L %P)."""
    return f"{command or ledgit_command()} merge-driver %O %A %B %L %P"


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

    top = _top(cwd)
    return top / board_prefix(cwd) / ".gitattributes"


def hook_block(name: str, command: str | None = None, *, created: bool = False,
               chained: bool = False) -> str:
    """The marked POSIX sh block for hook ``name``: runs ``<ledgit> hook NAME "$@"``.

    ``pre-commit`` stops the commit when the check fails (githooks(5): a non-zero exit aborts
    it); the post-* hooks cannot change the outcome, so their block never exits. Their stdin
    (post-rewrite's list of rewritten commits) is left for the hook's own script. ``created``
    marks a file install created; ``chained`` ends the block by running the hook kept aside.
    """
    cmd = command or ledgit_command()
    words = shlex.split(cmd)
    exe = words[0] if words else "ledgit"
    guard = (f"[ -x {shlex.quote(exe)} ]" if os.path.isabs(exe)
             else f"command -v {shlex.quote(exe)} >/dev/null 2>&1")
    tail = " || exit $?" if name in ("pre-commit", "pre-merge-commit") else " || :"
    lines = [
        BEGIN,
        "# Added by `ledgit install`; `ledgit uninstall` removes this block (githooks(5)).",
        f"if {guard}; then",
        f'    {cmd} hook {name} "$@" </dev/null{tail}',
        "elif command -v ledgit >/dev/null 2>&1; then",
        f'    ledgit hook {name} "$@" </dev/null{tail}',
        "else",
        f'    echo "ledgit {name} hook: ledgit is not installed; skipped" >&2',
        "fi",
    ]
    if created:
        lines.append(CREATED)
    if chained:
        lines += [f'chained="$(dirname "$0")/{name}{CHAINED_SUFFIX}"',
                  '[ -x "$chained" ] && exec "$chained" "$@"']
    lines.append(END)
    return "\n".join(lines) + "\n"


def _top(cwd: Path, command: str = "install") -> Path:
    """The work tree's top; exit 2 naming ``ledgit COMMAND`` outside a Git work tree."""
    top = repository.toplevel(cwd)
    if top is None:
        raise LedgitError(f"{cwd}: not inside a Git work tree (ledgit {command} needs one)",
                          USAGE)
    return top


def _uses_pre_commit_framework(top: Path) -> bool:
    return (top / PRE_COMMIT_CONFIG).is_file()


def _split_block(text: str) -> tuple[str, str | None, str]:
    """(before, block or None, after) of a file's text around the ledgit block."""
    start = text.find(BEGIN + "\n")
    if start == -1 or (start > 0 and text[start - 1] != "\n"):
        return text, None, ""
    end = text.find(END + "\n", start)
    if end == -1:
        return text, None, ""
    end += len(END) + 1
    return text[:start], text[start:end], text[end:]


def _is_shell_script(text: str) -> bool:
    if not text.startswith("#!"):
        return True  # Git runs a hook without "#!" through the shell (run-command.c)
    words = text[2:].split("\n", 1)[0].split()
    if not words:
        return True
    prog = os.path.basename(words[0])
    if prog == "env" and len(words) > 1:
        prog = os.path.basename([w for w in words[1:] if not w.startswith("-")][0]
                                if any(not w.startswith("-") for w in words[1:]) else "")
    return prog in _SHELLS


def _make_executable(path: Path) -> None:
    mode = path.stat().st_mode
    path.chmod(mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def _write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.ledgit-{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    if path.exists():
        shutil.copymode(path, tmp)
    os.replace(tmp, path)


# --------------------------------------------------------------------------- hooks


def install_hook(hooks_dir: Path, name: str, command: str | None = None) -> str:
    """Put the ledgit block into hook ``name``; returns what was done (one line)."""
    path = hooks_dir / name
    if not path.exists():
        hooks_dir.mkdir(parents=True, exist_ok=True)
        path.write_text("#!/bin/sh\n" + hook_block(name, command, created=True),
                        encoding="utf-8")
        _make_executable(path)
        return f"created {path}"
    text = path.read_text(encoding="utf-8", errors="surrogateescape")
    before, old, after = _split_block(text)
    if old is not None:
        marks = old.splitlines()
        new = hook_block(name, command, created=CREATED in marks,
                         chained=any(m.startswith("chained=") for m in marks))
        if new == old:
            return f"{path}: already installed"
        _write_text(path, before + new + after)
        return f"{path}: updated the ledgit block"
    if os.access(path, os.X_OK) and _is_shell_script(text):
        block = hook_block(name, command)
        if text.startswith("#!"):
            first, _, rest = text.partition("\n")
            new_text = first + "\n" + block + rest
        else:
            new_text = block + text
        _write_text(path, new_text)
        return f"{path}: added the ledgit block before the existing script"
    # Not a shell script (or disabled): keep it aside and chain it from a new shell hook.
    aside = path.with_name(name + CHAINED_SUFFIX)
    if aside.exists():
        raise LedgitError(f"{path}: cannot chain it: {aside} already exists", USAGE)
    os.replace(path, aside)
    path.write_text("#!/bin/sh\n" + hook_block(name, command, created=True, chained=True),
                    encoding="utf-8")
    _make_executable(path)
    return f"{path}: moved the existing hook to {aside.name} and chained it"


def uninstall_hook(hooks_dir: Path, name: str) -> str | None:
    """Remove the ledgit block (and what install created around it); None if none."""
    path = hooks_dir / name
    try:
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
    except FileNotFoundError:
        return None
    before, block, after = _split_block(text)
    if block is None:
        return None
    aside = path.with_name(name + CHAINED_SUFFIX)
    if CREATED in block.splitlines():
        path.unlink()
        if aside.exists() and 'chained="' in block:
            os.replace(aside, path)
            return f"{path}: restored the hook it had chained"
        return f"removed {path}"
    _write_text(path, before + after)
    return f"{path}: removed the ledgit block"


def hook_installed(hooks_dir: Path, name: str) -> bool:
    """True when hook ``name`` holds the ledgit block and Git will run it (executable)."""
    path = hooks_dir / name
    try:
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
    except OSError:  # missing, a directory, or a hooks "dir" that is a file (issue 13)
        return False
    return _split_block(text)[1] is not None and os.access(path, os.X_OK)


def pre_commit_framework_gaps(top: Path, hooks_dir: Path) -> list[str]:
    """What the pre-commit framework setup lacks: the hook ids in the config, and the hook
    scripts ``pre-commit install`` writes for each hook type."""
    try:
        config = (top / PRE_COMMIT_CONFIG).read_text(encoding="utf-8")
    except OSError:
        return [f"no {PRE_COMMIT_CONFIG}"]
    gaps = [f"{PRE_COMMIT_CONFIG} does not use hook id {hid}"
            for hid in ("ledgit-check", "ledgit-index") if hid not in config]
    for name in HOOKS:
        path = hooks_dir / name
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = ""
        if "pre-commit" not in text or not os.access(path, os.X_OK):
            gaps.append(f"the {name} hook is not installed by the pre-commit framework")
    return gaps


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
    _write_text(path, text + sep + block)
    return f"{path}: added the ledgit merge attributes"


def uninstall_attributes(path: Path) -> str | None:
    """Remove the ledgit attribute block; delete the file when nothing else is left."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    before, block, after = _split_block(text)
    if block is None:
        return None
    rest = before + after
    if rest.strip():
        _write_text(path, rest)
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


def _preflight(attributes: Path, hooks_dir: Path | None, command: str) -> None:
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
    return [Path(os.path.normpath(os.path.join(wt, value))) for wt in repository.list_worktrees(cwd)]


def install(cwd: Path, *, hooks: bool = True, command: str | None = None) -> list[str]:
    """``ledgit install``: driver config, attributes, hooks (or the pre-commit snippet).
    Returns one line per action. Idempotent. All or nothing: an odd file is refused before
    anything changes, and a step that fails puts back what the earlier ones changed."""
    top = _top(cwd)
    attributes = attributes_file(cwd)
    hdirs = (_relative_hooks_dirs(cwd) or [repository.hooks_dir(cwd)]) \
        if hooks and not _uses_pre_commit_framework(top) else []
    _preflight(attributes, None, "install")
    for hdir in hdirs:
        _preflight(attributes, hdir, "install")
    undo = _Undo()
    undo.keep(repository.common_dir(cwd) / "config", attributes)
    for hdir in hdirs:
        undo.made(hdir)
        undo.keep(*(hdir / n for n in HOOKS), *(hdir / (n + CHAINED_SUFFIX) for n in HOOKS))
    return _all_or_nothing(undo, "install",
                           lambda: _install(cwd, top, hooks, command, hdirs))


def _install(cwd: Path, top: Path, hooks: bool, command: str | None,
             hdirs: list[Path]) -> list[str]:
    done: list[str] = []
    want = driver_command(command)
    if repository.config_get(cwd, f"merge.{DRIVER}.name") != DRIVER_NAME:
        repository.config_set(cwd, f"merge.{DRIVER}.name", DRIVER_NAME)
    shown = f"{readable_command(command)} merge-driver %O %A %B %L %P"
    if repository.config_get(cwd, f"merge.{DRIVER}.driver") != want:
        repository.config_set(cwd, f"merge.{DRIVER}.driver", want)
        done.append(f"merge driver: configured in {repository.common_dir(cwd) / 'config'}: {shown} "
                    f"(exact command: git config merge.{DRIVER}.driver)")
    else:
        done.append(f"merge driver: already configured: {shown}")
    done.append(install_attributes(attributes_file(cwd)))
    done += _warm_index(cwd)
    if not hooks:
        return done
    if _uses_pre_commit_framework(top):
        done.append(f"hooks: {PRE_COMMIT_CONFIG} found, so the pre-commit framework manages "
                    f"hooks; add this to it, then run `pre-commit install`:\n"
                    + pre_commit_snippet())
        return done
    for hdir in hdirs:
        for name in HOOKS:
            done.append(install_hook(hdir, name, command))
    if len(hdirs) > 1 or _relative_hooks_dirs(cwd) is not None:
        done.append(f"hooks: core.hooksPath is relative ({repository.config_get(cwd, 'core.hooksPath')})"
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
    _top(cwd, "uninstall")
    attributes = attributes_file(cwd)
    hdirs = _relative_hooks_dirs(cwd) or [repository.hooks_dir(cwd)]
    for hdir in hdirs:
        _preflight(attributes, hdir, "uninstall")
    undo = _Undo()
    undo.keep(repository.common_dir(cwd) / "config", attributes)
    for hdir in hdirs:
        undo.keep(*(hdir / n for n in HOOKS), *(hdir / (n + CHAINED_SUFFIX) for n in HOOKS))
    return _all_or_nothing(undo, "uninstall", lambda: _uninstall(cwd, hdirs))


def _uninstall(cwd: Path, hdirs: list[Path]) -> list[str]:
    done: list[str] = []
    removed = [repository.config_unset(cwd, f"merge.{DRIVER}.{key}") for key in ("driver", "name")]
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


# --------------------------------------------------------------------------- doctor


def _driver_runs(value: str) -> bool:
    try:
        words = shlex.split(value)
    except ValueError:
        return False
    if not words:
        return False
    exe = words[0]
    return os.access(exe, os.X_OK) if os.path.isabs(exe) else shutil.which(exe) is not None


def worktree_gaps(wt: Path, board_rel: str, *, fix: bool = False) -> list[Gap]:
    """Gaps of one worktree: driver, attributes, hooks, index freshness, interrupted writes,
    unresolved task conflicts. With ``fix``, the index is refreshed on the way."""

    gaps: list[Gap] = []
    driver = repository.config_get(wt, f"merge.{DRIVER}.driver")
    if not driver:
        gaps.append(Gap(wt, f"merge.{DRIVER}.driver is not configured: Git would line-merge "
                            f"task files", "ledgit install"))
    elif not _driver_runs(driver):
        gaps.append(Gap(wt, f"merge.{DRIVER}.driver runs a missing program ({driver})",
                        "ledgit install"))
    if not attributes_name_driver(wt, board_rel):
        command = "ledgit install"
        try:
            _preflight(attributes_file(wt), None, "install")
        except LedgitError as exc:  # install would refuse it: say what to do first
            command = f"{exc.message.partition(' (ledgit install')[0]}; then: ledgit install"
        gaps.append(Gap(wt, ".gitattributes does not route task files to the ledgit driver",
                        command))
    top = repository.toplevel(wt) or wt
    hdir = repository.hooks_dir(wt)
    if _uses_pre_commit_framework(top):
        for what in pre_commit_framework_gaps(top, hdir):
            gaps.append(Gap(wt, what, "add ledgit to .pre-commit-config.yaml (ledgit install "
                                      "prints the snippet), then: pre-commit install"))
    else:
        missing = [n for n in HOOKS if not hook_installed(hdir, n)]
        if hdir.exists() and not hdir.is_dir():
            gaps.append(Gap(wt, f"{hdir} is not a directory, so Git runs no hooks from it",
                            "move it aside, then: ledgit install"))
        elif missing:
            gaps.append(Gap(wt, f"hooks without ledgit in {hdir}: {', '.join(missing)}",
                            "ledgit install"))
    board_root = top / board_rel
    if (board_root / ".ledgit").is_dir():
        gaps += _board_gaps(wt, board_root, fix=fix)
    conflicted = gitindex.conflicted_paths(wt, f"{board_rel}.ledgit/")
    if conflicted:
        gaps.append(Gap(wt, f"{len(conflicted)} task file(s) or histories unmerged: "
                            + ", ".join(conflicted[:3]), "ledgit resolve"))
    return gaps


def _board_gaps(wt: Path, root: Path, *, fix: bool) -> list[Gap]:
    board = Board(root)
    gaps: list[Gap] = []
    refused = _private_gap(wt, board)
    if refused is not None:
        gaps.append(refused)
    try:
        ignored = (root / ".ledgit" / ".gitignore").read_text(encoding="utf-8",
                                                              errors="replace").splitlines()
    except OSError:
        ignored = []
    if not all(line in ignored for line in BOARD_IGNORE):
        gaps.append(Gap(wt, f"{root / '.ledgit' / '.gitignore'} does not ignore the temp "
                            f"files of interrupted writes", "ledgit init"))
    stale = _index_stale(board, fix=fix)
    if stale:
        gaps.append(Gap(wt, stale, "ledgit cache rebuild"))
    interrupted = pending_repairs(board)
    if interrupted:
        gaps.append(Gap(wt, "interrupted writes: " + ", ".join(interrupted[:5]),
                        "ledgit doctor --repair"))
    unrecorded = unrecorded_edits(board, skip=set(interrupted))
    for tid in unrecorded[:MAX_LISTED]:
        gaps.append(Gap(wt, f"{tid}: the task file differs from its history head (a hand "
                            f"edit, or the file alone checked out or restored)",
                        f"ledgit record {tid}"))
    if len(unrecorded) > MAX_LISTED:
        gaps.append(Gap(wt, f"{len(unrecorded) - MAX_LISTED} more task file(s) differ from "
                            f"their history head", "ledgit check --fix"))
    return gaps


def _private_gap(wt: Path, board: Board) -> Gap | None:
    """The worktree's private dir (locks, index) is read-only or another user's (issue 13):
    writes fail there, reads keep their index in this user's cache."""
    why = private_dir_refusal(board)
    if why is None:
        return None
    where = index_dir(board, create=False)
    reads = (f"reads keep their index in {where}" if where is not None
             else "reads build their index in memory")
    fix = why.rpartition("fix: ")[2] if "fix: " in why else "make it writable"
    return Gap(wt, f"{why.partition('; fix: ')[0]}: writes fail, {reads}", fix)


MAX_LISTED = 10  # doctor names this many unrecorded edits, then counts the rest


def unrecorded_edits(board: Board, skip: set[str] | frozenset[str] = frozenset()) -> list[str]:
    """Tasks whose file's revision is not their history head's (DESIGN §6, rule
    ``record-head``): a hand edit not yet recorded, or a file put back by ``git checkout``/
    ``restore`` alone. The next write would record it as an ``edit`` event; ``ledgit record
    ID`` does it now. ``skip``: tasks already reported as interrupted writes."""
    found = {p.task for p in verify_board(board) if p.rule == "record-head"}
    return sorted(found - skip)


def _index_stale(board: Board, *, fix: bool) -> str | None:
    """A sentence when the worktree's index is missing or stale (None when fresh or fixed).

    Stale: a task file has no row, or a row was built from a file whose (mtime, size, inode)
    differ from the file's now, or a row has no file. Reads refresh the index themselves; a
    stale index only costs the next read, so ``fix`` just refreshes it.
    """

    state: str | None = None
    index = Index.open_existing(board)
    if index is None:
        state = "the index is not built"
    else:
        try:
            differ = index.stale_tasks()
        finally:
            index.close()
        if differ:
            state = (f"the index is stale ({len(differ)} task file(s) changed since it was "
                     f"built: {', '.join(differ[:3])})")
    if state is not None and fix:
        with Index.open(board) as fresh:
            fresh.refresh()
        return None
    return state


def doctor(cwd: Path, *, fix: bool = False, repair: bool = False) -> tuple[int, list[str]]:
    """``ledgit doctor``: every gap of every worktree with its fix; exit 1 when any is left.

    ``fix`` runs ``ledgit install`` (when a gap calls for it) and refreshes stale indexes;
    ``repair`` rolls interrupted writes forward (:meth:`Board.repair`) in every worktree.
    """

    _top(cwd, "doctor")
    # The board found from cwd, else every board Git tracks (boards in subdirectories).
    board_rel, *others = board_prefixes(cwd)
    lines: list[str] = []
    worktrees = repository.list_worktrees(cwd)
    if fix or repair:
        for wt in worktrees:
            lines += _apply(wt, board_rel, fix=fix, repair=repair)
            if repair:
                for other in others:
                    root = (repository.toplevel(wt) or wt) / other
                    if (root / ".ledgit").is_dir():
                        lines += [f"repaired: {line}" for line in repair_board(Board(root))]
    gaps: list[Gap] = []
    for wt in worktrees:
        gaps += worktree_gaps(wt, board_rel, fix=fix)
        for other in others:  # each further board: its attributes and its own state
            root = (repository.toplevel(wt) or wt) / other
            if not attributes_name_driver(wt, other):
                gaps.append(Gap(wt, f"{other}.gitattributes does not route task files to the "
                                    f"ledgit driver", f"cd {other} && ledgit install"))
            if (root / ".ledgit").is_dir():
                gaps += _board_gaps(wt, root, fix=fix)
    for gap in gaps:
        lines.append(f"gap: {gap}")
    if not gaps:
        lines.append(f"ok: {len(worktrees)} worktree(s) checked, nothing missing")
    return (1 if gaps else 0), lines


def _apply(wt: Path, board_rel: str, *, fix: bool, repair: bool) -> list[str]:
    lines: list[str] = []
    gaps = worktree_gaps(wt, board_rel)
    if fix and any(g.fix == "ledgit install" for g in gaps):
        lines += [f"fixed: {line}" for line in install(wt)
                  if "already" not in line]
    if repair and any(g.fix == "ledgit doctor --repair" for g in gaps):

        top = repository.toplevel(wt) or wt
        lines += [f"repaired: {line}" for line in repair_board(Board(top / board_rel))]
    return lines


def format_lines(lines: Sequence[str]) -> str:
    """Join report lines for printing."""
    return "\n".join(lines)
