"""Git's on-disk formats read directly: discovery, the index, refs and objects (DESIGN §8, §10).

The pre-commit hook runs on every commit and its budget is twice ``ledgit --version``
(DESIGN §10): a ``git`` process costs ~2 ms to start and ``git diff-index --cached`` ~8 ms on a
10,000-task board, pygit2 ~40 ms to import. This module answers the hook's two questions --
which board paths does the index change against HEAD, and what are their blobs -- from the
files themselves, importing neither pathlib, subprocess nor pygit2.

It models only the common layout and says so otherwise: anything it does not read exactly as
Git would raises :class:`Unusual`, and the caller asks the git CLI (:mod:`ledgit.git`). Read:
index versions 2 and 3 (gitformat-index(5)); loose objects and pack files with their version 2
``.idx`` (gitformat-pack(5)), including both kinds of delta; loose refs and ``packed-refs``.
Left to git: SHA-256 repositories, reftable, split and sparse indexes, index version 4,
alternates, replace refs, unmerged and intent-to-add entries under the asked prefix.

Paths are ``str`` on disk and ``bytes`` inside the repository; object ids are raw 20 bytes.
"""

from __future__ import annotations

import os
import re
import stat
from collections import namedtuple
from itertools import compress
from operator import ne

TYPE_CHECKING = False  # typing is not imported at run time (DESIGN §10)
if TYPE_CHECKING:
    from typing import NamedTuple

    class _Repo(NamedTuple):
        git_dir: str
        common_dir: str
        toplevel: str | None

    class _Change(NamedTuple):
        path: bytes
        oid: bytes | None

    class _Staged(NamedTuple):
        changes: list[Change]
        listing: Listing
        objects: Objects
else:
    _Repo = namedtuple("_Repo", "git_dir common_dir toplevel")
    _Change = namedtuple("_Change", "path oid")
    _Staged = namedtuple("_Staged", "changes listing objects")


class Unusual(Exception):
    """A layout or format this module does not model: ask git instead."""


class Repo(_Repo):
    """Where a repository lives, seen from one directory, as real absolute paths:
    ``git_dir`` (per worktree), ``common_dir`` (shared by every worktree) and ``toplevel``
    (None in a bare repository or inside the git dir). A named tuple."""

    __slots__ = ()


# --- discovery ---------------------------------------------------------------------------------

_DISCOVERY_ENV = ("GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM")


def discover(cwd: str) -> Repo | None:
    """The repository containing ``cwd`` (git's upward search for a ``.git`` directory or
    ``gitdir:`` file, or a git directory, stopping at mount points), or None outside any.

    Raises Unusual for what the walk does not model: ``GIT_CEILING_DIRECTORIES``,
    ``core.worktree``, ``core.bare``, a foreign owner (``safe.directory``), an unreadable or
    odd ``.git``; then ``git rev-parse`` must answer (setup.c
    setup_git_directory_gently_1).
    """
    if any(name in os.environ for name in _DISCOVERY_ENV):
        raise Unusual
    here = os.path.realpath(cwd)  # git works from the physical cwd
    try:
        device = os.stat(here).st_dev
    except OSError:
        raise Unusual from None  # let git word the error
    while True:
        found = _repo_at(here)
        if found is not None:
            return found
        parent = os.path.dirname(here)
        if parent == here:
            return None
        try:
            if os.stat(parent).st_dev != device:
                return None  # git stops at a mount point (GIT_DISCOVERY_ACROSS_FILESYSTEM)
        except OSError:
            raise Unusual from None
        here = parent


def _repo_at(directory: str) -> Repo | None:
    # first <dir>/.git (directory or gitfile), then <dir> itself as a git directory (bare, or
    # cwd inside .git). `directory` is a real path.
    dotgit = os.path.join(directory, ".git")
    try:
        mode = os.lstat(dotgit).st_mode
        if stat.S_ISLNK(mode):
            dotgit = os.path.realpath(dotgit)
            mode = os.stat(dotgit).st_mode
    except (FileNotFoundError, NotADirectoryError):
        mode = 0
    except OSError:
        raise Unusual from None
    if stat.S_ISREG(mode):
        gitdir = _read_gitfile(dotgit)
        return _finish(gitdir, _common_if_git_dir(gitdir), directory)
    if stat.S_ISDIR(mode):
        common = _common_if_git_dir(dotgit)
        if common is not None:
            return _finish(dotgit, common, directory)
    common = _common_if_git_dir(directory)
    return None if common is None else _finish(directory, common, None)


