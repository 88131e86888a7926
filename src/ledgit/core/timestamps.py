"""Timestamps of the record (DESIGN §3): RFC 3339 text, read in any offset, written in UTC
with microseconds (``2026-08-29T10:00:00.000000Z``). Pure.

Canonical text is checked without :mod:`datetime` (:func:`normalize_timestamp`): the records a
read or the merge driver meets hold nothing else, and datetime costs ~10 ms to import.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from datetime import datetime

TIMESTAMP_RE = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})")
_CANONICAL_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")


def _datetime() -> Any:
    """The :mod:`datetime` module, imported by the first timestamp that is not canonical."""
    import datetime  # lazy: 1.2 ms (-X importtime); canonical text needs none

    return datetime


def format_timestamp(moment: datetime) -> str:
    """RFC 3339 UTC with microseconds: ``2026-08-29T10:00:00.000000Z``."""
    m = moment.astimezone(_datetime().timezone.utc)
    # Not strftime: its %Y does not zero-pad years before 1000 on every platform.
    return (f"{m.year:04d}-{m.month:02d}-{m.day:02d}T{m.hour:02d}:{m.minute:02d}:"
            f"{m.second:02d}.{m.microsecond:06d}Z")


def parse_timestamp(text: str) -> datetime:
    """Parse RFC 3339 date-time text (any offset) into an aware UTC datetime.

    Digits beyond microseconds are dropped. Raises ValueError for anything else (a bare date
    included) or a date-time that does not exist or is out of range once in UTC.
    """
    m = TIMESTAMP_RE.fullmatch(text.strip())
    if not m:
        raise ValueError(f"expected an RFC 3339 UTC timestamp like "
                         f"2026-01-01T00:00:00.000000Z, got {text!r}")
    frac = (m.group(7) or ".0")[1:7].ljust(6, "0")
    tz = m.group(8)
    base = f"{m.group(1)}-{m.group(2)}-{m.group(3)}T{m.group(4)}:{m.group(5)}:{m.group(6)}"
    offset = "+00:00" if tz in ("Z", "z") else tz
    try:
        dt = _datetime()
        moment: datetime = dt.datetime.fromisoformat(f"{base}.{frac}{offset}")
        return moment.astimezone(dt.timezone.utc)
    except (ValueError, OverflowError) as exc:
        raise ValueError(f"invalid timestamp {text!r}: {exc}") from None


def normalize_timestamp(text: str) -> str:
    """Any RFC 3339 date-time → the canonical UTC µs form. Raises ValueError."""
    if _CANONICAL_TIMESTAMP.fullmatch(text) and _exists(text):
        return text  # already canonical and a real date and time
    return format_timestamp(parse_timestamp(text))


_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _exists(canonical: str) -> bool:
    """Whether a canonical timestamp names a real UTC date and time (what
    ``datetime.fromisoformat`` accepts), without importing datetime."""
    year, month, day = int(canonical[0:4]), int(canonical[5:7]), int(canonical[8:10])
    if not (year >= 1 and 1 <= month <= 12 and day >= 1):
        return False
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    if day > _DAYS[month - 1] + (1 if month == 2 and leap else 0):
        return False
    return (int(canonical[11:13]) <= 23 and int(canonical[14:16]) <= 59
            and int(canonical[17:19]) <= 59)
