"""``ledgit merge-driver %O %A %B %L %P``: Git's custom merge driver (gitattributes(5)).

Import-light on purpose (no click, no pygit2, no sqlite): Git runs it once per conflicted file
during merge, rebase, cherry-pick and stash. It writes the result to %A and exits 0 (clean) or
1 (conflict, with markers). Any internal error falls back to a line merge with markers and exit
1, so %A is never left as one side with nothing marked.
"""

from __future__ import annotations

import os
import sys

from ledgit.core.errors import print_traceback
from ledgit.core.filemerge import (
    board_file_kind,
    content_kind,
    content_path,
    is_binary,
    line_merge,
    merge_board_file,
)
from ledgit.git.mergenames import side_names


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _write(path: str, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)


def _merge_as_git(data: tuple[bytes, bytes, bytes], paths: tuple[str, str, str],
                  marker_size: int, path: str, names: tuple[str, str] | None) -> int:
    """A file that is neither a task file nor a history (``* merge=ledgit``) gets Git's own
    merge: text through ``git merge-file`` (bytes kept as they are, CRLF included;
    ``merge.conflictStyle`` honoured), binary left as ours with exit 1, as Git's binary
    driver does (gitattributes(5) "Built-in merge drivers"). ``data``/``paths``: base, ours,
    theirs."""
    import subprocess  # lazy: 3.8 ms (-X importtime) that task and history merges never need

    if any(is_binary(side) for side in data):
        print(f"ledgit merge-driver: {path}: binary file changed on both sides; left as "
              f"ours (keep it, or: git checkout --theirs -- {path}; then git add {path})",
              file=sys.stderr)
        return 1
    base_path, ours_path, theirs_path = paths
    ours_name, theirs_name = names or ("HEAD", "theirs")
    proc = subprocess.run(
        ["git", "merge-file", "-p", f"--marker-size={marker_size}", "-L", ours_name,
         "-L", "base", "-L", theirs_name, ours_path, base_path, theirs_path],
        capture_output=True, check=False)
    if proc.returncode > 127:  # -1 (an error) as an exit status; 1..127 count conflicts
        error = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        print(f"ledgit merge-driver: {path}: git merge-file failed"
              f"{': ' + error[-1] if error else ''}; left as ours", file=sys.stderr)
        return 1
    _write(ours_path, proc.stdout)
    return 1 if proc.returncode else 0


def run(base_path: str, ours_path: str, theirs_path: str, marker_size: int,
        path: str, labels: tuple[str, ...] = (), *, named: bool = True) -> int:
    """Merge the files Git names; write %A; return 0 clean, 1 conflicted, 2 when a file
    cannot be read or written (one line on stderr; %A is left as it is). ``labels``: %X and
    %Y when Git passes them (Git 2.44 and later). ``named`` False: Git gave no ``%P`` (a
    driver line without it), so ``path`` is a temporary name and a task file or history is
    known by its content (:func:`ledgit.core.filemerge.board_file_kind`)."""
    try:
        base, ours, theirs = _read(base_path), _read(ours_path), _read(theirs_path)
    except OSError as exc:
        print(f"ledgit merge-driver: {path}: cannot read {exc.filename}: "
              f"{exc.strerror or exc}", file=sys.stderr)
        return 2
    try:
        return _merge(base, ours, theirs, ours_path, marker_size, path,
                      (base_path, theirs_path), side_names(labels), named)
    except OSError as exc:
        print(f"ledgit merge-driver: {path}: cannot write {exc.filename or ours_path}: "
              f"{exc.strerror or exc}", file=sys.stderr)
        return 2


def _merge(base: bytes, ours: bytes, theirs: bytes, ours_path: str, marker_size: int,
           path: str, others: tuple[str, str], names: tuple[str, str] | None,
           named: bool = True) -> int:
    posix = path.replace(os.sep, "/")
    kind = board_file_kind(posix)
    if kind is None and not named:  # Git's temporary names: the content says what it is
        for side in (ours, theirs, base):
            kind = content_kind(side)
            if kind is not None:
                path = posix = content_path(kind, side) or posix
                break
    try:
        if kind is None:
            return _merge_as_git((base, ours, theirs), (others[0], ours_path, others[1]),
                                 marker_size, path, names)
        out, conflict, notes = merge_board_file(kind, base, ours, theirs, marker_size, path,
                                                names)
    except Exception as exc:  # noqa: BLE001 - any failure falls back to a marked line merge
        if os.environ.get("LEDGIT_DEBUG") == "1":
            print_traceback()
        out, _ = line_merge(base, ours, theirs, marker_size)
        _write(ours_path, out)
        print(f"ledgit merge-driver: {path}: {exc}; fell back to a line merge "
              "(check the file, then: ledgit resolve)", file=sys.stderr)
        return 1
    _write(ours_path, out)
    if os.environ.get("LEDGIT_MERGE_LOG"):
        with open(os.environ["LEDGIT_MERGE_LOG"], "a", encoding="utf-8") as log:
            for n in notes:
                log.write(n + "\n")
    if conflict:
        task = os.path.splitext(os.path.basename(posix))[0]
        if posix.endswith(".md") and not (notes and notes[-1].endswith("not fused")):
            print(f"ledgit merge-driver: {path}: overlapping edits of the body left with "
                  f"conflict markers; edit the file, then run: ledgit record {task} (it "
                  f"adds the task file and its history to the index)", file=sys.stderr)
        else:
            why = notes[-1].split(": ", 1)[-1] if notes else "conflict"
            print(f"ledgit merge-driver: {path}: {why}; left with conflict markers (run: "
                  f"ledgit resolve {task})", file=sys.stderr)
    return 1 if conflict else 0


def main(argv: list[str] | None = None) -> int:
    """Entry point: ``argv`` = [%O, %A, %B, %L, %P, %S, %X, %Y] (all after %B optional; a
    placeholder an older Git left unexpanded is ignored)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "merge-driver":
        args = args[1:]
    if len(args) < 3:
        print("usage: ledgit merge-driver %O %A %B %L %P", file=sys.stderr)
        return 2
    marker = int(args[3]) if len(args) > 3 and args[3].isdigit() else 7
    named = len(args) > 4 and args[4] not in ("", "%P")
    path = args[4] if named else args[1]
    return run(args[0], args[1], args[2], marker, path, tuple(args[6:8]), named=named)


if __name__ == "__main__":
    raise SystemExit(main())
