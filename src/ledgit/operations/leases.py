"""Remote leases: the policy (DESIGN §4 "Remote leases", docs/leases.md).

A board with a shared remote (``leases:`` in ``.ledgit/config.yaml``; default: the remote of
the current branch's upstream; ``none``: local claims only) keeps one lease per claimed task on
that remote, written by compare-and-swap (:mod:`ledgit.git.leases`), so that two clones cannot
both hold a task: the ref has one value at a time and every change is a CAS on the value the
writer last saw.

The record itself (its fields, the commit message): :mod:`ledgit.operations.leaserecord`.

Clock skew: expiry compares the writer's clock (``expires``) with the reader's. A takeover
waits :func:`skew_allowance` past ``expires`` (a tenth of the TTL, at most 30 s); clocks of
the agents must agree within that. Whatever the clocks say, the remote holds one value at a
time, so two leases are never live on the remote at once, and a holder whose lease was taken
over learns it at its next heartbeat (the CAS on its value fails).

Errors: a refusal because of someone else's lease is LedgitError exit 6 (:data:`CLAIM`) naming
the holder and when the lease runs out; an unreachable remote, or one refusing the
``refs/ledgit/`` namespace, is exit :data:`ledgit.core.errors.REMOTE` (69) with git's reason.
"""

from __future__ import annotations

import os
import shlex
import sys
import time
from typing import TYPE_CHECKING, Any, NamedTuple

from ledgit.core.errors import BUSY, CLAIM, REMOTE, LedgitError
from ledgit.core.readout import epoch_seconds, format_duration
from ledgit.git import leases as gitleases
from ledgit.git.remotenames import known_remotes
from ledgit.operations.leaserecord import (
    ENDED_KEEP,
    Lease,
    lease_view,
    parse,
    render,
    skew_allowance,
    stamp,
)
from ledgit.storage.actor import actor_name
from ledgit.storage.board import Board
from ledgit.storage.cloneid import clone_id
from ledgit.storage.ownership import adopt_fd, adopt_path, make_dirs

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping


CACHE_WINDOW = 10.0  # seconds: list/ready reuse a fetch of the leases this recent
ATTEMPTS = 5  # CAS rounds before giving up with exit 5 (the ref kept changing)
REMOTES_FILE = "remotes.json"  # the private dir's copy of `git remote`'s answer


class Site(NamedTuple):
    """Where a board's leases live: the Git work tree to run git in, the remote's name, the
    worktree's private dir (the fetch stamp of the cache window)."""

    cwd: str
    remote: str
    private: str


# --------------------------------------------------------------------------- where


def site_of(board: Board) -> Site | None:
    """Where ``board``'s leases live, None for local claims only. ``leases: NAME`` names the
    remote; without the setting it is the repository's only remote (any branch, a detached
    HEAD mid-rebase), or with several the current branch's upstream remote; None with
    ``leases: none``, outside Git, without a remote, or with several and no upstream."""
    setting = board.config.leases
    if setting == "none" or board.git_dir_str is None:
        return None
    remote = setting
    if not remote:  # `git remote` once per change of the config (no remote, one remote)
        names = known_remotes(board.root_str, board.git_dir_str,
                              os.path.join(board.private_str, REMOTES_FILE), adopt_path)
        if len(names) == 1:
            remote = names[0]
        elif names:
            upstream = gitleases.upstream_remote(board.root_str)
            remote = upstream if upstream in names else None
    if not remote:
        return None
    return Site(board.root_str, remote, board.private_str)


def _remote_error(site: Site, task: str, why: str, tail: str) -> LedgitError:
    return LedgitError(f"{task}: lease remote {site.remote}: {why}; {tail}", REMOTE)


