"""Measure how σ maps to DRIFT's overlap index on real Cora and on notebook 05's SBM.

Writes two generated blocks of ``docs/cora.md`` (atomically): ``cora-files`` (the
shipped files and their sizes) and ``cora-sigma-overlap`` (overlap at fixed σ, σ
solved for target overlaps 0.1 / 0.4 / 0.8, under both protocols, split seed 0,
batch size 10, τ = 0.9). Offline: Cora is the copy shipped with clkit unless the
data cache has one.

Run: ``.venv/bin/python benchmarks/cora_sigma_table.py [--doc docs/cora.md] [--markdown FILE]``
"""

from __future__ import annotations

import argparse
import gzip
import re
from pathlib import Path

from clkit._io import atomic_write_text
from clkit.data.graphs import csbm, load_graph
from clkit.data.shipped import PLANETOID_FILES, shipped_planetoid_dir
from clkit.drift.calibrate import sigma_overlap_markdown, sigma_overlap_table, stream_task_sizes

ROOT = Path(__file__).resolve().parents[1]


def files_markdown() -> str:
    d = shipped_planetoid_dir("cora")
    lines = ["| file | raw bytes | gzipped bytes |", "|---|---|---|"]
    raw_total = gz_total = 0
    for s in PLANETOID_FILES:
        gz = d / f"ind.cora.{s}.gz"
        with gzip.open(gz, "rb") as f:
            raw = len(f.read())
        raw_total += raw
        gz_total += gz.stat().st_size
        lines.append(f"| ind.cora.{s} | {raw:,} | {gz.stat().st_size:,} |")
    lines.append(f"| **total** | **{raw_total:,}** | **{gz_total:,}** |")
    return "\n".join(lines)


def sigma_markdown() -> str:
    graphs = {"Cora": load_graph("cora"),
              "SBM (notebook 05)": csbm(2708, 6, homophily=0.8, avg_degree=4.0, feature_signal=0.7, seed=0)}
    data = {n: {p: stream_task_sizes(g, protocol=p, seed=0) for p in ("text", "authors")} for n, g in graphs.items()}
    rows = sigma_overlap_table(data, targets=(0.1, 0.4, 0.8), sigmas=(3.0, 10.0, 20.0, 40.0))
    sizes = "; ".join(f"{n} {p}: {v}" for n, d in data.items() for p, v in d.items())
    return (sigma_overlap_markdown(rows) + f"\n\nStream nodes per latent task (split seed 0): {sizes}. "
            f"Source of Cora: {graphs['Cora'].source.split(' from ')[0]}.")


def replace_block(text: str, name: str, body: str) -> str:
    pat = re.compile(rf"(<!-- BEGIN generated: {re.escape(name)} -->\n).*?(<!-- END generated: {re.escape(name)} -->)",
                     re.S)
    if not pat.search(text):
        raise ValueError(f"no generated block {name!r} in the document")
    return pat.sub(lambda m: m.group(1) + body.rstrip() + "\n" + m.group(2), text)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--doc", default=str(ROOT / "docs" / "cora.md"), help="page whose generated blocks to rewrite")
    ap.add_argument("--markdown", default=None, help="also write the σ/overlap table alone to this file")
    a = ap.parse_args(argv)
    files, table = files_markdown(), sigma_markdown()
    print(files, "\n")
    print(table)
    doc = Path(a.doc)
    text = replace_block(replace_block(doc.read_text(), "cora-files", files), "cora-sigma-overlap", table)
    atomic_write_text(doc, text)
    if a.markdown:
        atomic_write_text(Path(a.markdown), table + "\n")


if __name__ == "__main__":
    main()