def _read_gitfile(path: str) -> str:
    # gitrepository-layout(5): a `.git` file holds "gitdir: <path>", relative to the file.
    try:
        with open(path, "rb") as f:
            data = f.read(4096)
    except OSError:
        raise Unusual from None
    if not data.startswith(b"gitdir: "):
        raise Unusual  # git dies with "invalid gitfile format": let it say so
    target = os.path.join(os.path.dirname(path), os.fsdecode(data[8:].rstrip(b"\r\n")))
    return os.path.realpath(target)


def _common_if_git_dir(path: str) -> str | None:
    """The (real) common dir if ``path`` is a git directory, else None. setup.c
    is_git_directory(): a valid HEAD, objects/ and refs/ (in the dir `commondir` names)."""
    try:
        with open(os.path.join(path, "HEAD"), "rb") as f:
            head = f.read(256)
    except OSError:
        return None
    if not (head.startswith(b"ref:") and head[4:].lstrip().startswith(b"refs/")
            or _is_hex(head.rstrip(b"\r\n"))):
        return None
    try:
        with open(os.path.join(path, "commondir"), "rb") as f:
            rel = os.fsdecode(f.read().rstrip(b"\r\n"))
        common = os.path.realpath(os.path.join(path, rel))
    except FileNotFoundError:
        common = path
    except OSError:
        return None
    if os.path.isdir(os.path.join(common, "objects")) and os.path.isdir(
            os.path.join(common, "refs")):
        return common
    return None


def _is_hex(data: bytes) -> bool:
    return len(data) in (40, 64) and all(c in b"0123456789abcdef" for c in data)


def _finish(gitdir: str, common: str | None, worktree: str | None) -> Repo:
    if common is None:
        raise Unusual  # a gitfile naming no repository: git dies, let it say why
    # core.bare / core.worktree are read from these two files only (setup.c
    # read_repository_format, no includes); when set, git's answer differs from the walk's.
    check_plain_core(os.path.join(common, "config"))
    check_plain_core(os.path.join(gitdir, "config.worktree"))
    if not hasattr(os, "geteuid"):
        raise Unusual
    uid = os.geteuid()
    for owned in (worktree, gitdir):
        # git refuses a repository owned by someone else unless safe.directory allows it
        if owned is not None and os.stat(owned).st_uid != uid:
            raise Unusual
    return Repo(gitdir, common, worktree)


def check_plain_core(config: str) -> None:
    """Raise Unusual when the config file ``config`` sets ``core.worktree`` or a true
    ``core.bare``, or continues a ``[core]`` line with a backslash; a missing file is fine."""
    try:
        with open(config, "rb") as f:
            text = f.read()
    except FileNotFoundError:
        return
    except OSError:
        raise Unusual from None
    section = b""
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith(b"["):
            head, _, line = line[1:].partition(b"]")
            section = head.strip().lower()
            line = line.strip()
        if section != b"core" or not line or line.startswith((b"#", b";")):
            continue
        key, eq, value = line.partition(b"=")
        key = key.strip().lower()
        value = value.split(b"#")[0].split(b";")[0].strip().strip(b'"').lower()
        if key == b"worktree" or raw.rstrip().endswith(b"\\"):
            raise Unusual
        if key == b"bare" and (not eq or value not in (b"false", b"no", b"off", b"0")):
            raise Unusual


def index_file(repo: Repo, cwd: str) -> str:
    """The index git would use: ``$GIT_INDEX_FILE`` (a relative value is taken from the work
    tree top, where git resolves it and where hooks run) or ``<git_dir>/index``."""
    named = os.environ.get("GIT_INDEX_FILE")
    if named:
        return os.path.join(repo.toplevel or cwd, named)
    return os.path.join(repo.git_dir, "index")


# --- refs and objects --------------------------------------------------------------------------

_COMMIT, _TREE, _BLOB, _TAG, _OFS_DELTA, _REF_DELTA = 1, 2, 3, 4, 6, 7
_KINDS = {b"commit": _COMMIT, b"tree": _TREE, b"blob": _BLOB, b"tag": _TAG}
_PER_WORKTREE_REFS = (b"refs/bisect/", b"refs/worktree/", b"refs/rewritten/")