class _Remote:
    """One task's lease as this command sees it: the mirror's value first (a hint), then the
    remote's (fetched at most once per refusal). ``oid``: the commit the ref held when last
    seen (None: no ref), the value every CAS expects."""

    def __init__(self, site: Site, task: str) -> None:
        self.site, self.task = site, task
        self.fresh = False
        self._see(gitleases.read_mirror(site.cwd, site.remote).get(task))

    def _see(self, entry: gitleases.MirrorEntry | None) -> None:
        self.oid = entry.oid if entry is not None else None
        self.current = None if entry is None else parse(self.task, entry.oid, entry.message)
        self.unreadable = entry is not None and self.current is None

    def refresh(self, tail: str) -> None:
        """Fetch the remote's leases (one round trip) and read this task's."""
        problem = gitleases.fetch_leases(self.site.cwd, self.site.remote)
        if problem is not None:
            raise _remote_error(self.site, self.task, f"cannot read leases: {problem}", tail)
        _touch(self.site)
        self._see(gitleases.read_mirror(self.site.cwd, self.site.remote).get(self.task))
        self.fresh = True

    def push(self, lease: Lease | None, tail: str) -> Lease | None | bool:
        """CAS the ref from the value last seen to ``lease`` (None: delete). Returns the
        lease written (or None for a delete) on success, False when the ref had moved (the
        caller decides again on the refreshed value)."""
        site = self.site
        new_oid = None
        if lease is not None:
            new_oid = gitleases.make_lease_commit(site.cwd, render(lease))
        outcome = gitleases.push_lease(site.cwd, site.remote, self.task, new_oid, self.oid)
        if outcome.ok:
            gitleases.set_mirror(site.cwd, site.remote, self.task, new_oid)
            return lease._replace(oid=new_oid or "") if lease is not None else None
        if not outcome.reached:
            raise _remote_error(site, self.task, f"unreachable ({outcome.detail})", tail)
        expected = self.oid
        self.refresh(tail)
        if self.oid == expected and not _lost_race(outcome):
            raise _remote_error(site, self.task, f"refuses refs/ledgit/leases/ "
                                f"({outcome.detail})", tail)
        return False


def _lost_race(outcome: gitleases.PushOutcome) -> bool:
    """A refusal that says the ref moved or was locked by a concurrent push (then the caller
    retries), as opposed to a remote refusing the namespace (a hook, permissions)."""
    text = f"{outcome.reason} {outcome.detail}"
    return outcome.reason in ("stale info", "fetch first", "non-fast-forward") or any(
        w in text for w in ("lock", "failed to update ref", "already exists"))


def _touch(site: Site) -> None:
    """Stamp this worktree's last fetch of the leases (the cache window of list/ready)."""
    path = _stamp_path(site)
    try:
        make_dirs(os.path.dirname(path))
        with open(path, "w", encoding="utf-8") as fh:
            adopt_fd(fh.fileno(), os.path.dirname(path))  # root: the owner's (issue 36)
    except OSError:
        pass  # a cache stamp: without it the next read fetches again


def _stamp_path(site: Site) -> str:
    return os.path.join(site.private, f"leases-fetched-{site.remote.replace('/', '%')}")


# --------------------------------------------------------------------------- the CAS rounds


def _held(task: str, by: str, ttl: int, revision: str, now: float, *, at: str | None = None,
          took_over_from: str = "", clone: str = "") -> Lease:
    moment = stamp(now)
    return Lease(task, "held", by, at or moment, moment, stamp(now + ttl), ttl, revision,
                 took_over_from=took_over_from, nonce=os.urandom(6).hex(), clone=clone)


def _until(lease: Lease, now: float) -> str:
    left = lease.expires_at() - now
    when = f"in {format_duration(left)}" if left >= 0 else f"{format_duration(-left)} ago"
    return f"{lease.expires} ({when})"


def _where(site: Site) -> str:
    return f"on {site.remote}"


