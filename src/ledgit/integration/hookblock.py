"""The ledgit block and the hook scripts that hold it (DESIGN §8), for ``ledgit install`` /
``uninstall`` / ``doctor``.

The block is the text between ``# >>> ledgit >>>`` and ``# <<< ledgit <<<`` that install puts
into a file and uninstall takes out again (:func:`split_block` finds it; the ``.gitattributes``
block of :mod:`ledgit.integration.install` uses the same markers). In the hooks
``pre-commit``, ``post-checkout``, ``post-merge``, ``post-rewrite``, ``pre-merge-commit`` and
``reference-transaction`` (:data:`HOOKS`; the last one also beside the framework, which has no
stage for it) it runs ``<ledgit> hook NAME`` (:func:`hook_block`, :func:`ledgit_command`)
before whatever the hook already did. A hook that is not a shell script (or not executable)
is kept aside as ``<hook>.pre-ledgit`` and chained from a new shell hook. With the pre-commit
framework (``.pre-commit-config.yaml``) hooks are left to it: :func:`pre_commit_snippet` is
what to add, :func:`pre_commit_framework_gaps` what is missing.
"""

from __future__ import annotations

import os
import shlex
import shutil
import stat
import sys
from pathlib import Path

from ledgit.core.errors import USAGE, LedgitError
from ledgit.git import repository
from ledgit.storage.ownership import adopt_path, make_dirs

# the hooks the pre-commit framework can run for ledgit (its stages, .pre-commit-hooks.yaml)
FRAMEWORK_HOOKS = ("pre-commit", "post-checkout", "post-merge", "post-rewrite",
                   "pre-merge-commit")
# the ref guard (ledgit.integration.refguard): no framework stage exists for it, so ledgit
# installs it itself, also beside the framework's hooks
REF_HOOK = "reference-transaction"
HOOKS = (*FRAMEWORK_HOOKS, REF_HOOK)
BEGIN = "# >>> ledgit >>>"
END = "# <<< ledgit <<<"
CREATED = "# ledgit: created this file"
CHAINED_SUFFIX = ".pre-ledgit"
PRE_COMMIT_CONFIG = ".pre-commit-config.yaml"
_SHELLS = ("sh", "bash", "dash", "ksh", "zsh", "ash", "busybox")


def pre_commit_snippet() -> str:
    """What to add to ``.pre-commit-config.yaml`` (pre-commit's ``repo``/``rev``/``hooks``
    plus ``default_install_hook_types`` so that ``pre-commit install`` installs the post-*
    hooks too). ``repo`` is this ledgit's source checkout when it runs from one."""
    repo, rev = "<the URL of ledgit's Git repository>", "<a tag or commit of it>"
    source = Path(__file__).resolve().parents[3]
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


