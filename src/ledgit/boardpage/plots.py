"""The board page's plots as inline SVG text, drawn here (no JavaScript library): tasks
opened vs done per day, and claims per agent over time (cumulative), from the histories.

Every text in an SVG (agent names, dates) is escaped with :func:`markupsafe.escape`; the
result is safe to put in the page as markup.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Sequence
from datetime import date, timedelta

from markupsafe import escape

WIDTH, HEIGHT = 640, 220
LEFT, RIGHT, TOP, BOTTOM = 44, 150, 14, 34
PALETTE = ("#2563eb", "#16a34a", "#dc2626", "#9333ea", "#ea580c", "#0891b2", "#ca8a04",
           "#db2777", "#4b5563")
MAX_AGENTS = 8  # more agents than this: the rest are drawn as one "others" line
#: A legend label longer than this (characters) would run past the SVG's edge: it is shown
#: as its last characters (the count stays readable) after "…", in full on hover (<title>).
LEGEND_CHARS = 22


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


def _days(first: date, last: date) -> list[date]:
    return [first + timedelta(days=i) for i in range((last - first).days + 1)]


def _frame(title: str, days: list[date], top: int, series: Sequence[tuple[str, str,
           Sequence[int]]]) -> str:
    """An SVG line chart: x = ``days``, y from 0 to ``top``, one polyline per series
    (label, colour, values per day), a legend on the right."""
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    n = max(len(days) - 1, 1)
    top = max(top, 1)

    def x(i: int) -> float:
        return LEFT + plot_w * i / n

    def y(v: int) -> float:
        return TOP + plot_h * (1 - v / top)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" '
             f'role="img" class="plot"><title>{escape(title)}</title>',
             f'<line x1="{LEFT}" y1="{TOP + plot_h}" x2="{LEFT + plot_w}" y2="{TOP + plot_h}" '
             f'class="axis"/>',
             f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + plot_h}" class="axis"/>',
             f'<text x="{LEFT - 4}" y="{TOP + 4}" text-anchor="end">{top}</text>',
             f'<text x="{LEFT - 4}" y="{TOP + plot_h}" text-anchor="end">0</text>']
    if days:
        parts.append(f'<text x="{LEFT}" y="{HEIGHT - 12}">{escape(days[0].isoformat())}</text>')
    if len(days) > 1:  # one day: its date once, not at both ends of the axis
        parts.append(f'<text x="{LEFT + plot_w}" y="{HEIGHT - 12}" text-anchor="end">'
                     f'{escape(days[-1].isoformat())}</text>')
    for k, (label, colour, values) in enumerate(series):
        points = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(values))
        if len(values) == 1:
            parts.append(f'<circle cx="{x(0):.1f}" cy="{y(values[0]):.1f}" r="3" '
                         f'fill="{colour}"/>')
        else:
            parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" '
                         f'points="{points}"/>')
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
    """Tasks opened and tasks done per day (UTC dates of the RFC 3339 stamps given)."""
    o = Counter(d for d in map(_day, opened) if d)
    c = Counter(d for d in map(_day, done) if d)
    every = sorted(set(o) | set(c))
    days = _days(every[0], every[-1]) if every else []
    series = [(f"opened ({sum(o.values())})", PALETTE[0], [o.get(d, 0) for d in days]),
              (f"done ({sum(c.values())})", PALETTE[1], [c.get(d, 0) for d in days])]
    top = max([*o.values(), *c.values(), 1])
    return _frame("Tasks opened vs done per day", days, top, series)


def claims_plot(claims: Sequence[tuple[str, str]]) -> str:
    """Claims per agent over time, cumulative, from (agent, RFC 3339 stamp) pairs; the
    :data:`MAX_AGENTS` agents with the most claims each get a line, the rest one "others"."""
    per_agent = Counter(a for a, _ in claims)
    top_agents = [a for a, _ in sorted(per_agent.items(), key=lambda kv: (-kv[1], kv[0]))
                  [:MAX_AGENTS]]
    named = set(top_agents)
    stamps = [(a if a in named else "others", d) for a, s in claims if (d := _day(s))]
    every = sorted({d for _, d in stamps})
    days = _days(every[0], every[-1]) if every else []
    series = []
    top = 1
    agents = top_agents + (["others"] if len(per_agent) > MAX_AGENTS else [])
    daily = Counter(stamps)  # (agent, day) -> claims
    for k, agent in enumerate(agents):
        total, values = 0, []
        for d in days:
            total += daily.get((agent, d), 0)
            values.append(total)
        top = max(top, total)
        series.append((f"{agent} ({total})", PALETTE[k % len(PALETTE)], values))
    return _frame("Claims per agent over time (cumulative)", days, top, series)