def acquire(site: Site, task: str, by: str, ttl: int, revision: str, *, take_over: bool,
            known: Callable[[Lease], bool], clone: str = ""
            ) -> tuple[Lease, Lease | None, str | None]:
    """Take ``task``'s lease for ``by`` (``claim``): create it where there is none, renew
    ``by``'s own (a live lease of ``by`` that another clone took is refused unless
    ``take_over``: one name in two clones), replace an end marker this clone knows
    (``known``) or that ran out, take an expired lease of someone else only with
    ``take_over`` (a CAS on the expired value).
    Returns (the lease written, the one it replaced or None, the replaced commit or None),
    for :func:`restore`. ``clone``: the writer's clone id (the record's ``clone``). Raises
    exit 6 naming the holder and when its lease runs out, 69 for an unreachable or refusing
    remote, 5 when the ref kept changing."""
    tail = "nothing written (claim --offline claims locally, unconfirmed)"
    seen = _Remote(site, task)
    for _ in range(ATTEMPTS):
        now = time.time()
        cur = seen.current
        new: Lease | None = None
        refusal: str | None = None
        if seen.unreadable:
            refusal = (f"{task}: the lease ref {_where(site)} holds a record this ledgit "
                       f"cannot read (see: ledgit lease list)")
        elif cur is None:
            new = _held(task, by, ttl, revision, now, clone=clone)
        elif (cur.state == "held" and cur.by == by and cur.clone and clone
              and cur.clone != clone and not take_over
              and now <= cur.expires_at() + skew_allowance(cur.ttl)):
            # one name, two clones (agents that left it at Git's user.name): not this
            # agent's own lease -- both would work on the task (DESIGN §4)
            refusal = (f"{task}: {cur.how()} {_where(site)} from another clone "
                       f"({cur.clone[:8]}), until {_until(cur, now)}: two clones claim under "
                       f"one name; give each agent its own (--by or LEDGIT_ACTOR), or, to move "
                       f"the claim to this clone, claim --take-over")
        elif cur.state == "held" and cur.by == by:
            new = _held(task, by, ttl, revision, now, at=cur.at,
                        took_over_from=cur.took_over_from, clone=clone)
        elif cur.state == "held":
            if now <= cur.expires_at() + skew_allowance(cur.ttl):
                if cur.live(now):
                    refusal = (f"{task}: {cur.how()} {_where(site)}; the lease runs out at "
                               f"{_until(cur, now)}")
                else:
                    refusal = (f"{task}: {cur.how()} {_where(site)}; the lease ran out at "
                               f"{_until(cur, now)}: a takeover waits "
                               f"{format_duration(skew_allowance(cur.ttl))} more for clock "
                               f"skew")
            elif not take_over:
                refusal = (f"{task}: {cur.how()} {_where(site)}; the lease ran out at "
                           f"{_until(cur, now)}: take it over with claim --take-over")
            else:
                new = _held(task, by, ttl, revision, now, took_over_from=cur.by,
                            clone=clone)
        elif known(cur) or now > cur.expires_at():
            new = _held(task, by, ttl, revision, now, clone=clone)
        else:
            refusal = f"{task}: {cur.how()} {_where(site)} (pull to see it)"
        if refusal is not None:
            if not seen.fresh:
                seen.refresh(tail)
                continue
            raise LedgitError(f"{refusal}; nothing written", CLAIM)
        assert new is not None
        before, before_oid = cur, seen.oid
        written = seen.push(new, tail)
        if isinstance(written, Lease):
            return written, before, before_oid
    raise LedgitError(f"{task}: the lease {_where(site)} kept changing under "
                      f"{ATTEMPTS} attempts; try again", BUSY)


def renew(site: Site, task: str, by: str, ttl: int, revision: str, *, clone: str = "",
          only_held: bool = False) -> Lease:
    """Renew ``by``'s lease (``heartbeat``) by CAS on the value it holds; a lease that is
    gone (ran out and was pruned, or the claim was made ``--offline``) is taken anew, unless
    ``only_held`` (a heartbeat no claim here guards: it renews a lease, never takes one).
    ``clone``: as for :func:`acquire`; ``revision`` "" keeps the lease's. Raises exit 6
    telling the loser who ended its lease and how (taken over, completed, ...), 69 for an
    unreachable or refusing remote."""
    tail = "the lease was not renewed"
    seen = _Remote(site, task)
    for _ in range(ATTEMPTS):
        now = time.time()
        cur = seen.current
        if cur is not None and cur.state == "held" and cur.by == by:
            new = _held(task, by, ttl, revision or cur.revision, now, at=cur.at,
                        took_over_from=cur.took_over_from, clone=clone)
        elif cur is None and not seen.unreadable and seen.fresh and not only_held:
            new = _held(task, by, ttl, revision, now, clone=clone)
        elif not seen.fresh:
            seen.refresh(tail)
            continue
        else:
            raise LedgitError(lost_message(site, task, by, cur, now), CLAIM)
        written = seen.push(new, tail)
        if isinstance(written, Lease):
            return written
    raise LedgitError(f"{task}: the lease {_where(site)} kept changing under "
                      f"{ATTEMPTS} attempts; try again", BUSY)


