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
from ledgit.git.objects import BOARD_GLOBS
from ledgit.integration.hookmarks import CHECKED, ORIG_HEAD_NOTE, PID_ENV, PRIVATE
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
    """:func:`hook_block` for ``reference-transaction`` (docs/git.md, "Every path that moves a
    ref"): Git gives the ref updates on stdin and runs the hook three times per transaction;
    only ``prepared`` can abort it (githooks(5)). The updates are read once and given again
    as stdin to what follows the block. The block decides in the shell, with a few git
    processes and no Python one, where ledgit has nothing to check:

    * only ``HEAD`` and branches are guarded; a creation, a deletion and a ref that does not
      move are nothing. Where Git names no old value (zeros: ``branch -f``, ``update-ref``
      without OLD, ``checkout -B``, ``switch -C``) the ref's value now, before the
      transaction commits, is its real old value;
    * a commit (the new value's first parent is the old one) made on ``HEAD``: nothing when
      it is a merge commit (its ``pre-merge-commit`` or ``pre-commit`` hook checked it), a
      pick a rebase makes by itself (the rebase's end is checked), a fast-forward or reset to
      a child (the git process saved ORIG_HEAD: the commit was made, and checked, elsewhere),
      one that changes no file under a ``.ledgit/`` (nor does the commit or patch a stopped
      step brings), or a commit whose board changes are byte for byte those a ``pre-commit``
      hook checked and passed (:mod:`ledgit.integration.hookmarks`);
    * a branch moved to a commit that is not a child: nothing when no file under a
      ``.ledgit/`` differs between the two; ``HEAD`` alone moving (a checkout, a rebase's
      start) moves no branch.

    A plain commit costs ~3 git processes, a ``git pull --rebase`` starts ledgit once, for its
    end. It also notes which git process saved ``ORIG_HEAD`` (:mod:`hookmarks`)."""
    cmd = command or ledgit_command()
    words = shlex.split(cmd)
    exe = words[0] if words else "ledgit"
    guard = (f"[ -x {shlex.quote(exe)} ]" if os.path.isabs(exe)
             else f"command -v {shlex.quote(exe)} >/dev/null 2>&1")
    feed = "printf '%s\\n' \"$ledgit_refs\" |"
    pid = f'{PID_ENV}="$PPID"'
    globs = " ".join(f"'{g}'" for g in BOARD_GLOBS)
    lines = [
        BEGIN,
        "# Added by `ledgit install`; `ledgit uninstall` removes this block (githooks(5)).",
        "ledgit_refs=",
        'while IFS= read -r ledgit_l; do ledgit_refs="$ledgit_refs$ledgit_l',
        '"; done',
        "# exit 0: no file under a .ledgit/ differs between commits $1 and $2",
        f'ledgit_same() {{ git diff-tree --quiet -r "$1" "$2" -- {globs} 2>/dev/null; }}',
        'case "${1:-}:$ledgit_refs" in',
        'committed:*" ORIG_HEAD"*)',
        "    # which git process saved ORIG_HEAD (a reset, merge, pull) and to what",
        "    ledgit_o=",
        "    while read -r ledgit_a ledgit_b ledgit_r; do",
        '        [ "$ledgit_r" != ORIG_HEAD ] || ledgit_o=$ledgit_b',
        "    done <<LEDGIT_REFS",
        "$ledgit_refs",
        "LEDGIT_REFS",
        "    ledgit_d=$(git rev-parse --git-dir 2>/dev/null) || ledgit_d=/nonexistent",
        f'    [ ! -d "$ledgit_d/{PRIVATE}" ] ||',
        """        { printf '%s %s\\n' "$PPID" "$ledgit_o" \\""",
        f'            > "$ledgit_d/{PRIVATE}/{ORIG_HEAD_NOTE}"; }} 2>/dev/null || :',
        "    ;;",
        'prepared:*" HEAD"*|prepared:*" refs/heads/"*)',
        '    # "old new HB" of the moving HEAD (H) and branches (B), "many", or nothing',
        '    ledgit_pair=$(printf %s "$ledgit_refs" | { p=; h=0; b=0; while read -r o n r; do',
        "        case $r in HEAD|refs/heads/*) ;; *) continue ;; esac",
        "        case $n in *[!0]*) ;; *) continue ;; esac",
        "        case $o in *[!0]*) ;; *)",
        '            o=$(git rev-parse -q --verify "$r^{commit}" 2>/dev/null) || continue ;; esac',
        '        [ "$o" != "$n" ] || continue',
        "        case $r in HEAD) h=1 ;; *) b=1 ;; esac",
        '        [ -n "$p" ] || p="$o $n"',
        '        [ "$p" = "$o $n" ] || { echo many; exit 0; }',
        '    done; [ -z "$p" ] || echo "$p $h$b"; })',
        "    ledgit_run=",
        "    case $ledgit_pair in many) ledgit_run=1 ;; ?*)",
        '        ledgit_old=${ledgit_pair%% *}; ledgit_new=${ledgit_pair#* }',
        '        ledgit_hb=${ledgit_new#* }; ledgit_new=${ledgit_new%% *}',
        "        # the git dir, then the new commit's parents, one a line",
        '        ledgit_gd=$(git rev-parse --git-dir "$ledgit_new^@" 2>/dev/null) || ledgit_gd=',
        '        ledgit_d=${ledgit_gd%%"',
        '"*}; ledgit_ps=${ledgit_gd#"$ledgit_d"}; ledgit_ps=${ledgit_ps#"',
        '"}; ledgit_p1=${ledgit_ps%%"',
        '"*}',
        '        if [ -n "$ledgit_ps" ] && [ "$ledgit_p1" = "$ledgit_old" ]; then',
        '            if [ "$ledgit_p1" != "$ledgit_ps" ] || [ "${ledgit_hb%?}" = 0 ]; then',
        "                :  # a merge commit (its own hook checked it), or no commit made here",
        '            elif [ -d "$ledgit_d/rebase-merge" ] || [ -d "$ledgit_d/rebase-apply" ]; then',
        '                if [ -e "$ledgit_d/rebase-apply/applying" ]; then',
        "                    # git am: what it commits, and what its patch brings",
        '                    ledgit_same "$ledgit_old" "$ledgit_new" && ! grep -q \\',
        """                        '^diff --git .*\\.ledgit/' "$ledgit_d/rebase-apply/patch" \\""",
        "                        2>/dev/null || ledgit_run=1",
        '                elif [ -e "$ledgit_d/REBASE_HEAD" ]; then  # a stopped step, continued',
        '                    read -r ledgit_k < "$ledgit_d/REBASE_HEAD" || :',
        '                    ledgit_same "$ledgit_old" "$ledgit_new" &&',
        '                        ledgit_same "$ledgit_k^" "$ledgit_k" || ledgit_run=1',
        "                fi  # else a rebase's own pick: its end is checked",
        '            elif [ -e "$ledgit_d/CHERRY_PICK_HEAD" ]; then',
        '                read -r ledgit_k < "$ledgit_d/CHERRY_PICK_HEAD" || :',
        '                ledgit_same "$ledgit_old" "$ledgit_new" &&',
        '                    ledgit_same "$ledgit_k^" "$ledgit_k" || ledgit_run=1',
        f'            elif [ -f "$ledgit_d/{PRIVATE}/{ORIG_HEAD_NOTE}" ] && read -r ledgit_k \\',
        f'                ledgit_o < "$ledgit_d/{PRIVATE}/{ORIG_HEAD_NOTE}" &&',
        '                [ "$ledgit_k $ledgit_o" = "$PPID $ledgit_old" ]; then',
        "                :  # a fast-forward (merge, pull) or reset to a child: made elsewhere",
        "            else  # its board changes: none, or those a pre-commit hook passed?",
        "                ledgit_x=$(git diff-tree -r --raw --no-renames --no-abbrev \\",
        f'                    "$ledgit_old" "$ledgit_new" -- {globs} 2>/dev/null) || ledgit_x=?',
        "                ledgit_n=",
        f'                [ -z "$ledgit_x" ] || [ ! -f "$ledgit_d/{PRIVATE}/{CHECKED}" ] ||',
        '                    while IFS= read -r ledgit_l; do ledgit_n="$ledgit_n$ledgit_l',
        f'"; done < "$ledgit_d/{PRIVATE}/{CHECKED}"',
        '                [ -z "$ledgit_x" ] || [ "$ledgit_x',
        '" = "$ledgit_n" ] || ledgit_run=1  # else: git revert, --no-verify, a fast-forward',
        "            fi",
        '        elif [ "${ledgit_hb#?}" = 1 ]; then  # a branch moved, not to a child',
        '            ledgit_same "$ledgit_old" "$ledgit_new" || ledgit_run=1',
        "        fi ;;",
        "    esac",
        '    if [ -z "$ledgit_run" ]; then',
        "        :  # nothing for the guard",
        f"    elif {guard}; then",
        f'        {feed} {pid} {cmd} hook {REF_HOOK} "$@" || exit $?',
        "    elif command -v ledgit >/dev/null 2>&1; then",
        f'        {feed} {pid} ledgit hook {REF_HOOK} "$@" || exit $?',
        "    fi ;;",
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
    """A shell test: this worktree has an index to keep (``$ledgit_d``: its git dir) and at
    most ``$LEDGIT_WARM_THRESHOLD`` (default :data:`WARM_THRESHOLD`) task files differ
    between the commits ``old`` and ``new`` (shell words; a failing ``git diff`` counts as
    few). A worktree with no index yet gets it built by the hook."""
    return ('{ [ -f "$ledgit_d/ledgit/index.sqlite3" ] || '
            'ls "$ledgit_d"/ledgit/boards/*/index.sqlite3 >/dev/null 2>&1; } && '
            f'[ "$(git diff --name-only --no-renames {old} {new} -- {_TASK_FILES} '
            f'2>/dev/null | head -n "$((${{LEDGIT_WARM_THRESHOLD:-{WARM_THRESHOLD}}} + 1))" '
            f'| wc -l)" -le "${{LEDGIT_WARM_THRESHOLD:-{WARM_THRESHOLD}}}" ]')


_GIT_DIR = 'ledgit_d=$(git rev-parse --git-dir 2>/dev/null) || ledgit_d=/nonexistent'
_CHECKOUT_SKIP = [
    _GIT_DIR,
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
    _GIT_DIR,
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

