"""Notebook 03's user-guide findings: a Markdown block generated from a run's results.json."""

from __future__ import annotations

__all__ = ["findings_markdown", "write_findings"]


def findings_markdown(results: dict) -> str:
    """The run's findings as Markdown for docs/03_temporal_metrics.md (a generated block).

    Parameters
    ----------
    results : dict
        A run's ``results.json`` (the whole record, or its ``"results"`` part).

    Returns
    -------
    str
        Data, a table of each learner's forward (paper) and backward metrics, the
        majority baseline, then the verdicts' closing text (``summary``).

    Examples
    --------
    >>> r = {"data_source": "synthetic", "num_periods": 3, "summary": "**No finding**.",
    ...      "learners": {"erm": {"id": 0.9, "ood": 0.8, "tas": 0.95, "sh": 1.0, "sh_eq3": 1.0,
    ...                           "dh": 2.0}},
    ...      "backward": {"erm": {"backward_acc": 0.7, "forgetting": 0.1}},
    ...      "baselines": {"majority": {"ood": 0.6, "sh_eq3": 1.5}}}
    >>> print(findings_markdown(r).splitlines()[0])
    Data: synthetic, 3 periods.
    """
    r = results.get("results", results)
    lines = [f"Data: {r.get('data_source', '?')}, {r.get('num_periods', '?')} periods.", "",
             "| learner | ID | OOD | TAS | SH | SH (Eq. 3) | DH | backward acc. | forgetting |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, row in r.get("learners", {}).items():
        b = r.get("backward", {}).get(name, {})
        lines.append(f"| {name} | {row['id']:.3f} | {row['ood']:.3f} | {row['tas']:.3f} | "
                     f"{row['sh']:.2f} | {row['sh_eq3']:.2f} | {row['dh']:.2f} | "
                     f"{b.get('backward_acc', float('nan')):.3f} | "
                     f"{b.get('forgetting', float('nan')):.3f} |")
    maj = r.get("baselines", {}).get("majority")
    if maj:
        lines += ["", f"Majority-class baseline: OOD {maj['ood']:.3f}, SH (Eq. 3) "
                      f"{maj['sh_eq3']:.2f}."]
    if r.get("sh_facts"):
        lines += ["", r["sh_facts"]]
    lines += ["", r.get("summary", "")]
    return "\n".join(lines).rstrip() + "\n"


def write_findings(results_json, doc, name: str = "03_findings") -> str:
    """Regenerate the ``name`` block of ``doc`` from ``results_json``; return the block."""
    import json
    from pathlib import Path

    from .taskification.report import replace_block

    block = findings_markdown(json.loads(Path(results_json).read_text()))
    replace_block(doc, name, block)
    return block


if __name__ == "__main__":  # python -m clkit.temporal_report RESULTS.json docs/03_temporal_metrics.md
    import sys

    write_findings(sys.argv[1], sys.argv[2])
