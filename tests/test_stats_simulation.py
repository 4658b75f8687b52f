"""The verdict rule's false-positive rate under null differences, and the power of the detectable effect it
prints, at the notebooks' default designs (issue 53).

The rule holds its level for symmetric differences (normal, heavy-tailed) and for a two-valued metric judged
at its step; for skewed differences with mean 0 it does not at 6-8 pairs, and the guide states the measured
rates (docs/generated/stats-false-positives.md, written by benchmarks/stats_false_positives.py at the designs
read from the notebooks' default parameters). Fewer draws here than there: each rate within 0.02 of the bound
or of the documented value, plus three standard errors of this simulation.
"""

import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest

from clkit import stats

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("stats_fp", ROOT / "benchmarks" / "stats_false_positives.py")
sim = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sim)
REPS = 4000
DOC = ROOT / "docs" / "generated" / "stats-false-positives.md"


def _slack(rate, reps=REPS):
    return 0.02 + 3 * np.sqrt(max(rate, 0.05) * (1 - max(rate, 0.05)) / reps)


def _tables():
    """The documented tables: [{column: cell}] per Markdown table of the generated file."""
    out, cur = [], None
    for line in DOC.read_text().splitlines():
        if line.startswith("|---"):
            continue
        if line.startswith("| "):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if cur is None:
                cur = {"head": cells, "rows": []}
                out.append(cur)
            else:
                cur["rows"].append(dict(zip(cur["head"], cells)))
        else:
            cur = None
    return out


def test_the_vectorised_simulation_is_the_rule():
    """paired_p + holm_adjust (the simulation) decide as paired + holm, draw by draw."""
    rng = np.random.default_rng(0)
    for kind in ("normal", "skewed (exp − 1)", "two-valued ±1, resolution 1"):
        draw, res = sim.KINDS[kind]
        d = draw(rng, (40, 3, 7))
        fast = (stats.holm_adjust(stats.paired_p(d, sim._floor(d, res))) < 0.05).any(axis=1)
        slow = [any(v.significant for v in stats.holm([stats.paired(row, resolution=res) for row in fam]))
                for fam in d]
        assert fast.tolist() == slow, kind


def test_the_documented_designs_are_the_notebooks_defaults():
    """The generated table is computed at the designs read from notebooks/params/*/default.yaml: regenerate it
    (python benchmarks/stats_false_positives.py --markdown docs/generated/stats-false-positives.md) when they
    change."""
    fpr, pw = _tables()
    assert [r[fpr["head"][0]] for r in fpr["rows"]] == list(sim.designs())
    assert [r["design"] for r in pw["rows"]] == list(sim.designs())
    assert fpr["head"][1:] == list(sim.KINDS)
    assert re.search(r"Share of [\d,]+ simulated runs", DOC.read_text())


@pytest.mark.parametrize("label", list(sim.designs()))
def test_the_level_holds_for_symmetric_and_stepwise_nulls_at_every_default(label):
    n, m = sim.designs()[label]
    for kind in ("normal", "heavy-tailed (t3)", "two-valued ±1, resolution 1"):
        rate = sim.false_positive_rate(kind, n, m, REPS, seed=1)
        assert rate <= 0.05 + _slack(0.05), (label, kind, rate)


@pytest.mark.parametrize("label", list(sim.designs()))
def test_the_documented_rates_are_what_the_rule_does(label):
    """Every documented cell (skewed nulls included: stated inflation) is reproduced on other draws."""
    fpr, pw = _tables()
    n, m = sim.designs()[label]
    row = next(r for r in fpr["rows"] if r[fpr["head"][0]] == label)
    for kind in sim.KINDS:
        documented = float(row[kind])
        rate = sim.false_positive_rate(kind, n, m, REPS, seed=2)
        assert abs(rate - documented) <= _slack(documented), (label, kind, rate, documented)
        if kind.startswith("skewed"):
            assert documented > 0.1             # it is inflation, stated as such
    found = float(next(r for r in pw["rows"] if r["design"] == label)["found by the rule"])
    assert found >= 0.78 and abs(sim.power_at_printed(n, m, REPS, seed=3) - found) <= _slack(0.2)


def test_the_guide_states_the_smallest_constant_finding_of_each_design():
    text = (ROOT / "docs" / "statistics.md").read_text()
    for (nb, fam), (n, m, _) in stats.DEFAULT_DESIGNS.items():
        line = next(l for l in text.splitlines() if l.startswith(f"| {nb[:2]} {fam} |"))
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[1:4] == [str(n), str(m), f"{stats.smallest_constant(n, m):.2f} r"], line


@pytest.mark.paper_rehearsal
@pytest.mark.parametrize("label", list(sim.designs()))
def test_the_printed_detectable_is_found_80_percent_on_many_draws(label):
    n, m = sim.designs()[label]
    assert sim.power_at_printed(n, m, 100_000, seed=4) >= 0.795
