"""How many Hypothesis examples a property test of tests/ draws.

Each test names its full count (``examples(400)``); the default run draws a quarter of it
(at least 25), which keeps the default run inside issue 14's test-time budget.
``LEDGIT_EXAMPLES_FACTOR`` scales the full counts instead: ``1`` draws them as written, ``10``
ten times as many; ``LEDGIT_EXAMPLES_FACTOR=1 pytest -m "stress or hypothesis"`` is the full
stress run plus every property test at its full count (Hypothesis marks ``@given`` tests
``hypothesis``). The stress suite's fuzzers (stress/test_fuzz.py) size their own runs by
``scale.pick``.
"""

from __future__ import annotations

import os

#: The share of each full count the default run draws.
DEFAULT_FACTOR = 0.25
#: The fewest examples a property test draws in any run.
FLOOR = 25


def examples(full: int) -> int:
    """``full`` times ``$LEDGIT_EXAMPLES_FACTOR`` (default 0.25), rounded, at least 25.

    Raises ValueError when the variable is not a number.
    """
    text = os.environ.get("LEDGIT_EXAMPLES_FACTOR", "")
    factor = float(text) if text else DEFAULT_FACTOR
    return max(FLOOR, round(full * factor))
