"""The board page's plots as inline SVG text, drawn here (no JavaScript library): tasks
opened vs done per day, and claims per agent over time (cumulative), from the histories. A
board younger than :data:`HOURLY_DAYS` days is drawn by the hour (issue 28: a one-day board's
plots collapsed onto the y-axis), with an empty bin before and after, so a lone point sits
inside the frame; each series is drawn a few pixels beside the others and marked at every
bin, so two agents with the same counts show two lines and two dots, not one.

Every text in an SVG (agent names, dates) is escaped with :func:`markupsafe.escape`; the
result is safe to put in the page as markup.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Sequence
from datetime import date, datetime, timedelta

from markupsafe import escape

WIDTH, HEIGHT = 640, 220
LEFT, RIGHT, TOP, BOTTOM = 44, 150, 14, 34
PALETTE = ("#2563eb", "#16a34a", "#dc2626", "#9333ea", "#ea580c", "#0891b2", "#ca8a04",
           "#db2777", "#4b5563")
MAX_AGENTS = 8  # more agents than this: the rest are drawn as one "others" line
#: A legend label longer than this (characters) would run past the SVG's edge: it is shown
#: as its last characters (the count stays readable) after "…", in full on hover (<title>).
LEGEND_CHARS = 22
HOURLY_DAYS = 3  # a span of fewer days than this is drawn by the hour
DODGE = 4.0  # pixels between series drawn side by side (same values stay apart)
MAX_MARKED = 96  # bins up to which every point gets a dot


def _hour(stamp: str) -> datetime | None:
    """The UTC hour of an RFC 3339 stamp (``YYYY-MM-DDTHH``), None when it has none."""
    return _hour_of(stamp[:13])


@functools.lru_cache(maxsize=4096)
def _hour_of(text: str) -> datetime | None:
    try:
        return datetime.strptime(text, "%Y-%m-%dT%H")
    except ValueError:
        return None


def _day(stamp: str) -> date | None:
    """The UTC date of an RFC 3339 stamp, None when it has none."""
    return _date_of(stamp[:10])


@functools.lru_cache(maxsize=4096)
def _date_of(text: str) -> date | None:
    """A board has a few hundred distinct days among tens of thousands of stamps."""
    try:
        return date.fromisoformat(text)
    except ValueError:
        return None


Bin = date | datetime


class Bins:
    """The x axis of a plot: consecutive days, or hours for a board younger than
    :data:`HOURLY_DAYS` days (then one empty hour before the first stamp and after the
    last). ``of(stamp)``: the bin of an RFC 3339 stamp, None when it has no date."""

    def __init__(self, stamps: Sequence[str]) -> None:
        days = sorted({d for d in map(_day, stamps) if d})
        self.hourly = bool(days) and (days[-1] - days[0]).days < HOURLY_DAYS
        self.bins: list[Bin] = []
        if self.hourly:
            hours = sorted({h for h in map(_hour, stamps) if h})
            if hours:
                step = timedelta(hours=1)
                first, last = hours[0] - step, hours[-1] + step
                self.bins = [first + step * i for i in range(int((last - first) / step) + 1)]
        elif days:
            self.bins = list(_days(days[0], days[-1]))

    def of(self, stamp: str) -> Bin | None:
        return _hour(stamp) if self.hourly else _day(stamp)

    def label(self, b: Bin) -> str:
        return b.strftime("%Y-%m-%d %H:00 UTC") if isinstance(b, datetime) else b.isoformat()

    @property
    def unit(self) -> str:
        return "hour" if self.hourly else "day"


def _days(first: date, last: date) -> list[date]:
    return [first + timedelta(days=i) for i in range((last - first).days + 1)]


def _frame(title: str, bins: Bins, top: int, series: Sequence[tuple[str, str,
           Sequence[int]]]) -> str:
    """An SVG line chart: x = the ``bins``, y from 0 to ``top``, one polyline per series
    (label, colour, values per bin) drawn :data:`DODGE` px beside the others and dotted at
    every bin (up to :data:`MAX_MARKED`), a legend on the right."""
    days = bins.bins
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    n = max(len(days) - 1, 1)
    top = max(top, 1)

    def x(i: int) -> float:
        return LEFT + plot_w * i / n

    def y(v: int) -> float:
        return TOP + plot_h * (1 - v / top)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" '
             f'role="img" class="plot" data-unit="{bins.unit}"><title>{escape(title)}'
             f'</title>',
             f'<line x1="{LEFT}" y1="{TOP + plot_h}" x2="{LEFT + plot_w}" y2="{TOP + plot_h}" '
             f'class="axis"/>',
             f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + plot_h}" class="axis"/>',
             f'<text x="{LEFT - 4}" y="{TOP + 4}" text-anchor="end">{top}</text>',
             f'<text x="{LEFT - 4}" y="{TOP + plot_h}" text-anchor="end">0</text>']
    if days:
        parts.append(f'<text x="{LEFT}" y="{HEIGHT - 12}">{escape(bins.label(days[0]))}</text>')
    if len(days) > 1:  # one bin: its label once, not at both ends of the axis
        parts.append(f'<text x="{LEFT + plot_w}" y="{HEIGHT - 12}" text-anchor="end">'
                     f'{escape(bins.label(days[-1]))}</text>')
    if len(days) > 2:  # and the middle one, with a tick
        mid = len(days) // 2
        parts.append(f'<line x1="{x(mid):.1f}" y1="{TOP + plot_h}" x2="{x(mid):.1f}" '
                     f'y2="{TOP + plot_h + 4}" class="axis"/><text x="{x(mid):.1f}" '
                     f'y="{HEIGHT - 12}" text-anchor="middle">'
                     f'{escape(bins.label(days[mid]))}</text>')
    middle = (len(series) - 1) / 2
    for k, (label, colour, values) in enumerate(series):
        dx = (k - middle) * DODGE
        xy = [(x(i) + dx, y(v)) for i, v in enumerate(values)]
        if len(xy) > 1:
            points = " ".join(f"{px:.1f},{py:.1f}" for px, py in xy)
            parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" '
                         f'points="{points}"/>')
        if len(xy) <= MAX_MARKED:
            parts.extend(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="2.5" fill="{colour}">'
                         f'<title>{escape(label.rsplit(" (", 1)[0])}: {v} '
                         f'({escape(bins.label(days[i]))})</title></circle>'
                         for i, ((px, py), v) in enumerate(zip(xy, values, strict=True)))
        ly = TOP + 14 * k + 8
        shown = label if len(label) <= LEGEND_CHARS else "…" + label[-(LEGEND_CHARS - 1):]
        parts.append(f'<rect x="{WIDTH - RIGHT + 10}" y="{ly - 8}" width="10" height="10" '
                     f'fill="{colour}"/><text x="{WIDTH - RIGHT + 24}" y="{ly + 1}" '
                     f'class="legend"><title>{escape(label)}</title>{escape(shown)}</text>')
    if not days:
        parts.append(f'<text x="{LEFT + 10}" y="{TOP + plot_h / 2}">no data yet</text>')
    parts.append("</svg>")
    return "".join(parts)


def opened_done_plot(opened: Sequence[str], done: Sequence[str]) -> str:
    """Tasks opened and tasks done per day -- per hour on a board younger than
    :data:`HOURLY_DAYS` days -- (UTC, from the RFC 3339 stamps given)."""
    bins = Bins([*opened, *done])
    o = Counter(b for b in map(bins.of, opened) if b)
    c = Counter(b for b in map(bins.of, done) if b)
    series = [(f"opened ({sum(o.values())})", PALETTE[0], [o.get(d, 0) for d in bins.bins]),
              (f"done ({sum(c.values())})", PALETTE[1], [c.get(d, 0) for d in bins.bins])]
    top = max([*o.values(), *c.values(), 1])
    return _frame(f"Tasks opened vs done per {bins.unit}", bins, top, series)


def claims_plot(claims: Sequence[tuple[str, str]]) -> str:
    """Claims per agent over time, cumulative, from (agent, RFC 3339 stamp) pairs; the
    :data:`MAX_AGENTS` agents with the most claims each get a line, the rest one "others"."""
    per_agent = Counter(a for a, _ in claims)
    top_agents = [a for a, _ in sorted(per_agent.items(), key=lambda kv: (-kv[1], kv[0]))
                  [:MAX_AGENTS]]
    named = set(top_agents)
    bins = Bins([s for _, s in claims])
    stamps = [(a if a in named else "others", d) for a, s in claims if (d := bins.of(s))]
    series = []
    top = 1
    agents = top_agents + (["others"] if len(per_agent) > MAX_AGENTS else [])
    daily = Counter(stamps)  # (agent, bin) -> claims
    for k, agent in enumerate(agents):
        total, values = 0, []
        for d in bins.bins:
            total += daily.get((agent, d), 0)
            values.append(total)
        top = max(top, total)
        series.append((f"{agent} ({total})", PALETTE[k % len(PALETTE)], values))
    return _frame("Claims per agent over time (cumulative)", bins, top, series)