def lost_message(site: Site, task: str, by: str, cur: Lease | None, now: float) -> str:
    """What the loser of a lease is told: who ended it and how."""
    if cur is None:
        return f"{task}: {by} holds no lease {_where(site)}"
    if cur.state == "ended":
        return (f"{task}: {cur.how()} {_where(site)}; {by}'s claim is over (pull to see "
                f"it)")
    if cur.took_over_from == by:
        return (f"{task}: {by}'s lease was taken over by {cur.by} at {cur.at} {_where(site)} "
                f"(it had run out); the new lease runs out at {_until(cur, now)}")
    return (f"{task}: {cur.how()} {_where(site)}, not by {by}; the lease runs out at "
            f"{_until(cur, now)}")


def finish(site: Site, task: str, by: str, op: str, revision: str, ttl: int, *,
           known: Callable[[Lease], bool]) -> tuple[Lease | None, Lease | None, str | None]:
    """End ``task``'s lease for ``op``: ``release`` deletes it; the other lifecycle ends
    (:data:`END_OPS`) leave an end marker (kept :data:`ENDED_KEEP`). Allowed over ``by``'s
    own lease, no lease, or an end marker this clone knows or that ran out; refused (exit 6)
    over someone else's lease, even expired (as a local claim: take it over first), or an
    end this clone has not pulled. Returns (what was
    written, what it replaced, the replaced commit) for :func:`restore`. An unreachable or
    refusing remote: exit 69."""
    tail = "nothing written"
    seen = _Remote(site, task)
    for _ in range(ATTEMPTS):
        now = time.time()
        cur = seen.current
        refusal: str | None = None
        if seen.unreadable:
            refusal = (f"{task}: the lease ref {_where(site)} holds a record this ledgit "
                       f"cannot read (see: ledgit lease list)")
        elif cur is None and op == "release":
            if seen.fresh:
                return None, None, None
        elif cur is None or (cur.state == "held" and cur.by == by):
            pass
        elif cur.state == "held":
            refusal = lost_message(site, task, by, cur, now)
            if not cur.live(now) and cur.took_over_from != by:
                refusal += "; take it over first: claim --take-over"
        elif not (known(cur) or now > cur.expires_at()):
            refusal = f"{task}: {cur.how()} {_where(site)} (pull to see it)"
        if refusal is not None or (cur is None and op == "release"):
            if not seen.fresh:
                seen.refresh(tail)
                continue
            raise LedgitError(f"{refusal}; {tail}", CLAIM)
        if op == "release":
            new = None
        else:
            moment = stamp(now)
            new = Lease(task, "ended", by, moment, moment, stamp(now + ENDED_KEEP),
                        ENDED_KEEP, revision, op=op, nonce=os.urandom(6).hex())
        before, before_oid = cur, seen.oid
        written = seen.push(new, tail)
        if written is not False:
            return (written if isinstance(written, Lease) else None), before, before_oid
    raise LedgitError(f"{task}: the lease {_where(site)} kept changing under "
                      f"{ATTEMPTS} attempts; try again", BUSY)


def restore(site: Site, task: str, written: Lease | None, before_oid: str | None) -> None:
    """Undo a lease write whose local write then failed: put ``before_oid`` back (None:
    delete) by CAS on what was written. Best effort: a failure leaves a lease that runs
    out by itself."""
    current = written.oid if written is not None else None
    outcome = gitleases.push_lease(site.cwd, site.remote, task, before_oid, current)
    if outcome.ok:
        gitleases.set_mirror(site.cwd, site.remote, task, before_oid)


