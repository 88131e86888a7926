"""click parameter types whose messages say what is wrong in the user's words (issue 28):
``--priority high`` is "not a whole number; --priority takes 0 (most urgent) to 4", not
click's "not a valid integer range"."""

from __future__ import annotations

from typing import Any

import click


class WholeNumber(click.IntRange):
    """click's IntRange, with a message naming the option and what it takes: ``takes``, the
    option's own words for its range (``0 (most urgent) to 4``)."""

    def __init__(self, low: int | None, high: int | None, takes: str) -> None:
        super().__init__(low, high)
        self.takes = takes

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        name = param.opts[0] if param is not None and param.opts else "the value"
        if isinstance(value, int):
            number = value
        else:
            try:
                number = int(str(value).strip())
            except ValueError:
                self.fail(f"{value!r} is not a whole number; {name} takes {self.takes}",
                          param, ctx)
        low, high = self.min, self.max
        if (low is not None and number < low) or (high is not None and number > high):
            self.fail(f"{number} is out of range; {name} takes {self.takes}", param, ctx)
        return number


def range_words(low: int | None, high: int | None, help_text: str) -> str:
    """How a range reads in a message: the option's help when it states the range (``0 (most
    urgent) to 4.``), else ``a whole number from LOW to HIGH`` / ``LOW or more``."""
    words = help_text.rstrip(".")
    if low is not None and high is not None and str(low) in words and str(high) in words:
        return words
    if high is None:
        return f"a whole number, {low} or more"
    if low is None:
        return f"a whole number, {high} or less"
    return f"a whole number from {low} to {high}"
