"""How often the verdict rule finds a difference where there is none, and how often it finds the effect it
says it can detect, at the notebooks' default sizes.

Every verdict of the notebooks is ``clkit.stats.paired`` (the paired t-test, its spread floored at the
metric's resolution), Holm-adjusted over its family. This script draws paired differences from null
distributions with mean 0 -- normal, heavy-tailed (t, 3 df), skewed (centred exponential, centred
lognormal) and two-valued (a metric that moves in steps) -- at each notebook's default number of pairs
and family size (``clkit.stats.DEFAULT_DESIGNS``, read from ``notebooks/params/*/default.yaml``; a test
fails when they drift apart), and counts the runs in which the rule reports at least one finding (the
family-wise false-positive rate; nominal: at most 0.05). A second table plants, in one row of each
family, an effect of exactly the detectable size the rule prints (at ``alpha / m``) and counts how often
the rule finds it (promised: 80 %)::

    python benchmarks/stats_false_positives.py                       # prints the tables
    python benchmarks/stats_false_positives.py --markdown docs/generated/stats-false-positives.md

The rule is applied vectorised (``stats.paired_p``, ``stats.holm_adjust``: the functions ``paired`` and
``holm`` call); at least one finding in a Holm family is exactly ``min p_adjusted < alpha``.
``tests/test_stats_simulation.py`` checks the same rates on fewer draws, and that the vectorised rule
equals ``paired`` + ``holm`` draw by draw.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ALPHA = 0.05
#: null distributions of the paired differences, each with mean 0, and the resolution passed to the rule
#: (None: the rule's default floor)
KINDS = {
    "normal": (lambda rng, size: rng.normal(size=size), None),
    "heavy-tailed (t3)": (lambda rng, size: rng.standard_t(3, size=size), None),
    "skewed (exp − 1)": (lambda rng, size: rng.exponential(size=size) - 1.0, None),
    "skewed (lognormal − e^½)": (lambda rng, size: rng.lognormal(0.0, 1.0, size=size) - np.exp(0.5), None),
    "two-valued ±1, default floor": (lambda rng, size: rng.choice([-1.0, 1.0], size=size), None),
    "two-valued ±1, resolution 1": (lambda rng, size: rng.choice([-1.0, 1.0], size=size), 1.0),
}
CHUNK = 20_000


def designs() -> dict:
    """``{column label: (n, m)}`` of the notebooks' default designs."""
    from clkit import stats

    return {f"{nb[:2]} {fam} (n = {n}, m = {m})": (n, m) for (nb, fam), (n, m, _) in stats.DEFAULT_DESIGNS.items()}


def _chunks(reps: int):
    while reps > 0:
        yield min(reps, CHUNK)
        reps -= CHUNK


def _floor(d: np.ndarray, resolution) -> np.ndarray:
    """The rule's floor per family row: ``resolution``, or its default (1e-6 of the largest |d|)."""
    from clkit import stats

    if resolution is not None:
        return resolution
    return stats.DEFAULT_RELATIVE_RESOLUTION * np.abs(d).max(axis=-1)


def false_positive_rate(kind: str, n: int, m: int, reps: int, seed: int = 0) -> float:
    """Share of ``reps`` runs with at least one finding among ``m`` independent null comparisons of
    ``n`` pairs each, decided by the rule (paired t with its floor, Holm over the ``m``)."""
    from clkit import stats

    rng = np.random.default_rng([seed, n, m, sorted(KINDS).index(kind)])
    draw, resolution = KINDS[kind]
    hits = 0
    for size in _chunks(reps):
        d = draw(rng, (size, m, n))
        p = stats.paired_p(d, _floor(d, resolution))
        hits += int(np.sum((stats.holm_adjust(p) < ALPHA).any(axis=1)))
    return hits / reps


def power_at_printed(n: int, m: int, reps: int, seed: int = 0) -> float:
    """Share of ``reps`` runs in which the rule finds a row whose true effect is the detectable effect it
    prints (``min_detectable_effect`` at ``alpha / m``), the family's other ``m - 1`` rows null (normal)."""
    from clkit import stats

    rng = np.random.default_rng([seed, n, m, 99])
    shift = stats.min_detectable_effect(n, 1.0, ALPHA / m)
    hits = 0
    for size in _chunks(reps):
        d = rng.normal(size=(size, m, n))
        d[:, 0, :] += shift
        hits += int(np.sum(stats.holm_adjust(stats.paired_p(d, 1e-12))[:, 0] < ALPHA))
    return hits / reps


def table(reps: int, seed: int = 0) -> list[dict]:
    """One row per default design (n pairs, Holm over m), one column per null distribution."""
    out = []
    for label, (n, m) in designs().items():
        row = {"design (pairs n, family m)": label}
        for kind in KINDS:
            row[kind] = false_positive_rate(kind, n, m, reps, seed)
        out.append(row)
    return out


def power_table(reps: int, seed: int = 0) -> list[dict]:
    from clkit import stats

    rows = []
    for label, (n, m) in designs().items():
        rows.append({"design": label, "printed detectable (sds)": stats.min_detectable_effect(n, 1.0, ALPHA / m),
                     "found by the rule": power_at_printed(n, m, reps, seed)})
    return rows


def _md(rows: list[dict], fmt: str = "{:.3f}") -> list[str]:
    cols = list(rows[0])
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        lines.append("| " + " | ".join(str(r[c]) if c == cols[0] else fmt.format(r[c]) for c in cols) + " |")
    return lines


def markdown(rows: list[dict], reps: int, power_rows: list[dict] | None = None) -> str:
    text = "\n".join(_md(rows))
    text += (f"\n\nShare of {reps:,} simulated runs with at least one finding where every difference has mean 0 "
             "(nominal 0.05; `python benchmarks/stats_false_positives.py`), at each notebook's default design.\n")
    if power_rows:
        text += "\n" + "\n".join(_md(power_rows)) + (
            f"\n\nShare of {reps:,} simulated runs in which the rule (Holm over the family) finds a row whose true "
            "effect is exactly the detectable effect it prints (at α/m; the other rows null; promised: 0.80).\n")
    return text


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=100_000, help="simulated runs per cell (default 100,000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--markdown", help="write the tables to this Markdown file")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    text = markdown(table(args.reps, args.seed), args.reps, power_table(args.reps, args.seed))
    print(text)
    print(f"({time.perf_counter() - t0:.0f} s)")
    if args.markdown:
        from clkit._io import atomic_write_text

        atomic_write_text(Path(args.markdown), text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