# --------------------------------------------------------------------------- reading


def remote_leases(site: Site, *, window: float = CACHE_WINDOW,
                  warn: Callable[[str], None] | None = None) -> dict[str, Lease]:
    """Every lease on ``site``'s remote (task -> lease; unreadable records left out): from
    this clone's mirror, refreshed by one fetch when the last one of this worktree is older
    than ``window`` seconds (0: always). An unreachable remote leaves the mirror as it was
    and ``warn`` is called with one line saying so."""
    path = _stamp_path(site)
    try:
        age = time.time() - os.stat(path).st_mtime
    except OSError:
        age = float("inf")
    if age > window or window <= 0:
        problem = gitleases.fetch_leases(site.cwd, site.remote)
        if problem is None:
            _touch(site)
        elif warn is not None:
            last = "never" if age == float("inf") else f"{format_duration(age)} ago"
            warn(f"ledgit: warning: leases on {site.remote} not refreshed ({problem}); "
                 f"shown as last seen ({last})")
    found: dict[str, Lease] = {}
    for task, entry in gitleases.read_mirror(site.cwd, site.remote).items():
        lease = parse(task, entry.oid, entry.message)
        if lease is not None:
            found[task] = lease
    return found


def warn_stderr(line: str) -> None:
    """Write one warning line on stderr (the ``warn`` of :func:`remote_leases`)."""
    sys.stderr.write(line + "\n")


def blocks_ready(lease: Lease, row: Mapping[str, Any], now: float) -> bool:
    """Whether ``lease`` keeps the task of index ``row`` off ``ready``: a live lease, or an end
    marker newer than the row's last change (an end this clone has not pulled)."""
    if lease.state == "held":
        return lease.live(now)
    if not lease.live(now):
        return False
    last = row.get("last_modified")
    return not isinstance(last, str) or epoch_seconds(last) < epoch_seconds(lease.at)


def expired(leases: Iterable[Lease], now: float) -> list[Lease]:
    """The leases that ran out (end markers included) at ``now``, by task id."""
    return sorted((x for x in leases if not x.live(now)), key=lambda x: x.task)


def prune(site: Site) -> tuple[list[str], list[str]]:
    """Delete every expired lease on ``site``'s remote, each by CAS on its expired value (one
    fetch, one push). Returns (tasks pruned, tasks whose lease moved meanwhile and was kept).
    Raises exit 69 when the remote cannot be reached."""
    problem = gitleases.fetch_leases(site.cwd, site.remote)
    if problem is not None:
        raise LedgitError(f"lease remote {site.remote}: cannot read leases: {problem}", REMOTE)
    _touch(site)
    now = time.time()
    leases = remote_leases(site, window=float("inf"))
    old = {x.task: x.oid for x in expired(leases.values(), now)}
    outcomes = gitleases.push_deletes(site.cwd, site.remote, old)
    done, kept = [], []
    for task, outcome in outcomes.items():
        if outcome.ok:
            gitleases.set_mirror(site.cwd, site.remote, task, None)
            done.append(task)
        elif not outcome.reached:
            raise LedgitError(f"lease remote {site.remote}: unreachable ({outcome.detail})",
                              REMOTE)
        else:
            kept.append(task)
    return done, kept


