"""The protocols without a notebook: ``clkit edge|metrics|drift|taskify`` subcommands.

Each subcommand parses its arguments, calls the same ``clkit`` functions the notebooks
call, prints a readable table and, with ``--out DIR``, writes ``DIR/<name>.json`` (and
``DIR/<name>.csv`` where the result is a table). Library modules never import this
package. Exit status: 0 on success, 2 on bad input (the message names the argument,
file or value).
"""

from __future__ import annotations

import argparse

__all__ = ["register"]


def register(subparsers) -> None:
    """Add the ``edge``, ``metrics``, ``drift`` and ``taskify`` subcommands to ``subparsers``."""
    from . import drift, edge, metrics, taskify

    for mod in (edge, metrics, drift, taskify):
        mod.register(subparsers)


def add_out(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", default=None, metavar="DIR",
                        help="write the result as JSON (and CSV where tabular) into DIR")
