"""``clkit cite NN``: the BibTeX of the paper a notebook implements (and how to cite clkit)."""

from __future__ import annotations

from ._output import guarded


def register(sub) -> None:
    c = sub.add_parser("cite", help="BibTeX of the paper a notebook implements (NN, a stem, or all)")
    c.add_argument("notebook", help="01..05, a notebook stem, or 'all'")
    c.set_defaults(func=guarded(cite))


def cite(args) -> int:
    from ..citation import PAPERS, bibtex
    from ..notebooks import resolve_notebook

    names = list(PAPERS) if args.notebook == "all" else [resolve_notebook(args.notebook)]
    for name in names:
        if name not in PAPERS:
            raise ValueError(f"{name} reproduces no paper, so it cites none; the notebooks that do: "
                             f"{', '.join(PAPERS)}. Cite clkit itself from CITATION.cff")
        print(f"% {name}\n{bibtex(name)}\n")
    print("% clkit itself: see CITATION.cff (GitHub's 'Cite this repository')")
    return 0