def confirmation(site: Site, task: str, by: str, now: float) -> dict[str, Any]:
    """Whether the remote lease confirms ``by``'s claim on ``task``, as this clone last saw
    the remote (its mirror; no network): ``{remote, state: confirmed|unconfirmed, expires,
    reason}``. Unconfirmed: a claim made ``--offline``, or one whose lease ran out or was
    taken (``ledgit heartbeat`` takes or renews it, or says who holds it)."""
    entry = gitleases.read_mirror(site.cwd, site.remote).get(task)
    lease = None if entry is None else parse(task, entry.oid, entry.message)
    if lease is not None and lease.state == "held" and lease.by == by and lease.live(now):
        return {"remote": site.remote, "state": "confirmed", "expires": lease.expires,
                "reason": f"lease on {site.remote} until {lease.expires}"}
    if lease is None:
        why = f"no lease on {site.remote} as last seen"
    elif lease.state == "held" and lease.by == by:
        why = f"the lease on {site.remote} ran out at {lease.expires}"
    else:
        why = f"{lease.how()} on {site.remote} as last seen"
    return {"remote": site.remote, "state": "unconfirmed", "expires": None,
            "reason": f"{why} (ledgit heartbeat {task} takes the lease or says who holds it)"}


def doctor_lines(board: Board) -> list[str]:
    """``ledgit doctor``'s lines on the board's remote leases: one ``lease:`` line per lease
    that ran out (``ledgit lease prune`` removes them), one per live lease this clone holds
    that no claim here guards (:func:`unguarded`, with the command that ends it), and one
    when the remote could not be read; none for a board without leases. At most one fetch
    (:func:`remote_leases`)."""
    site = site_of(board)
    if site is None:
        return []
    lines: list[str] = []
    found = remote_leases(site, warn=lambda line: lines.append(
        "lease: " + line.removeprefix("ledgit: warning: ")))
    now = time.time()
    for lease in expired(found.values(), now):
        lines.append(f"lease: {lease.task} on {site.remote}: {lease.how()}, ran out at "
                     f"{lease.expires} (ledgit lease prune removes it)")
    for lease in unguarded(board, found, now):
        lines.append(f"lease: {lease.task} on {site.remote}: {lease.how()}, until "
                     f"{lease.expires}, and no claim guards it here (a rewrite, reset or "
                     f"checkout dropped it): {end_command(lease)} ends it")
    return lines


def board_leases(board: Board) -> dict[str, Lease] | None:
    """The leases on ``board``'s remote (task -> lease; at most one fetch, none within
    :data:`CACHE_WINDOW` of the last), None when the board keeps no remote leases. An
    unreachable remote: one warning line, the leases as last seen."""
    site = site_of(board)
    return None if site is None else remote_leases(site, warn=warn_stderr)


def unleased(rows: list[dict[str, Any]], leases: Mapping[str, Lease]) -> list[dict[str, Any]]:
    """Index ``rows`` without the tasks a remote lease keeps off ``ready``
    (:func:`blocks_ready`)."""
    now = time.time()
    return [r for r in rows if r["id"] not in leases or not blocks_ready(leases[r["id"]], r,
                                                                          now)]


def add_leases(views: list[dict[str, Any]], leases: Mapping[str, Lease] | None,
               now: float) -> None:
    """Give each row view its remote ``lease`` ({state, by, at, expires, live, op,
    took_over_from}, or None) when the board keeps leases (``leases`` not None)."""
    if leases is None:
        return
    for view in views:
        lease = leases.get(view["id"])
        view["lease"] = lease_view(lease, now) if lease is not None else None


# --------------------------------------------------------------------------- whose leases


def _held_by(lease: Lease | None, by: str) -> bool:
    return lease is not None and lease.state == "held" and lease.by == by


def holds(site: Site, task: str, by: str) -> bool:
    """Whether ``by`` holds ``task``'s lease on ``site``'s remote (held, live or run out):
    the mirror first, then one fetch when it says no. Raises exit 69 when the remote cannot
    be read."""
    seen = _Remote(site, task)
    if not _held_by(seen.current, by):
        seen.refresh("nothing written")
    return _held_by(seen.current, by)


def end_command(lease: Lease) -> str:
    """The command that ends ``lease`` from this clone: ``ledgit release T --by HOLDER``."""
    return f"ledgit release {lease.task} --by {shlex.quote(lease.by)}"


