"""The record of one remote lease (DESIGN §4 "Remote leases", docs/leases.md): its fields,
the commit message that holds it on the remote, and what a clone reads from it. No I/O:
:mod:`ledgit.operations.leases` writes and reads the refs.

The record (the lease commit's message: a subject line, a blank line, canonical JSON)::

    {"v": 1, "task", "state": "held"|"ended", "by", "at", "renewed", "expires", "ttl",
     "revision", "op"?, "took_over_from"?, "clone"?, "nonce"}

``held``: ``by`` holds the task since ``at``, last renewed at ``renewed``, until ``expires``
(``renewed + ttl``, by the writer's clock). ``ended``: ``by`` ended the task with ``op``
(complete, drop, park, archive, wait, monitor) at ``at``; ``revision`` is the task's revision
*before* that event, so a clone knows the end once its history holds an event from that
revision with that op and actor (:func:`end_known`). An end marker keeps a clone that has not
pulled from claiming the task again; it runs out after :data:`ENDED_KEEP`. ``clone``: the
id of the clone that wrote the record (:func:`ledgit.storage.cloneid.clone_id`), so that a
clone knows the leases it holds (``lease list --mine``, ``doctor``); records written before
it have none, and a reader that does not know it ignores it.
"""

from __future__ import annotations

import json
import time
from typing import Any, NamedTuple

from ledgit.core.readout import epoch_seconds

VERSION = 1
ENDED_KEEP = 86400  # seconds an end marker stays on the remote (then it may be pruned)
MAX_SKEW = 30  # seconds: the most a takeover waits past `expires`
# Ops that end a claim on the remote with an end marker, and how the loser is told.
END_OPS = {"complete": "completed", "drop": "dropped", "park": "parked",
           "archive": "archived", "wait": "put on wait", "monitor": "put on monitoring"}
LEASE_OPS = ("claim", "heartbeat", "release", *END_OPS)


class Lease(NamedTuple):
    """One lease record (see the module doc); ``oid``: the commit holding it on the remote
    ("" before it is pushed)."""

    task: str
    state: str
    by: str
    at: str
    renewed: str
    expires: str
    ttl: int
    revision: str
    op: str = ""
    took_over_from: str = ""
    nonce: str = ""
    oid: str = ""
    clone: str = ""

    def expires_at(self) -> float:
        """``expires`` in epoch seconds."""
        return epoch_seconds(self.expires)

    def live(self, now: float) -> bool:
        """Whether the lease has not run out at ``now`` (epoch seconds, the reader's clock)."""
        return now <= self.expires_at()

    def how(self) -> str:
        """``completed by bob at T`` for an end marker, ``leased by bob since T`` else."""
        if self.state == "ended":
            return f"{END_OPS.get(self.op, self.op)} by {self.by} at {self.at}"
        return f"leased by {self.by} since {self.at}"


def stamp(epoch: float) -> str:
    """RFC 3339 UTC with microseconds (ledgit's canonical form) of ``epoch`` seconds."""
    seconds, micro = divmod(int(round(epoch * 1_000_000)), 1_000_000)
    t = time.gmtime(seconds)
    return (f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}T{t.tm_hour:02d}:{t.tm_min:02d}:"
            f"{t.tm_sec:02d}.{micro:06d}Z")


def skew_allowance(ttl: int) -> float:
    """Seconds a takeover waits past a lease's ``expires``: a tenth of ``ttl``, at most
    :data:`MAX_SKEW` (the clock-skew bound between agents, docs/leases.md)."""
    return min(MAX_SKEW, ttl / 10)


# --------------------------------------------------------------------------- the record


def render(lease: Lease) -> str:
    """The commit message of ``lease``: a subject for ``git log``, then canonical JSON."""
    data: dict[str, Any] = {"v": VERSION, "task": lease.task, "state": lease.state,
                            "by": lease.by, "at": lease.at, "renewed": lease.renewed,
                            "expires": lease.expires, "ttl": lease.ttl,
                            "revision": lease.revision, "nonce": lease.nonce}
    if lease.op:
        data["op"] = lease.op
    if lease.took_over_from:
        data["took_over_from"] = lease.took_over_from
    if lease.clone:
        data["clone"] = lease.clone
    body = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    subject = (f"ledgit lease {lease.task}: {lease.how()}").replace("\n", " ")
    return f"{subject}\n\n{body}\n"


def parse(task: str, oid: str, message: str) -> Lease | None:
    """The lease in a lease commit's ``message``; None when it is not one this version
    reads (another tool's ref, a damaged or newer record)."""
    for line in reversed(message.splitlines()):
        if line.startswith("{"):
            try:
                data = json.loads(line)
            except ValueError:
                return None
            break
    else:
        return None
    try:
        if data["v"] != VERSION or data["task"] != task or data["state"] not in ("held",
                                                                                 "ended"):
            return None
        lease = Lease(task, data["state"], str(data["by"]), str(data["at"]),
                      str(data["renewed"]), str(data["expires"]), int(data["ttl"]),
                      str(data["revision"]), str(data.get("op", "")),
                      str(data.get("took_over_from", "")), str(data.get("nonce", "")), oid,
                      str(data.get("clone", "")))
        lease.expires_at()
    except (KeyError, TypeError, ValueError):
        return None
    return lease


def end_known(lease: Lease, history_text: str | None) -> bool:
    """Whether the task's local history (JSON lines) holds the end an ``ended`` lease
    records: an event by ``lease.by`` with op ``lease.op`` from revision ``lease.revision``."""
    if not history_text or lease.revision not in history_text:
        return False
    for line in history_text.splitlines():
        if lease.revision in line:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if (event.get("before") == lease.revision and event.get("op") == lease.op
                    and event.get("actor") == lease.by):
                return True
    return False


def lease_view(lease: Lease, now: float) -> dict[str, Any]:
    """A lease in the JSON shape of list/ready rows and ``lease list`` (docs/leases.md):
    ``{state, by, at, expires, live, op, took_over_from}``."""
    return {"state": lease.state, "by": lease.by, "at": lease.at, "expires": lease.expires,
            "live": lease.live(now), "op": lease.op or None,
            "took_over_from": lease.took_over_from or None}