class Objects:
    """Read access to one repository's refs and object database (SHA-1 only).

    Raises Unusual on construction for a layout it does not read (``GIT_OBJECT_DIRECTORY``,
    alternates, replace refs, reftable, another hash function or ref storage).
    """

    def __init__(self, repo: Repo) -> None:
        if any(k in os.environ for k in ("GIT_OBJECT_DIRECTORY", "GIT_REPLACE_REF_BASE",
                                         "GIT_ALTERNATE_OBJECT_DIRECTORIES")):
            raise Unusual
        self.repo = repo
        self.dir = os.path.join(repo.common_dir, "objects")
        common = repo.common_dir
        if os.path.exists(os.path.join(self.dir, "info", "alternates")) or os.path.exists(
                os.path.join(common, "reftable")):
            raise Unusual
        try:
            with open(os.path.join(common, "config"), "rb") as f:
                config = f.read().lower()
        except FileNotFoundError:
            config = b""
        except OSError:
            raise Unusual from None
        if b"objectformat" in config or b"refstorage" in config:
            raise Unusual  # extensions.objectFormat / refStorage: not the SHA-1 files read here
        self._packed: bytes | None = None
        if not os.environ.get("GIT_NO_REPLACE_OBJECTS") and (
                _nonempty_dir(os.path.join(common, "refs", "replace"))
                or b" refs/replace/" in self.packed_refs()):
            raise Unusual  # git would read the replacement objects instead
        self._packs: list[_Pack] | None = None

    def packed_refs(self) -> bytes:
        """The ``packed-refs`` file, empty when there is none."""
        if self._packed is None:
            try:
                with open(os.path.join(self.repo.common_dir, "packed-refs"), "rb") as f:
                    self._packed = f.read()
            except FileNotFoundError:
                self._packed = b""
            except OSError:
                raise Unusual from None
        return self._packed

    def head(self) -> bytes | None:
        """The commit HEAD points at, or None on an unborn branch."""
        name = b"HEAD"
        for _ in range(6):  # symbolic refs nest at most 5 deep (refs.c SYMREF_MAXDEPTH)
            own = name == b"HEAD" or name.startswith(_PER_WORKTREE_REFS)
            base = self.repo.git_dir if own else self.repo.common_dir
            try:
                with open(os.path.join(base, os.fsdecode(name)), "rb") as f:
                    value = f.read().strip()
            except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
                packed = self._packed_ref(name)
                if packed is None:
                    return None  # unborn
                value = packed
            except OSError:
                raise Unusual from None
            if value.startswith(b"ref:"):
                name = value[4:].strip()
                if not name.startswith(b"refs/") or name == b"refs/heads/.invalid":
                    raise Unusual  # refs/heads/.invalid: a reftable repository
                continue
            if len(value) != 40 or not _is_hex(value):
                raise Unusual
            return bytes.fromhex(value.decode())
        raise Unusual

    def _packed_ref(self, name: bytes) -> bytes | None:
        for line in self.packed_refs().splitlines():
            if line.endswith(b" " + name) and not line.startswith((b"#", b"^")):
                return line[:-len(name) - 1]
        return None

    def read(self, oid: bytes) -> tuple[int, bytes]:
        """(type, content) of object ``oid``: 1 commit, 2 tree, 3 blob, 4 tag. Raises Unusual
        when it is in none of the files read here (e.g. a promisor remote has it)."""
        hexid = oid.hex()
        try:
            with open(os.path.join(self.dir, hexid[:2], hexid[2:]), "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            pass
        except OSError:
            raise Unusual from None
        else:
            import zlib

            try:
                data = zlib.decompress(raw)
            except zlib.error:
                raise Unusual from None
            header, _, body = data.partition(b"\0")
            kind, _, size = header.partition(b" ")
            if kind not in _KINDS or not size.isdigit() or int(size) != len(body):
                raise Unusual
            return _KINDS[kind], body
        for pack in self.packs():
            at = pack.find(oid)
            if at is not None:
                return pack.read(at, self)
        raise Unusual

    def packs(self) -> list[_Pack]:
        """The pack files with a version 2 index, newest first."""
        if self._packs is None:
            where = os.path.join(self.dir, "pack")
            try:
                names = os.listdir(where)
            except FileNotFoundError:
                names = []
            idx = [os.path.join(where, n) for n in names if n.endswith(".idx")]
            idx.sort(key=lambda p: -os.stat(p).st_mtime_ns)
            self._packs = [_Pack(p) for p in idx if os.path.exists(p[:-4] + ".pack")]
        return self._packs

    def tree_listing(self, commit: bytes | None, top: bytes) -> Listing:
        """The files under directory ``top`` (``b""``: the whole tree) at ``commit`` (None:
        none), per directory: ``{dir: (names, modes, oids)}``, in tree order. Empty when
        ``top`` is not a directory there."""
        listing: Listing = {}
        if commit is None:
            return listing
        kind, data = self.read(commit)
        if kind != _COMMIT or not data.startswith(b"tree ") or data[45:46] != b"\n":
            raise Unusual
        tree = bytes.fromhex(data[5:45].decode())
        parts = top.split(b"/") if top else []
        for n, part in enumerate(parts, start=1):
            names, modes, oids = _tree_entries(self._tree(tree))
            try:
                at = names.index(part)
            except ValueError:
                return listing
            if modes[at] != _DIR:
                if n == len(parts):
                    raise Unusual  # `top` is a file
                return listing
            tree = oids[at]
        stack = [(top, tree)]
        while stack:
            where, tree = stack.pop()
            names, modes, oids = _tree_entries(self._tree(tree))
            if _DIR in modes:
                files: tuple[list[bytes], list[int], list[bytes]] = ([], [], [])
                for name, mode, oid in zip(names, modes, oids, strict=True):
                    if mode == _DIR:
                        stack.append((where + b"/" + name if where else name, oid))
                    else:
                        files[0].append(name)
                        files[1].append(mode)
                        files[2].append(oid)
                names, modes, oids = files
            if names:
                listing[where] = (names, modes, oids)
        return listing

    def _tree(self, oid: bytes) -> bytes:
        kind, data = self.read(oid)
        if kind != _TREE:
            raise Unusual
        return data


def _nonempty_dir(path: str) -> bool:
    try:
        with os.scandir(path) as entries:
            return any(True for _ in entries)
    except (FileNotFoundError, NotADirectoryError):
        return False


class _Pack:
    """One pack file and its version 2 index (gitformat-pack(5))."""

    def __init__(self, idx_path: str) -> None:
        # Only the header and the fan-out table are read here; a lookup reads its ~17 probes
        # (a pack of a million objects has a 28 MB index).
        self.idx_path = idx_path
        with open(idx_path, "rb") as f:
            head = f.read(8 + 1024)
        if head[:8] != b"\377tOc\0\0\0\2" or len(head) < 8 + 1024:
            raise Unusual
        self.fanout = head[8:]
        self.count = int.from_bytes(self.fanout[-4:], "big")
        self.path = idx_path[:-4] + ".pack"

    def find(self, oid: bytes) -> int | None:
        """The offset of ``oid`` in the pack, or None."""
        fanout, first = self.fanout, oid[0]
        lo = int.from_bytes(fanout[4 * first - 4:4 * first], "big") if first else 0
        hi = int.from_bytes(fanout[4 * first:4 * first + 4], "big")
        if lo >= hi:
            return None
        names = 8 + 1024
        fd = os.open(self.idx_path, os.O_RDONLY)
        try:
            while lo < hi:
                mid = (lo + hi) // 2
                got = os.pread(fd, 20, names + 20 * mid)
                if len(got) != 20:
                    raise Unusual
                if got < oid:
                    lo = mid + 1
                elif got > oid:
                    hi = mid
                else:
                    table = names + 24 * self.count  # after the names and the CRC32s
                    offset = int.from_bytes(os.pread(fd, 4, table + 4 * mid), "big")
                    if offset & 0x80000000:  # in the table of 8-byte offsets
                        at = table + 4 * self.count + 8 * (offset & 0x7FFFFFFF)
                        offset = int.from_bytes(os.pread(fd, 8, at), "big")
                    return offset
        finally:
            os.close(fd)
        return None

    def read(self, offset: int, objects: Objects) -> tuple[int, bytes]:
        """(type, content) of the object at ``offset``, deltas applied."""
        fd = os.open(self.path, os.O_RDONLY)
        try:
            chain: list[bytes] = []
            while True:
                kind, data, base = self._entry(fd, offset)
                if kind == _OFS_DELTA:
                    chain.append(data)
                    offset = base
                elif kind == _REF_DELTA:
                    chain.append(data)
                    at = self.find(data[-20:])
                    if at is None:  # a thin base elsewhere: another pack or a loose object
                        kind, data = objects.read(data[-20:])
                        chain[-1] = chain[-1][:-20]
                        break
                    offset = at
                    chain[-1] = chain[-1][:-20]
                elif kind in (_COMMIT, _TREE, _BLOB, _TAG):
                    break
                else:
                    raise Unusual
                if len(chain) > 10000:
                    raise Unusual
        finally:
            os.close(fd)
        for delta in reversed(chain):
            data = _apply_delta(data, delta)
        return kind, data

    @staticmethod
    def _entry(fd: int, offset: int) -> tuple[int, bytes, int]:
        """(type, inflated data, base offset) of the entry at ``offset``; a REF_DELTA's data
        is its delta followed by the 20-byte base id."""
        head = os.pread(fd, 32, offset)
        if not head:
            raise Unusual
        c = head[0]
        kind, size, shift, i = (c >> 4) & 7, c & 15, 4, 1
        while c & 0x80:
            c = head[i]
            i += 1
            size |= (c & 0x7F) << shift
            shift += 7
        base = 0
        suffix = b""
        if kind == _OFS_DELTA:
            c = head[i]
            i += 1
            rel = c & 0x7F
            while c & 0x80:
                c = head[i]
                i += 1
                rel = ((rel + 1) << 7) | (c & 0x7F)
            base = offset - rel
        elif kind == _REF_DELTA:
            suffix = head[i:i + 20]
            i += 20
        import zlib

        inflate = zlib.decompressobj()
        out = []
        pos = offset + i
        chunk = size + 64
        while not inflate.eof:
            raw = os.pread(fd, chunk, pos)
            if not raw:
                raise Unusual
            try:
                out.append(inflate.decompress(raw))
            except zlib.error:
                raise Unusual from None
            pos += len(raw)
            chunk = max(chunk, 65536)
        data = b"".join(out)
        if len(data) != size:
            raise Unusual
        return kind, data + suffix, base


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        c = data[pos]
        pos += 1
        value |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return value, pos


def _apply_delta(base: bytes, delta: bytes) -> bytes:
    """The object a pack delta makes of ``base`` (gitformat-pack(5), "Deltified
    representation"): copy-from-base and insert instructions."""
    source, pos = _varint(delta, 0)
    target, pos = _varint(delta, pos)
    if source != len(base):
        raise Unusual
    view = memoryview(base)
    out = bytearray()
    end = len(delta)
    while pos < end:
        op = delta[pos]
        pos += 1
        if op & 0x80:
            offset = size = 0
            for bit, shift in ((1, 0), (2, 8), (4, 16), (8, 24)):
                if op & bit:
                    offset |= delta[pos] << shift
                    pos += 1
            for bit, shift in ((16, 0), (32, 8), (64, 16)):
                if op & bit:
                    size |= delta[pos] << shift
                    pos += 1
            size = size or 0x10000
            if offset + size > len(base):
                raise Unusual
            out += view[offset:offset + size]
        elif op:
            out += delta[pos:pos + op]
            pos += op
        else:
            raise Unusual  # reserved instruction
    if len(out) != target:
        raise Unusual
    return bytes(out)


# --- trees -------------------------------------------------------------------------------------

_DIR, _GITLINK = 0o40000, 0o160000
#: {directory: (names, modes, object ids)} of the files (not subdirectories) in each directory,
#: directory and names as repository bytes, in Git's order.
Listing = dict[bytes, tuple[list[bytes], list[int], list[bytes]]]
_REGULAR_FILES = re.compile(rb"(?s)100644 ([^\0/]+)\0(.{20})")


def _tree_entries(data: bytes) -> tuple[list[bytes], list[int], list[bytes]]:
    """(names, modes, ids) of a tree object, in its order; modes canonical as git reads them
    (tree-walk.c canon_mode)."""
    parts = _REGULAR_FILES.split(data)
    if not any(parts[0::3]):  # the common case: only 100644 files, parsed in C
        return parts[1::3], [0o100644] * (len(parts) // 3), parts[2::3]
    names: list[bytes] = []
    modes: list[int] = []
    oids: list[bytes] = []
    pos, end = 0, len(data)
    while pos < end:
        space = data.find(b" ", pos)
        nul = data.find(b"\0", space)
        if space < 0 or nul < 0 or nul + 21 > end:
            raise Unusual
        mode = int(data[pos:space], 8)
        if stat.S_ISREG(mode):
            mode = 0o100755 if mode & 0o100 else 0o100644
        elif stat.S_ISDIR(mode):
            mode = _DIR
        elif stat.S_ISLNK(mode):
            mode = 0o120000
        else:
            mode = _GITLINK
        names.append(data[space + 1:nul])
        modes.append(mode)
        oids.append(data[nul + 1:nul + 21])
        pos = nul + 21
    return names, modes, oids


# --- the index ---------------------------------------------------------------------------------

_RUNS: dict[bytes, re.Pattern[bytes]] = {}


def _run_pattern(directory: bytes) -> re.Pattern[bytes]:
    """A pattern matching, from the path of an entry in ``directory/``, its name, the NULs
    after it and the 62-byte header of the next entry when that one is plain; where it does
    not match, the second branch matches everything left, without groups, which ends a split
    at once.

    Plain: mode 100644, no flag (stage 0, not assume-valid, no extended flags), a path shorter
    than 256 bytes. gitformat-index(5) v2/v3: an entry is 62 bytes of header (stat data, mode,
    id, flags), the path, then 1-8 NULs so that its length is a multiple of 8. The NULs are
    taken greedily, which may swallow the first NULs of the next entry's ctime; then no
    further match can follow (a name holds no ``/``, so the directory's path never shows at a
    shifted offset), so only the last match of a run may be off, and :func:`index_listing`
    reads nothing from that one but its name.
    """
    found = _RUNS.get(directory)
    if found is None:
        found = re.compile(rb"(?s)" + re.escape(directory + b"/")
                           + rb"([^\0/]++)(\0{1,8}+).{24}\x00\x00\x81\xa4.{12}(.{20})"
                           + rb"\x00[^\x00]|.+")
        _RUNS[directory] = found
    return found


def index_listing(path: str, top: bytes, git_dir: str) -> Listing:
    """The stage-0 entries of the index file ``path`` under directory ``top`` (``b""``: all),
    per directory like :meth:`Objects.tree_listing`. A missing index is empty (as git reads it).

    Raises Unusual for index version 4, a split index (a ``sharedindex.*`` in ``git_dir``),
    a sparse-directory, unmerged or intent-to-add entry under ``top``, an entry named ``top``
    itself, or anything malformed.
    """
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return {}
    except OSError:
        raise Unusual from None
    if data[:4] != b"DIRC" or len(data) < 32:
        raise Unusual
    version = int.from_bytes(data[4:8], "big")
    count = int.from_bytes(data[8:12], "big")
    if version not in (2, 3) or _has_shared_index(git_dir):
        raise Unusual
    under = top + b"/" if top else b""
    listing: Listing = {}
    pos, seen, end = 12, 0, len(data) - 20
    view = memoryview(data)
    try:
        while seen < count:
            flags = data[pos + 60] << 8 | data[pos + 61]
            start = pos + 62
            extended = 0
            if flags & 0x4000:
                if version < 3:
                    raise Unusual
                extended = data[start] << 8 | data[start + 1]
                start += 2
            nul = data.index(b"\0", start, end)
            if (flags & 0xFFF) not in (0xFFF, nul - start):
                raise Unusual
            name = data[start:nul]
            nxt = pos + ((nul - pos + 8) & ~7)
            seen += 1
            if name < under:
                if name == top:
                    raise Unusual  # `top` is a file
                pos = nxt
                continue
            if not name.startswith(under):
                break
            mode = int.from_bytes(data[pos + 24:pos + 28], "big")
            if flags & 0x3000 or extended & 0x2000 or mode == _DIR:
                raise Unusual  # unmerged, intent-to-add, a sparse directory entry
            directory, _, base = name.rpartition(b"/")
            entry = listing.get(directory)
            if entry is None:
                entry = listing[directory] = ([], [], [])
            entry[0].append(base)
            entry[1].append(mode)
            entry[2].append(data[pos + 40:pos + 60])
            pos = nxt
            if (mode == 0o100644 and not flags & 0xFF00 and count - seen > 8
                    and data.startswith(directory + b"/", pos + 62)):
                # many more entries: read the plain ones of this directory in C
                parts = _run_pattern(directory).split(view[start:])
                names = parts[1::4]
                k = names.index(None) if None in names else len(names)
                if k > 1:
                    if k - 1 > count - seen:
                        raise Unusual
                    # match i: "directory/", name and NULs of entry i, header of entry i+1;
                    # every match but the last is followed by another, so is exact
                    entry[0].extend(names[1:k])
                    entry[1].extend([0o100644] * (k - 1))
                    entry[2].extend(parts[3:4 * k - 4:4])
                    lead = len(directory) + 1
                    last = start - 62 + (k - 1) * (lead + 62) + sum(
                        map(len, parts[1:4 * k - 4:4])) + sum(map(len, parts[2:4 * k - 4:4]))
                    pos = last + ((62 + lead + len(names[k - 1]) + 8) & ~7)
                    seen += k - 1
    except (IndexError, ValueError):  # past the end, a path without its NUL
        raise Unusual from None
    return listing


def _has_shared_index(git_dir: str) -> bool:
    try:
        return any(n.startswith("sharedindex.") for n in os.listdir(git_dir))
    except OSError:
        return False


# --- what the index changes --------------------------------------------------------------------

class Change(_Change):
    """One path the index changes against HEAD: ``path`` and ``oid``, the staged blob's id, or
    None when the path is deleted (or is no longer a file). A named tuple."""

    __slots__ = ()


def _is_blob_mode(mode: int) -> bool:
    return mode not in (0, _GITLINK, _DIR)


def compare(index: Listing, head: Listing) -> list[Change]:
    """The paths whose entry differs between two listings, in Git's path order, as ``git
    diff-index --cached --no-renames`` reports them (a change to or from a submodule counts as
    a deletion; a submodule alone is ignored)."""
    found: list[Change] = []
    empty: tuple[list[bytes], list[int], list[bytes]] = ([], [], [])
    for directory in index.keys() | head.keys():
        new, old = index.get(directory, empty), head.get(directory, empty)
        if new == old:
            continue
        if new[0] == old[0] and new[1] == old[1]:
            changed = list(compress(new[0], map(ne, new[2], old[2])))
        else:
            either = set(zip(*new, strict=True)) ^ set(zip(*old, strict=True))
            changed = list({t[0] for t in either})
        few = len(changed) <= 16  # else one dict per side, not a list search per name
        news = None if few else dict(zip(new[0], zip(new[1], new[2], strict=True), strict=True))
        olds = None if few else dict(zip(old[0], zip(old[1], old[2], strict=True), strict=True))
        for name in changed:
            path = directory + b"/" + name if directory else name
            now = _lookup(news, new, name)
            was = _lookup(olds, old, name)
            if now is not None and _is_blob_mode(now[0]):
                found.append(Change(path, now[1]))
            elif was is not None and _is_blob_mode(was[0]):
                found.append(Change(path, None))
    found.sort()
    return found


def _lookup(table: dict[bytes, tuple[int, bytes]] | None,
            lists: tuple[list[bytes], list[int], list[bytes]],
            name: bytes) -> tuple[int, bytes] | None:
    if table is not None:
        return table.get(name)
    try:
        at = lists[0].index(name)
    except ValueError:
        return None
    return lists[1][at], lists[2][at]


class Staged(_Staged):
    """What a commit of the index would change under a directory (``changes``), the index's
    ``listing`` under it, and the ``objects`` to read blobs from. A named tuple."""

    __slots__ = ()

    def blob(self, oid: bytes) -> bytes:
        """The content of blob ``oid``."""
        kind, data = self.objects.read(oid)
        if kind != _BLOB:
            raise Unusual
        return data

    def indexed(self, path: bytes) -> bytes | None:
        """The blob the index holds at ``path`` (for a path not in ``changes``, HEAD's), or
        None when the index has no file there."""
        directory, _, name = path.rpartition(b"/")
        found = _lookup(None, self.listing.get(directory, ([], [], [])), name)
        if found is None or not _is_blob_mode(found[0]):
            return None
        return self.blob(found[1])


def staged(repo: Repo, index_path: str, prefix: str) -> Staged:
    """The paths under ``prefix`` (a directory, ``""`` for all) whose index entry differs from
    HEAD (``git diff-index --cached HEAD -- PREFIX``; every entry on an unborn branch).

    Raises Unusual when git must answer instead.
    """
    top = os.fsencode(prefix.strip("/"))
    objects = Objects(repo)
    index = index_listing(index_path, top, repo.git_dir)
    head = objects.tree_listing(objects.head(), top)
    return Staged(compare(index, head), index, objects)