def mine(board: Board, found: Iterable[Lease]) -> list[Lease]:
    """The leases of ``found`` this clone took, in their order: the record names this clone
    (:func:`ledgit.storage.cloneid.clone_id`), or, for a record written before clones were
    named, its holder is this worktree's actor (:func:`ledgit.storage.actor.actor_name`)."""
    clone = clone_id(board.git_dir_str, create=False)
    actor: str | None = None
    out = []
    for lease in found:
        if lease.clone:
            if lease.clone == clone:
                out.append(lease)
            continue
        if actor is None:
            try:
                actor = actor_name(None, board.root_str)
            except LedgitError:
                actor = ""
        if lease.by == actor:
            out.append(lease)
    return out


def unguarded(board: Board, found: Mapping[str, Lease], now: float, *,
              claims: Mapping[str, str | None] | None = None) -> list[Lease]:
    """The live held leases of ``found`` (task -> lease) that this clone took (:func:`mine`)
    and no claim here guards, by task id: the task here holds no claim of the lease's
    holder -- its file is gone, or holds no claim or someone else's (a rewrite, a reset or a
    checkout dropped it). ``claims`` (task -> the
    claimant there, None for none) stands for the task files where given (the state a ref
    moved to, say); a task file that cannot be read is left out (nothing is guessed)."""
    out = []
    for lease in mine(board, [x for _, x in sorted(found.items())]):
        task = lease.task
        if lease.state != "held" or not lease.live(now):
            continue
        if claims is not None and task in claims:
            holder = claims[task]
        else:
            try:
                holder = _claimant(board, task)
            except LedgitError:
                continue
        if holder != lease.by:
            out.append(lease)
    return out


def _claimant(board: Board, task: str) -> str | None:
    """Who holds the claim of ``task`` in ``board``'s work tree (None: nobody, or no task
    file). Raises LedgitError when the file cannot be read."""
    if not board.exists(task):
        return None
    claim = board.read(task).fields.get("claim")
    return str(claim["by"]) if claim else None


def held_leases_note(board: Board, task_ids: Iterable[str],
                     claims: Mapping[str, str | None] | None = None) -> list[str]:
    """The lines that tell, after a move that dropped claims (a rewrite, a reset, a
    checkout), which of ``task_ids`` still hold a lease of this clone on the remote that no
    claim here guards, each with the command that ends it (docs/leases.md): ``T: alice's
    lease on origin is still held (until E); no claim guards it here: ledgit release T --by
    alice ends it (ledgit claim T --by alice takes the claim again)``. One sentence per
    line, no prefix and no newline: the caller prints each after its own prefix.

    ``claims``: as for :func:`unguarded` (default: the task files in the work tree). Asks
    no network: the leases as this clone last saw them (its mirror, which every lease write
    of this clone updates); one ``git remote`` and one ``git for-each-ref``, none when
    ``task_ids`` is empty or the board keeps no leases. Never raises for a lease it cannot
    read (left out)."""
    wanted = set(task_ids)
    if not wanted:
        return []
    site = site_of(board)
    if site is None:
        return []
    found: dict[str, Lease] = {}
    for task, entry in gitleases.read_mirror(site.cwd, site.remote).items():
        lease = parse(task, entry.oid, entry.message) if task in wanted else None
        if lease is not None:
            found[task] = lease
    return [f"{x.task}: {x.by}'s lease on {site.remote} is still held (until {x.expires}); "
            f"no claim guards it here: {end_command(x)} ends it (ledgit claim {x.task} "
            f"--by {shlex.quote(x.by)} takes the claim again)"
            for x in unguarded(board, found, time.time(), claims=claims)]


def held_leases_after_move(top: str, tasks: Iterable[tuple[str, str]]) -> list[str]:
    """:func:`held_leases_note` for ``tasks`` (``(board prefix, task id)`` pairs) of the
    boards of the work tree at ``top`` whose events left a branch (the ref guard's note
    after a rewrite that stands, issue 36 item 2), board by board; the claims as the work
    tree holds them."""
    by_board: dict[str, list[str]] = {}
    for prefix, task in tasks:
        by_board.setdefault(prefix, []).append(task)
    lines: list[str] = []
    for prefix, ids in sorted(by_board.items()):
        lines += held_leases_note(Board(os.path.join(top, prefix)), ids)
    return lines