def _ref_hook_block(command: str | None, *, created: bool, chained: bool) -> str:
    """:func:`hook_block` for ``reference-transaction``: Git gives the ref updates on stdin
    and runs the hook three times per transaction; only ``prepared`` can abort it
    (githooks(5)), and only HEAD and branches are guarded, so the others (``ORIG_HEAD``,
    ``REBASE_HEAD``, ``AUTO_MERGE``... of every rebase step) cost one ``cat``. The updates
    are read once and given again as stdin to what follows the block (the hook's own script,
    or the chained one). A plain commit -- every guarded ref moves to a child of its old
    value, no rebase, ``am``, cherry-pick or revert stopped -- is the pre-commit hook's: the
    block tells it with ``git rev-parse`` alone (~3 git processes, not a Python one). So is a
    pick a rebase makes by itself (``CHERRY_PICK_HEAD`` while a rebase runs, no
    ``REBASE_HEAD``): the rebase's end moves the branch, and that move is checked (every event
    of the old tip kept), so a ``git pull --rebase`` starts ledgit once for the guard."""
    cmd = command or ledgit_command()
    words = shlex.split(cmd)
    exe = words[0] if words else "ledgit"
    guard = (f"[ -x {shlex.quote(exe)} ]" if os.path.isabs(exe)
             else f"command -v {shlex.quote(exe)} >/dev/null 2>&1")
    feed = "printf '%s\\n' \"$ledgit_refs\" |"
    lines = [
        BEGIN,
        "# Added by `ledgit install`; `ledgit uninstall` removes this block (githooks(5)).",
        "ledgit_refs=",
        'while IFS= read -r ledgit_l; do ledgit_refs="$ledgit_refs$ledgit_l',
        '"; done',
        "# only a prepared transaction can be refused, and only HEAD or a branch matters",
        'case "${1:-}:$ledgit_refs" in prepared:*" HEAD"*|prepared:*" refs/heads/"*)',
        "    # a move to a child of the old value (one git process tells it) with no step",
        "    # stopped is a plain commit (the pre-commit hook's) or a pick a rebase makes by",
        "    # itself (the rebase's end is checked: its branch keeps every event): ledgit is",
        "    # not started. A stopped step: REBASE_HEAD in a rebase, a cherry-pick's",
        "    # CHERRY_PICK_HEAD, REVERT_HEAD, git am's rebase-apply/applying.",
        "    # HEAD alone moved to another commit (a checkout; the start of a rebase) moves",
        "    # no branch: nothing for the guard either.",
        '    ledgit_pair=$(printf %s "$ledgit_refs" | { p=; b=; while read -r o n r; do',
        "        case $r in HEAD) ;; refs/heads/*) b=1 ;; *) continue ;; esac",
        '        [ -n "$p" ] || p="$o $n"',
        '        [ "$p" = "$o $n" ] || { echo many; exit 0; }',
        '    done; echo "$p${b:+ branch}"; })',
        '    ledgit_new=${ledgit_pair#* }; ledgit_br=${ledgit_new#* }',
        '    ledgit_new=${ledgit_new%% *}',
        '    ledgit_gd=$(git rev-parse --git-dir "$ledgit_new^1" 2>/dev/null) || ledgit_gd=',
        '    ledgit_d=${ledgit_gd%%\n*}; ledgit_step=',
        '    if [ -d "$ledgit_d/rebase-merge" ] || [ -d "$ledgit_d/rebase-apply" ]; then',
        '        [ -e "$ledgit_d/REBASE_HEAD" ] && ledgit_step=1',
        '    elif [ -e "$ledgit_d/CHERRY_PICK_HEAD" ]; then ledgit_step=1',
        "    fi",
        "    for ledgit_f in REVERT_HEAD rebase-apply/applying; do",
        '        [ -e "$ledgit_d/$ledgit_f" ] && ledgit_step=1',
        "    done",
        '    if [ -n "$ledgit_gd" ] && [ "${ledgit_gd#*\n}" = "${ledgit_pair%% *}" ]; then',
        '        [ -n "$ledgit_step" ] || ledgit_pair=',
        '    elif [ "$ledgit_br" = "$ledgit_new" ] && [ "$ledgit_pair" != many ]; then',
        "        ledgit_pair=  # HEAD alone moved, to a commit that is not a child",
        "    fi",
        '    if [ -z "$ledgit_pair" ]; then',
        "        :  # nothing for the guard: a plain commit, a rebase's own pick, a checkout",
        f"    elif {guard}; then",
        f'        {feed} {cmd} hook {REF_HOOK} "$@" || exit $?',
        "    elif command -v ledgit >/dev/null 2>&1; then",
        f'        {feed} ledgit hook {REF_HOOK} "$@" || exit $?',
        "    fi",
        "esac",
        "exec 0<<LEDGIT_REFS",
        "$ledgit_refs",
        "LEDGIT_REFS",
    ]
    return _end_block(lines, REF_HOOK, created=created, chained=chained)


# The post-* hooks warm this worktree's index, which every read also keeps fresh by itself
# (DESIGN §8). Warming pays only when many task files changed: a new worktree or clone, a
# checkout of a distant branch. A pull of a few tasks is left to the next read's stat check,
# which re-reads those few files (~1 ms each) -- cheaper than a Python process (its start and
# imports, ~5x `python -c pass`: issue 32 holds each post-* hook within 1.5x). Told in the
# shell, with one `git diff --name-only`; skipping is always safe. post-checkout also warms
# nothing after a checkout that moved nothing (``git checkout -b``) or the one a rebase
# starts with (:func:`ledgit.hooks.dispatch.warm_up_needed` says the same when the hook is
# run by hand).
WARM_THRESHOLD = 100  # changed task files from which a post-* hook warms the index
_TASK_FILES = "':(glob)**/.ledgit/tasks/*.md'"


