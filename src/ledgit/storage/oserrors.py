"""One clear line for an OSError of the machine at a path (issue 13): read-only file systems,
full disks, quotas, I/O errors and permissions, naming the owner and the fix. Used by the
board's write path, its locks and the private dir (storage layer)."""

from __future__ import annotations

import errno
import os
import stat
import sys

from ledgit.core.errors import USAGE, LedgitError, located, os_failure
from ledgit.storage.locate import upward

if sys.platform != "win32":
    import grp
    import pwd


def user_name(uid: int) -> str:
    """The login name of ``uid``, or the number when the system has none for it."""
    if sys.platform == "win32":  # pragma: no cover - no password database
        return str(uid)
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def group_name(gid: int) -> str:
    """The name of group ``gid``, or the number when the system has none for it."""
    if sys.platform == "win32":  # pragma: no cover - no group database
        return str(gid)
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)


def os_refusal(exc: OSError, path: str, what: str = "cannot write") -> LedgitError:
    """The one line for an OSError of the machine at ``path`` (DESIGN §9, issue 13):
    :func:`ledgit.core.errors.os_failure` (read-only, full disk, quota, I/O: exit 2 or 74), a
    permission error naming who owns the nearest part of ``path`` and the fix; any other
    errno ``WHAT: strerror: PATH`` (exit 2)."""
    detail = owner_detail(path) if exc.errno in (errno.EACCES, errno.EPERM) else None
    found = os_failure(exc, path, detail)
    if found is not None:
        return found
    return LedgitError(located(f"{what}: {exc.strerror or exc}", path), USAGE)


def owner_detail(path: str) -> str | None:
    """Why this user may not write ``path``: the outermost part of it, from the path up to
    the first part this user owns, that belongs to another user (its owner and the
    ``chown -R`` that fixes it), else the mode of the nearest existing part. None where it
    cannot be told (no POSIX owners)."""
    getuid = getattr(os, "geteuid", None)
    if getuid is None:  # pragma: no cover - Windows
        return None
    me = getuid()
    nearest: tuple[str, os.stat_result] | None = None
    foreign: tuple[str, os.stat_result] | None = None
    for part in upward(os.path.abspath(path)):
        try:
            st = os.lstat(part)
        except OSError:
            continue
        if nearest is None:
            nearest = (part, st)
        if st.st_uid == me:
            break
        foreign = (part, st)
    if foreign is not None:
        part, uid = foreign[0], foreign[1].st_uid
        return (f"{part} is owned by {user_name(uid)} (uid {uid}), not by {user_name(me)} "
                f"(uid {me}); fix: sudo chown -R {user_name(me)} {part}")
    if nearest is None:
        return None
    return f"{nearest[0]} has mode {stat.S_IMODE(nearest[1].st_mode):04o}"
