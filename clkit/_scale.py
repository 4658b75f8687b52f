"""One plausibility rule for percent versus fractions, for every command that takes ``--percent``.

Scores on the percent scale lie in [0, 100], fractions in [0, 1]. A value above 1 read as a fraction
is refused where it is read (with the hint to add ``--percent``); this module holds the other way:
values that are *all* at most 1 but declared percent are fractions (a real percent matrix or
baseline at or below 1 % in every cell is implausible), so ``--percent`` would divide them again
(issue 55: ``compare --percent`` on a 0-1 file printed "+0.0016" for +0.16, ``metrics cl --percent
--baseline 0.10,...`` read 0.10 % and gave FWT 0.112 instead of 0.013). ``clkit edge analyse`` applies
the same rule to its per-order accuracies.
"""

from __future__ import annotations

import numpy as np

__all__ = ["check_not_fractions"]


def check_not_fractions(values, *, where: str, flag: str = "--percent") -> None:
    """Refuse values declared percent that are all within [0, 1] (fractions), naming ``where``.

    Parameters
    ----------
    values : array_like
        The values as given (NaN ignored).
    where : str
        What they are, e.g. ``"'R.csv' (run ewc seed 0): field accuracy"`` or ``"--baseline"``.
    flag : str
        The option that declared them percent.

    Examples
    --------
    >>> check_not_fractions([[90.0, float("nan")], [60.0, 80.0]], where="R.csv")
    >>> check_not_fractions([0.9, 0.6, 0.8], where="--baseline")
    Traceback (most recent call last):
    ...
    ValueError: --baseline: every value is at most 1 (0.6 to 0.9) with --percent: these look like fractions (0-1); drop --percent or give percentages
    """
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size and v.min() >= 0 and v.max() <= 1.0:
        raise ValueError(f"{where}: every value is at most 1 ({v.min():g} to {v.max():g}) with {flag}: these look "
                         f"like fractions (0-1); drop {flag} or give percentages")