def _few_changed(old: str, new: str) -> str:
    """A shell test: at most ``$LEDGIT_WARM_THRESHOLD`` (default :data:`WARM_THRESHOLD`)
    task files differ between the commits ``old`` and ``new`` (shell words; a failing
    ``git diff`` counts as few)."""
    return (f'[ "$(git diff --name-only --no-renames {old} {new} -- {_TASK_FILES} '
            f'2>/dev/null | head -n "$((${{LEDGIT_WARM_THRESHOLD:-{WARM_THRESHOLD}}} + 1))" '
            f'| wc -l)" -le "${{LEDGIT_WARM_THRESHOLD:-{WARM_THRESHOLD}}}" ]')


_CHECKOUT_SKIP = [
    'ledgit_d=$(git rev-parse --git-dir 2>/dev/null) || ledgit_d=/nonexistent',
    'if [ "${1:-}" = "${2:-}" ] && case "${1:-}" in *[!0]*) true ;; *) false ;; esac; then',
    "    :  # the checkout moved nothing",
    'elif [ -d "$ledgit_d/rebase-merge" ] || [ -d "$ledgit_d/rebase-apply" ]; then',
    "    :  # a rebase starts: its post-rewrite warms the index",
    'elif case "${1:-0}" in *[!0]*) true ;; *) false ;; esac && '
    + _few_changed('"$1"', '"$2"') + "; then",
    "    :  # a few task files changed: the next read re-reads them itself",
]
# post-merge and post-rewrite: what the merge, pull or rebase brought (ORIG_HEAD..HEAD)
_MOVE_SKIP = [
    "if " + _few_changed("ORIG_HEAD", "HEAD") + "; then",
    "    :  # a few task files changed: the next read re-reads them itself",
]


def hook_block(name: str, command: str | None = None, *, created: bool = False,
               chained: bool = False) -> str:
    """The marked POSIX sh block for hook ``name``: runs ``<ledgit> hook NAME "$@"``.

    ``pre-commit`` stops the commit when the check fails (githooks(5): a non-zero exit aborts
    it); the post-* hooks cannot change the outcome, so their block never exits. Their stdin
    (post-rewrite's list of rewritten commits) is left for the hook's own script. ``created``
    marks a file install created; ``chained`` ends the block by running the hook kept aside.
    """
    if name == REF_HOOK:
        return _ref_hook_block(command, created=created, chained=chained)
    cmd = command or ledgit_command()
    words = shlex.split(cmd)
    exe = words[0] if words else "ledgit"
    guard = (f"[ -x {shlex.quote(exe)} ]" if os.path.isabs(exe)
             else f"command -v {shlex.quote(exe)} >/dev/null 2>&1")
    tail = " || exit $?" if name in ("pre-commit", "pre-merge-commit") else " || :"
    lines = [
        BEGIN,
        "# Added by `ledgit install`; `ledgit uninstall` removes this block (githooks(5)).",
        *(skip := _CHECKOUT_SKIP if name == "post-checkout"
          else _MOVE_SKIP if name in ("post-merge", "post-rewrite") else []),
        f"{'elif' if skip else 'if'} {guard}; then",
        f'    {cmd} hook {name} "$@" </dev/null{tail}',
        "elif command -v ledgit >/dev/null 2>&1; then",
        f'    ledgit hook {name} "$@" </dev/null{tail}',
        "else",
        f'    echo "ledgit {name} hook: ledgit is not installed; skipped" >&2',
        "fi",
    ]
    return _end_block(lines, name, created=created, chained=chained)


def _end_block(lines: list[str], name: str, *, created: bool, chained: bool) -> str:
    """The block's text: ``lines``, then the created mark, the run of the hook kept aside
    (``chained``) and the end marker, for hook ``name``."""
    if created:
        lines.append(CREATED)
    if chained:
        lines += [f'chained="$(dirname "$0")/{name}{CHAINED_SUFFIX}"',
                  '[ -x "$chained" ] && exec "$chained" "$@"']
    lines.append(END)
    return "\n".join(lines) + "\n"


