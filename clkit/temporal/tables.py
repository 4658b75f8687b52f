"""The paper's Table 1 (FMoW) and Table 2 (Yearbook), laid out from a run's per-learner summaries.

Table 1 lists, for MoCo, SI, CORAL, ERM, A-GEM and FT (in that order), ID, OOD, TAS (percent,
one decimal) and SH, DH (years, one decimal). Table 2 lists, for MoCo, SI, CORAL, EWC, ERM,
A-GEM and FT, ID Avg, OOD Avg, OOD Min, TAS Avg and TAS Min (percent, one decimal).
:func:`paper_table` builds either layout from :func:`~clkit.temporal.metrics.summarize_learner`
summaries, with the no-learning baselines as last rows and, where the run has several seeds, the
mean ± sample standard deviation over them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["PAPER_LAYOUTS", "PaperTable", "paper_table", "layouts_for", "period_unit"]

#: layout -> (title, rows as (clkit learner, the paper's label), columns as (header, summary key, kind))
PAPER_LAYOUTS = {
    "fmow": ("the paper's Table 1 (FMoW)",
             (("moco_sml", "MoCo"), ("si", "SI"), ("coral", "CORAL"), ("erm", "ERM"), ("agem", "A-GEM"),
              ("finetune", "FT")),
             (("ID", "id", "%"), ("OOD", "ood", "%"), ("TAS", "tas", "%"), ("SH", "sh", "h"),
              ("DH", "dh", "h"))),
    "yearbook": ("the paper's Table 2 (Yearbook)",
                 (("moco_sml", "MoCo"), ("si", "SI"), ("coral", "CORAL"), ("ewc", "EWC"), ("erm", "ERM"),
                  ("agem", "A-GEM"), ("finetune", "FT")),
                 (("ID Avg", "id", "%"), ("OOD Avg", "ood", "%"), ("OOD Min", "ood_min", "%"),
                  ("TAS Avg", "tas", "%"), ("TAS Min", "tas_min", "%"))),
}

MAJORITY, CHANCE = "majority (baseline)", "chance (baseline)"


def layouts_for(dataset: str) -> tuple:
    """The paper's table(s) to lay a run on ``dataset`` out as: FMoW's, Yearbook's, or both for other data.

    Examples
    --------
    >>> layouts_for("fmow"), layouts_for("yearbook"), layouts_for("rainfall")
    (('fmow',), ('yearbook',), ('fmow', 'yearbook'))
    """
    if not isinstance(dataset, str):
        raise ValueError(f"dataset must be a string, got {dataset!r}")
    return (dataset,) if dataset in PAPER_LAYOUTS else tuple(PAPER_LAYOUTS)


def period_unit(dataset: str, period_length: int) -> str:
    """The unit of SH and DH in the paper's tables: ``"y"`` where one period is one year, else ``"periods"``.

    One period is a year for Wild-Time's Yearbook and FMoW with ``period_length = 1`` (one time step
    is one year) and for the rainfall stream with ``period_length = 365`` (days).

    Examples
    --------
    >>> period_unit("yearbook", 1), period_unit("rainfall", 365), period_unit("rainfall", 1825)
    ('y', 'y', 'periods')
    """
    if isinstance(period_length, bool) or not isinstance(period_length, (int, np.integer)) or period_length < 1:
        raise ValueError(f"period_length must be a positive integer, got {period_length!r}")
    years = {"yearbook": 1, "fmow": 1, "rainfall": 365}
    return "y" if years.get(dataset) == period_length else "periods"


@dataclass
class PaperTable:
    """One of the paper's tables filled with a run's numbers (built by :func:`paper_table`).

    Attributes
    ----------
    layout : str
        ``"fmow"`` (Table 1) or ``"yearbook"`` (Table 2).
    title : str
    mean, sd : pandas.DataFrame
        Rows: the paper's labels present in the run, then the baselines; columns: the paper's
        headers. Accuracies and TAS as fractions, SH and DH in periods (unformatted); ``sd`` is
        NaN where the cell has one value.
    n : pandas.DataFrame
        How many values each cell averages (seeds; 1 for one run, 0 for a baseline without it).
    horizon_unit : str
    note : str
        What the table leaves out and where its spread comes from.
    """

    layout: str
    title: str
    mean: object
    sd: object
    n: object
    horizon_unit: str
    note: str

    def formatted(self):
        """The table as the paper prints it: ``32.8%``, ``4.5 y``; ``mean ± sd`` where there is a spread."""
        import pandas as pd

        kinds = {head: kind for head, _, kind in PAPER_LAYOUTS[self.layout][2]}
        out = pd.DataFrame(index=self.mean.index, columns=self.mean.columns, dtype=object)
        for r in self.mean.index:
            for c in self.mean.columns:
                m, s = self.mean.loc[r, c], self.sd.loc[r, c]
                scale, unit = (100.0, "%") if kinds[c] == "%" else (1.0, " " + self.horizon_unit)
                if not np.isfinite(m):
                    out.loc[r, c] = "—"
                elif np.isfinite(s):
                    out.loc[r, c] = f"{m * scale:.1f} ± {s * scale:.1f}{unit}"
                else:
                    out.loc[r, c] = f"{m * scale:.1f}{unit}"
        out.index.name = "Model"
        out.columns.name = self.units()
        return out

    def units(self) -> str:
        """The table's units, shown in its header (the columns' name): percent for the accuracies and
        TAS, the horizon unit for SH and DH.

        >>> import pandas as pd
        >>> t = PaperTable("fmow", "", pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), "y", "")
        >>> t.units()
        'ID, OOD, TAS in %; SH, DH in y'
        """
        columns = PAPER_LAYOUTS[self.layout][2]
        pct = [h for h, _, k in columns if k == "%"]
        hor = [h for h, _, k in columns if k == "h"]
        return "; ".join(part for part in (f"{', '.join(pct)} in %" if pct else "",
                                            f"{', '.join(hor)} in {self.horizon_unit}" if hor else "") if part)

    def record(self) -> dict:
        """JSON-ready: ``{layout, title, columns, row_order, horizon_unit, note, rows: {label: {column: {mean, sd, n}}}}``.

        ``row_order`` keeps the paper's order (a JSON writer may sort the keys of ``rows``).
        """
        return {"layout": self.layout, "title": self.title, "columns": list(self.mean.columns),
                "row_order": list(self.mean.index),
                "horizon_unit": self.horizon_unit, "note": self.note,
                "rows": {r: {c: {"mean": float(self.mean.loc[r, c]), "sd": float(self.sd.loc[r, c]),
                                 "n": int(self.n.loc[r, c])} for c in self.mean.columns}
                         for r in self.mean.index}}


def _join(items) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def paper_table(rows: dict, layout: str, *, baseline: dict | None = None, chance: float | None = None,
                per_seed: dict | None = None, seeds=None, horizon_unit: str = "periods") -> PaperTable:
    """The paper's Table 1 (``layout="fmow"``) or Table 2 (``"yearbook"``) from a run's summaries.

    Rows follow the paper's order and labels (MoCo = ``moco_sml``, FT = ``finetune``, ...);
    learners the run lacks are left out, and so are the run's learners the paper's table does not
    list; the note names both. The no-learning baselines follow as ``majority (baseline)`` (its
    :func:`~clkit.temporal.metrics.summarize_learner` summary) and ``chance (baseline)`` (ID, OOD
    and OOD Min equal to chance; no TAS, SH or DH). SH is the summaries' ``sh`` (first crossing
    below delta, the paper's text and Fig. 2).

    Where ``per_seed`` holds a learner's values of a column over several seeds, the cell is their
    mean ± sample standard deviation (``ddof=1``); every other cell is the single run's value from
    ``rows``. The note says which cells are which.

    Parameters
    ----------
    rows : dict
        ``{learner: summarize_learner(...)}`` of the run (its first seed).
    layout : {"fmow", "yearbook"}
    baseline : dict, optional
        ``summarize_learner`` summary of the majority-class baseline.
    chance : float in [0, 1], optional
        Chance accuracy (``1 / num_classes``).
    per_seed : dict, optional
        ``{learner: [dict per seed]}`` holding any of the summary keys (``id``, ``ood``, ``ood_min``,
        ``tas``, ``tas_min``, ``sh``, ``dh``), the same number of seeds for every learner
        (:func:`clkit.temporal.verdicts.seed_metrics`' first value).
    seeds : list of int, optional
        The seeds, first the one ``rows`` were computed with (for the note).
    horizon_unit : str
        Unit of SH and DH in the formatted cells (``"y"`` where one period is a year: the paper's).

    Returns
    -------
    PaperTable

    Examples
    --------
    >>> rows = {"finetune": {"id": 0.8, "ood": 0.7, "tas": 0.9, "sh": 2.0, "dh": 3.0},
    ...         "ewc": {"id": 0.75, "ood": 0.72, "tas": 0.95, "sh": 3.0, "dh": 4.0}}
    >>> t = paper_table(rows, "fmow", chance=0.5, horizon_unit="y")
    >>> t.formatted().to_dict("index")["FT"]
    {'ID': '80.0%', 'OOD': '70.0%', 'TAS': '90.0%', 'SH': '2.0 y', 'DH': '3.0 y'}
    >>> list(t.formatted().index), t.formatted().loc["chance (baseline)", "TAS"]
    (['FT', 'chance (baseline)'], '—')
    >>> per = {"finetune": [{"tas": 0.9}, {"tas": 0.8}, {"tas": 0.85}]}
    >>> paper_table(rows, "fmow", per_seed=per, seeds=[0, 1, 2]).formatted().loc["FT", "TAS"]
    '85.0 ± 5.0%'
    """
    import pandas as pd

    if layout not in PAPER_LAYOUTS:
        raise ValueError(f"layout must be one of {sorted(PAPER_LAYOUTS)} (the paper's Table 1: fmow, "
                         f"Table 2: yearbook), got {layout!r}")
    if not isinstance(rows, dict) or not rows:
        raise ValueError(f"rows must be a non-empty dict {{learner: summary}}, got {rows!r}")
    if chance is not None and not (isinstance(chance, (int, float)) and 0 <= chance <= 1):
        raise ValueError(f"chance must be a number in [0, 1], got {chance!r}")
    if not isinstance(horizon_unit, str) or not horizon_unit:
        raise ValueError(f"horizon_unit must be a non-empty string, got {horizon_unit!r}")
    title, order, columns = PAPER_LAYOUTS[layout]
    keys = [k for _, k, _ in columns]
    per_seed = dict(per_seed or {})
    lengths = {name: len(v) for name, v in per_seed.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"per_seed must hold the same number of seeds for every learner, got {lengths}")
    n_seeds = next(iter(lengths.values()), 0)
    if seeds is not None and per_seed and len(list(seeds)) != n_seeds:
        raise ValueError(f"seeds must list the {n_seeds} seeds of per_seed, got {list(seeds)!r}")
    for name in per_seed:
        if name not in rows:
            raise ValueError(f"per_seed has learner {name!r}, which is not in rows ({sorted(rows)})")
    present = [(name, label) for name, label in order if name in rows]
    for name, _ in present:
        missing = [k for k in keys if k not in rows[name]]
        if missing:
            raise ValueError(f"rows[{name!r}] lacks {missing} (a summarize_learner summary has them)")
    if baseline is not None:
        missing = [k for k in keys if k not in baseline]
        if missing:
            raise ValueError(f"baseline lacks {missing} (a summarize_learner summary has them)")

    headers = [h for h, _, _ in columns]
    mean, sd, n = {}, {}, {}
    spread_cells: dict = {}  # learner -> headers with a spread
    for name, label in present:
        mean[label], sd[label], n[label] = {}, {}, {}
        for head, key, _ in columns:
            vals = [d[key] for d in per_seed.get(name, []) if key in d]
            vals = np.asarray([v for v in vals if v is not None], dtype=float)
            vals = vals[np.isfinite(vals)]
            if len(vals) >= 2:
                mean[label][head], sd[label][head], n[label][head] = vals.mean(), vals.std(ddof=1), len(vals)
                spread_cells.setdefault(name, []).append(head)
            else:
                mean[label][head], sd[label][head], n[label][head] = float(rows[name][key]), np.nan, 1
    if baseline is not None:
        mean[MAJORITY] = {h: float(baseline[k]) for h, k, _ in columns}
        sd[MAJORITY] = {h: np.nan for h in headers}
        n[MAJORITY] = {h: 0 for h in headers}
    if chance is not None:
        mean[CHANCE] = {h: (float(chance) if k in ("id", "ood", "ood_min") else np.nan) for h, k, _ in columns}
        sd[CHANCE] = {h: np.nan for h in headers}
        n[CHANCE] = {h: 0 for h in headers}

    def frame(d, dtype=float):
        return pd.DataFrame.from_dict(d, orient="index", columns=headers).astype(dtype)

    labels = {name: label for name, label in order}
    lacked = [f"{labels[name]} ({name})" for name, _ in order if name not in rows]
    extra = [name for name in rows if name not in labels]
    note = [f"Rows in the order and with the labels of {title}"
            + (f"; not in this run: {_join(lacked)}" if lacked else "")
            + (f"; in this run but not in that table (left out here): {_join(extra)}" if extra else "") + "."]
    first = f"seed {list(seeds)[0]}" if seeds is not None and len(list(seeds)) else "the run's seed"
    if spread_cells:
        s = list(seeds) if seeds is not None else []
        which = (f"the {n_seeds} training seeds {s[0]}–{s[-1]}" if len(s) >= 2 and s == list(range(s[0], s[-1] + 1))
                 else f"the {n_seeds} training seeds {s}" if s else f"{n_seeds} training seeds")
        groups: dict = {}
        for name, heads in spread_cells.items():
            groups.setdefault(tuple(heads), []).append(labels.get(name, name))
        spread = "; ".join(f"{_join(list(h))} of {_join(v)}" for h, v in groups.items())
        rest: dict = {}
        for name, _ in present:
            if name in spread_cells and len(spread_cells[name]) < len(headers):
                rest.setdefault(tuple(h for h in headers if h not in spread_cells[name]), []).append(labels[name])
        single = [f"{_join(list(h))} of {_join(v)}" for h, v in rest.items()]
        single += [f"every column of {labels[name]}" for name, _ in present if name not in spread_cells]
        note.append(f"Mean ± sd (sample standard deviation, ddof = 1) over {which} for {spread}"
                    + (f"; single values from {first}'s run for {'; '.join(single)} (not recomputed per seed)"
                       if single else "") + ".")
    else:
        note.append(f"One seed ({first}): no spread across seeds.")
    if baseline is not None or chance is not None:
        note.append("The baselines do not train, so they have no seed spread"
                    + ("; chance has no TAS, SH or DH (—)" if chance is not None and layout == "fmow" else
                       "; chance has no TAS (—)" if chance is not None else "") + ".")
    kinds = {k for _, _, k in columns}
    note.append("Accuracies and TAS in percent" + (f", SH and DH in {'years' if horizon_unit == 'y' else horizon_unit}"
                                                   " (SH: first crossing below δ)" if "h" in kinds else "")
                + ", one decimal, as in the paper.")
    return PaperTable(layout=layout, title=title, mean=frame(mean), sd=frame(sd), n=frame(n, int),
                      horizon_unit=horizon_unit, note=" ".join(note))
