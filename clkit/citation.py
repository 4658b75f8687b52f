"""The papers the notebooks implement, as BibTeX (``clkit cite NN``; ``results.json``'s ``paper``).

Only what the papers themselves state is recorded: titles, the authors their texts list
(EDGE's is an anonymous submission: its first author as the kit's guide names it, "and
others"), venues, years and identifiers where the texts give them. clkit itself is cited
through ``CITATION.cff`` at the top of the repository.
"""

from __future__ import annotations

__all__ = ["PAPERS", "paper", "bibtex"]

#: notebook stem -> the paper's record (BibTeX type, key and fields)
PAPERS = {
    "01_taskification": {
        "type": "misc", "key": "filat2026taskification",
        "title": "Temporal Taskification in Streaming Continual Learning: A Source of Evaluation Instability",
        "author": "Filat, Nicolae and Burceanu, Elena and Hussain, Ahmed and Kalogiannis, Konstantinos",
        "year": "2026", "eprint": "2604.21930", "archiveprefix": "arXiv", "primaryclass": "cs.LG",
    },
    "02_edge": {
        "type": "misc", "key": "lai2026edge",
        "title": "The Lie of the Average: How Class Incremental Learning Evaluation Deceives You?",
        "author": "Lai and others", "year": "2026",
        "note": "Submitted to ICLR 2026 (under double-blind review); EDGE",
    },
    "03_temporal_metrics": {
        "type": "inproceedings", "key": "iovine2026tracking",
        "title": "Tracking Adaptation Time: Metrics for Temporal Distribution Shift",
        "author": "Iovine, Lorenzo and Ziffer, Giacomo and Della Valle, Emanuele",
        "booktitle": "1st Streaming Continual Learning Bridge at AAAI26", "year": "2026",
    },
    "04_curriculum": {
        "type": "article", "key": "faber2024mnist",
        "title": "From MNIST to ImageNet and back: benchmarking continual curriculum learning",
        "author": "Faber and others", "journal": "Machine Learning", "volume": "113", "year": "2024",
        "note": "Code: https://github.com/lifelonglab/M2I_I2M_benchmark",
    },
    "05_drift": {
        "type": "misc", "key": "sun2026drift",
        "title": "DRIFT: A Benchmark for Task-Free Continual Graph Learning with Continuous Distribution Shifts",
        "author": "Sun, Guiquan and Zhang, Xikun and Ni, Jingchao and Song, Dongjin", "year": "2026",
        "note": "Code: https://github.com/UConn-DSIS/DRIFT",
    },
}


def paper(notebook: str) -> dict | None:
    """The record of the paper ``notebook`` implements (``title``, ``author``, ``year``, ``bibtex``), or
    ``None`` for a notebook that is not one of clkit's five.

    Examples
    --------
    >>> paper("05_drift")["title"][:5], paper("my_notebook")
    ('DRIFT', None)
    """
    rec = PAPERS.get(notebook)
    if rec is None:
        return None
    return {"key": rec["key"], "title": rec["title"], "author": rec["author"], "year": rec["year"],
            "bibtex": bibtex(notebook)}


def bibtex(notebook: str) -> str:
    """The BibTeX entry of the paper ``notebook`` implements.

    Examples
    --------
    >>> print(bibtex("03_temporal_metrics"))
    @inproceedings{iovine2026tracking,
      title = {Tracking Adaptation Time: Metrics for Temporal Distribution Shift},
      author = {Iovine, Lorenzo and Ziffer, Giacomo and Della Valle, Emanuele},
      booktitle = {1st Streaming Continual Learning Bridge at AAAI26},
      year = {2026},
    }
    """
    if notebook not in PAPERS:
        raise ValueError(f"notebook must be one of {sorted(PAPERS)} to cite its paper, got {notebook!r}")
    rec = PAPERS[notebook]
    fields = [f"  {k} = {{{v}}}," for k, v in rec.items() if k not in ("type", "key")]
    return "\n".join([f"@{rec['type']}{{{rec['key']},", *fields, "}"])
