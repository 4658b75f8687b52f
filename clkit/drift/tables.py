"""The DRIFT paper's Tables 2, 3, 5-6, 7-8, 9 and 10 in its own layout, from runs' rows.

The paper prints one table per setting, methods as rows in its order (Bare, Joint (Offline),
A-GEM, ER, GSS, MAS*, SSM, SEM, DMSG), datasets as column groups, each cell ``mean ± std`` in
percent over seeds, and the best and second-best online method of every column marked
(**1st** / 2nd, Joint left out: it is the offline bound):

=========  ==========================================  =====================================
Table      setting                                     columns per dataset
=========  ==========================================  =====================================
2          Gaussian mixing at the main σ (Joint too)   :math:`A_{AUC}`, :math:`AF_s`
3          hard transitions                            AA, AF
5 / 6      the σ sweep (one dataset; 5 CoraFull, 6     per σ (with its overlap O):
           RomanEmpire)                                :math:`A_{AUC}`, :math:`AF_s`
7 / 8      global mixing, p = 0.1 / p = 0.3            AA, AF
9          boundary-local mixing (K batches)           AA, AF
10         Gaussian at two batch sizes (one dataset)   per B: :math:`A_{AUC}`, :math:`AF_s`;
                                                       :math:`\\Delta A_{AUC}` = last − first
=========  ==========================================  =====================================

:func:`paper_tables` builds them from ``{dataset: rows}`` (each the rows DataFrame of
:func:`clkit.drift.experiment.run_grid` / ``run_protocols`` for one protocol), so one run fills
one column group and several runs (one per dataset) fill the paper's full layout. Choices the
paper leaves open, made here: ``std`` is the population standard deviation over seeds (the
paper says "mean ± std over 3 runs"; clkit's other 05 tables use the same), a table whose
global-mixing ``p`` is neither 0.1 nor 0.3 is numbered "7/8", and ties for a rank are all
marked. Methods a run lacks are left out, and the note says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

__all__ = ["METHOD_LABELS", "PaperTable", "paper_tables"]

#: the paper's row order and labels
METHOD_LABELS = (("bare", "Bare"), ("joint", "Joint (Offline)"), ("agem", "A-GEM"), ("er", "ER"),
                 ("gss", "GSS"), ("mas_star", "MAS*"), ("ssm", "SSM"), ("sem", "SEM"), ("dmsg", "DMSG"))
_LABEL = dict(METHOD_LABELS)
_HEAD = {"A_AUC": "A_AUC %", "AF_s": "AF_s %", "AA": "AA %", "AF": "AF %"}


@dataclass
class PaperTable:
    """One of the paper's tables filled with runs' numbers (built by :func:`paper_tables`).

    Attributes
    ----------
    number : str
        The paper's table number (``"2"``, ``"3"``, ``"5"``, ``"7/8"``, ...).
    title : str
    mean, sd : pandas.DataFrame
        Rows: the paper's labels present; columns: ``(group, metric)`` (group = dataset, or
        ``σ=…, O=…`` / ``B=…`` for the one-dataset tables). Fractions; ``sd`` over seeds
        (population), NaN with one seed or where the cell has no stream (Joint's forgetting).
    n : pandas.DataFrame
        Seeds behind each cell.
    note : str
    delta : pandas.Series, optional
        Table 10's :math:`\\Delta A_{AUC}` (fractions), per row.
    """

    number: str
    title: str
    mean: pd.DataFrame
    sd: pd.DataFrame
    n: pd.DataFrame
    note: str
    delta: pd.Series | None = field(default=None)

    def ranks(self) -> pd.DataFrame:
        """1 and 2 where a cell is the column's best / second-best online method (higher is better;
        Joint and empty cells unranked; equal means share a rank), else 0."""
        out = pd.DataFrame(0, index=self.mean.index, columns=self.mean.columns)
        online = [r for r in self.mean.index if r != _LABEL["joint"]]
        for c in self.mean.columns:
            vals = self.mean.loc[online, c].dropna().round(6)
            distinct = sorted(set(vals), reverse=True)
            for rank, v in enumerate(distinct[:2], start=1):
                out.loc[vals.index[vals == v], c] = rank
        return out

    def formatted(self, marks: bool = True) -> pd.DataFrame:
        """Cells as the paper prints them, ``34.9 ± 0.8`` in percent (no ``±`` with one seed),
        ``-`` where there is nothing; with ``marks`` the best **bold** and the second-best
        <u>underlined</u> (Markdown/HTML, as the paper's **1st** / 2nd)."""
        ranks = self.ranks()
        out = pd.DataFrame("", index=self.mean.index, columns=self.mean.columns, dtype=object)
        for r in self.mean.index:
            for c in self.mean.columns:
                m, s = self.mean.loc[r, c], self.sd.loc[r, c]
                if not np.isfinite(m):
                    out.loc[r, c] = "-"
                    continue
                text = f"{100 * m:.1f}" + (f" ± {100 * s:.1f}" if np.isfinite(s) else "")
                if marks and ranks.loc[r, c] == 1:
                    text = f"**{text}**"
                elif marks and ranks.loc[r, c] == 2:
                    text = f"<u>{text}</u>"
                out.loc[r, c] = text
        if self.delta is not None:
            out[("", "ΔA_AUC points")] = [f"{100 * d:+.1f}" if np.isfinite(d) else "-" for d in self.delta]
        out.index.name = "Method"
        return out

    def styled(self):
        """:meth:`formatted` without marks, as a pandas ``Styler`` that draws the best online method
        of each column bold and the second underlined (how a notebook and the site show it)."""
        text = self.formatted(marks=False)
        ranks = self.ranks().reindex(columns=text.columns, fill_value=0)
        css = ranks.replace({0: "", 1: "font-weight: bold", 2: "text-decoration: underline"})
        return text.style.apply(lambda _: css, axis=None)

    def record(self) -> dict:
        """JSON-ready: ``{number, title, note, row_order, columns, cells: {row: {"group | metric": {mean, sd, n}}}}``."""
        cells = {r: {f"{g} | {m}": {"mean": float(self.mean.loc[r, (g, m)]), "sd": float(self.sd.loc[r, (g, m)]),
                                    "n": int(self.n.loc[r, (g, m)])} for g, m in self.mean.columns}
                 for r in self.mean.index}
        out = {"number": self.number, "title": self.title, "note": self.note, "row_order": list(self.mean.index),
               "columns": [f"{g} | {m}" for g, m in self.mean.columns], "cells": cells}
        if self.delta is not None:
            out["delta_A_AUC"] = {r: float(v) for r, v in self.delta.items()}
        return out


def _cells(rows: pd.DataFrame, metrics) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Mean, population sd and count over seeds per method of ``rows`` (one configuration)."""
    g = rows.groupby("method", sort=False)[list(metrics)]
    sd = g.std(ddof=0).where(g.count() > 1)
    return g.mean(), sd, g.count()


def _assemble(parts: dict, metrics, methods) -> tuple:
    """``{group: rows}`` -> mean, sd, n DataFrames with the paper's rows and ``(group, metric)`` columns."""
    labels = [_LABEL.get(m, m) for m in methods]
    frames = {k: [] for k in ("mean", "sd", "n")}
    for group, rows in parts.items():
        mean, sd, n = _cells(rows, metrics)
        for key, df in zip(("mean", "sd", "n"), (mean, sd, n)):
            df = df.reindex(methods)
            df.index = labels
            df.columns = pd.MultiIndex.from_tuples([(group, _HEAD[m]) for m in metrics])
            frames[key].append(df)
    mean, sd, n = (pd.concat(frames[k], axis=1) for k in ("mean", "sd", "n"))
    return mean, sd, n.fillna(0).astype(int)


def _select(rows: pd.DataFrame, **where) -> pd.DataFrame:
    mask = np.ones(len(rows), dtype=bool)
    for k, v in where.items():
        col = rows[k]
        mask &= np.isclose(col.astype(float), float(v)) if isinstance(v, float) else (col == v).to_numpy()
    return rows[mask]


def _check_rows(rows_by_dataset) -> dict:
    if not isinstance(rows_by_dataset, dict) or not rows_by_dataset:
        raise ValueError(f"rows_by_dataset must be a non-empty dict {{dataset: rows DataFrame}}, got "
                         f"{type(rows_by_dataset).__name__}")
    need = {"setting", "sigma", "p", "k_bl", "batch_size", "sampling", "method", "seed", "overlap",
            "AA", "AF", "A_AUC", "AF_s"}
    out = {}
    for name, rows in rows_by_dataset.items():
        rows = pd.DataFrame(rows)
        missing = sorted(need - set(rows.columns))
        if missing:
            raise ValueError(f"rows_by_dataset[{name!r}] lacks the columns {missing} (rows of "
                             f"clkit.drift.run_grid / run_protocols)")
        out[str(name)] = rows
    return out


def paper_tables(rows_by_dataset: dict, *, sigma: float, sigmas, p: float, k_bl: int, batch_size: int,
                 batch_sizes, sampling: str = "without", methods=None) -> list[PaperTable]:
    """The paper's tables from ``{dataset: rows}`` (one protocol's rows per dataset).

    Parameters
    ----------
    rows_by_dataset : dict
        ``{dataset label: rows}``; rows as :func:`clkit.drift.experiment.run_grid` returns them
        (a list of dicts or a DataFrame), one protocol.
    sigma, p, k_bl, batch_size, sampling :
        The main Gaussian σ, global mixing proportion, boundary-local K, batch size and sampling
        of the runs (the notebook's parameters).
    sigmas : list of float or dict
        The σ sweep (per dataset, ``{dataset: [σ, ...]}``, when it was solved per run).
    batch_sizes : list of int
        Table 10's batch sizes (the main one among them).
    methods : list of str, optional
        Rows to show (default: the paper's methods the rows hold, in its order, then any others).

    Returns
    -------
    list of PaperTable
        Tables 2, 3, 7/8 and 9 (one column group per dataset), then for each dataset its σ sweep
        (Table 5/6) and, with two or more batch sizes, Table 10. A table with no rows is left out.

    Examples
    --------
    >>> rows = [dict(setting=s, sigma=10.0, p=0.3, k_bl=5, batch_size=10, sampling="without", method=m,
    ...              seed=seed, overlap=0.4, AA=a + 0.01 * seed, AF=-0.5, A_AUC=a, AF_s=-0.4)
    ...         for s in ("hard", "gaussian", "boundary_local", "global") for m, a in (("bare", 0.2), ("er", 0.3))
    ...         for seed in (1, 2)]
    >>> ts = paper_tables({"Cora": rows}, sigma=10.0, sigmas=[10.0], p=0.3, k_bl=5, batch_size=10,
    ...                   batch_sizes=[10])
    >>> [t.number for t in ts]
    ['2', '3', '8', '9', '5/6']
    >>> ts[1].formatted().loc["ER", ("Cora", "AA %")], ts[1].formatted().loc["Bare", ("Cora", "AA %")]
    ('**31.5 ± 0.5**', '<u>21.5 ± 0.5</u>')
    """
    data = _check_rows(rows_by_dataset)
    present = list(dict.fromkeys(m for rows in data.values() for m in rows["method"]))
    if methods is None:
        methods = [m for m, _ in METHOD_LABELS if m in present] + [m for m in present if m not in _LABEL]
    methods = list(methods)
    unknown = [m for m in methods if m not in present]
    if unknown:
        raise ValueError(f"methods {unknown} have no rows; the rows hold {present}")
    left_out = [lab for m, lab in METHOD_LABELS if m not in methods]
    missing_note = (f" Not in these runs: {', '.join(left_out)}." if left_out else "")
    common = dict(batch_size=batch_size, sampling=sampling)
    num = "7" if np.isclose(p, 0.1) else "8" if np.isclose(p, 0.3) else "7/8"
    online = [m for m in methods if m != "joint"]
    specs = [("2", f"Gaussian mixing (σ = {sigma:g}, B = {batch_size})", dict(setting="gaussian", sigma=float(sigma)),
              ("A_AUC", "AF_s"), methods),
             ("3", f"hard transitions (B = {batch_size})", dict(setting="hard"), ("AA", "AF"), online),
             (num, f"global mixing (p = {p:g}, B = {batch_size})", dict(setting="global", p=float(p)), ("AA", "AF"),
              online),
             ("9", f"boundary-local mixing (K = {k_bl}, B = {batch_size})", dict(setting="boundary_local", k_bl=k_bl),
              ("AA", "AF"), online)]
    tables = []
    for number, title, where, metrics, rows_methods in specs:
        parts = {name: _select(rows, **where, **common) for name, rows in data.items()}
        parts = {k: v[v.method.isin(rows_methods)] for k, v in parts.items() if len(v)}
        if not parts:
            continue
        mean, sd, n = _assemble(parts, metrics, [m for m in rows_methods
                                                 if any(m in set(v.method) for v in parts.values())])
        seeds = sorted({int(s) for v in parts.values() for s in v.seed})
        tables.append(PaperTable(number, f"Table {number}: {title}", mean, sd, n,
                                 f"Mean ± std (population) over {len(seeds)} seed(s) {seeds}; best online method "
                                 f"of each column bold, second underlined (Joint unranked)." + missing_note))
    for name, rows in data.items():
        sweep = sigmas.get(name, []) if isinstance(sigmas, dict) else list(sigmas)
        parts = {}
        for s in sweep:
            r = _select(rows, setting="gaussian", sigma=float(s), **common)
            r = r[r.method.isin(online)]
            if len(r):
                parts[f"σ={s:.3g}, O={r.overlap.mean():.2f}"] = r
        if parts:
            shown = [m for m in online if any(m in set(v.method) for v in parts.values())]
            mean, sd, n = _assemble(parts, ("A_AUC", "AF_s"), shown)
            tables.append(PaperTable("5/6", f"Table 5/6: the σ sweep on {name} (B = {batch_size})", mean, sd, n,
                                     "The paper's Table 5 is CoraFull-CL, Table 6 RomanEmpire-CL; O is the "
                                     "overlap index of the σ's streams. Mean ± std (population) over seeds; "
                                     "top-2 per column marked." + missing_note))
        sizes = list(dict.fromkeys(int(b) for b in batch_sizes))
        parts = {}
        for b in sizes:
            r = _select(rows, setting="gaussian", sigma=float(sigma), batch_size=b, sampling=sampling)
            r = r[r.method.isin(online)]
            if len(r):
                parts[f"B={b}"] = r
        if len(parts) >= 2:
            shown = [m for m in online if all(m in set(v.method) for v in parts.values())]
            mean, sd, n = _assemble({k: v[v.method.isin(shown)] for k, v in parts.items()}, ("A_AUC", "AF_s"), shown)
            first, last = list(parts)[0], list(parts)[-1]
            delta = mean[(last, "A_AUC %")] - mean[(first, "A_AUC %")]
            tables.append(PaperTable("10", f"Table 10: batch size on {name} (Gaussian σ = {sigma:g})", mean, sd, n,
                                     f"ΔA_AUC = A_AUC({last}) − A_AUC({first}), in points. Mean ± std (population) "
                                     "over seeds; top-2 per column marked." + missing_note, delta=delta))
    return tables