def uses_pre_commit_framework(top: Path) -> bool:
    """True when the work tree at ``top`` has a ``.pre-commit-config.yaml`` (the pre-commit
    framework manages its hooks)."""
    return (top / PRE_COMMIT_CONFIG).is_file()


def split_block(text: str) -> tuple[str, str | None, str]:
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


def write_text(path: Path, text: str) -> None:
    """Replace ``path``'s text (UTF-8) atomically, keeping its mode; made by root in another
    user's directory, it is theirs (issue 36)."""
    tmp = path.with_name(f".{path.name}.ledgit-{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    if path.exists():
        shutil.copymode(path, tmp)
    adopt_path(tmp)
    os.replace(tmp, path)


# --------------------------------------------------------------------------- hooks


def install_hook(hooks_dir: Path, name: str, command: str | None = None) -> str:
    """Put the ledgit block into hook ``name``; returns what was done (one line)."""
    path = hooks_dir / name
    if not path.exists():
        make_dirs(hooks_dir)
        path.write_text("#!/bin/sh\n" + hook_block(name, command, created=True),
                        encoding="utf-8")
        adopt_path(path)
        _make_executable(path)
        return f"created {path}"
    text = path.read_text(encoding="utf-8", errors="surrogateescape")
    before, old, after = split_block(text)
    if old is not None:
        marks = old.splitlines()
        new = hook_block(name, command, created=CREATED in marks,
                         chained=any(m.startswith("chained=") for m in marks))
        if new == old:
            return f"{path}: already installed"
        write_text(path, before + new + after)
        return f"{path}: updated the ledgit block"
    if os.access(path, os.X_OK) and _is_shell_script(text):
        block = hook_block(name, command)
        if text.startswith("#!"):
            first, _, rest = text.partition("\n")
            new_text = first + "\n" + block + rest
        else:
            new_text = block + text
        write_text(path, new_text)
        return f"{path}: added the ledgit block before the existing script"
    # Not a shell script (or disabled): keep it aside and chain it from a new shell hook.
    aside = path.with_name(name + CHAINED_SUFFIX)
    if aside.exists():
        raise LedgitError(f"{path}: cannot chain it: {aside} already exists", USAGE)
    os.replace(path, aside)
    path.write_text("#!/bin/sh\n" + hook_block(name, command, created=True, chained=True),
                    encoding="utf-8")
    adopt_path(path)
    _make_executable(path)
    return f"{path}: moved the existing hook to {aside.name} and chained it"


def uninstall_hook(hooks_dir: Path, name: str) -> str | None:
    """Remove the ledgit block (and what install created around it); None if none."""
    path = hooks_dir / name
    try:
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
    except FileNotFoundError:
        return None
    before, block, after = split_block(text)
    if block is None:
        return None
    aside = path.with_name(name + CHAINED_SUFFIX)
    if CREATED in block.splitlines():
        path.unlink()
        if aside.exists() and 'chained="' in block:
            os.replace(aside, path)
            return f"{path}: restored the hook it had chained"
        return f"removed {path}"
    write_text(path, before + after)
    return f"{path}: removed the ledgit block"


def hook_installed(hooks_dir: Path, name: str) -> bool:
    """True when hook ``name`` holds the ledgit block and Git will run it (executable)."""
    path = hooks_dir / name
    try:
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
    except OSError:  # missing, a directory, or a hooks "dir" that is a file (issue 13)
        return False
    return split_block(text)[1] is not None and os.access(path, os.X_OK)


def pre_commit_framework_gaps(top: Path, hooks_dir: Path) -> list[str]:
    """What the pre-commit framework setup lacks: the hook ids in the config, and the hook
    scripts ``pre-commit install`` writes for each hook type."""
    try:
        config = (top / PRE_COMMIT_CONFIG).read_text(encoding="utf-8")
    except OSError:
        return [f"no {PRE_COMMIT_CONFIG}"]
    gaps = [f"{PRE_COMMIT_CONFIG} does not use hook id {hid}"
            for hid in ("ledgit-check", "ledgit-index") if hid not in config]
    for name in FRAMEWORK_HOOKS:
        path = hooks_dir / name
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = ""
        if "pre-commit" not in text or not os.access(path, os.X_OK):
            gaps.append(f"the {name} hook is not installed by the pre-commit framework")
    return gaps

