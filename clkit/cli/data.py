"""``clkit data list|check|get``: every file a parameter set needs, checked and fetched (:mod:`clkit.data.catalog`,
:mod:`clkit.data.preflight`, :mod:`clkit.data.download`).

::

    clkit data list [NN] [--params SET]        # what each set needs: folder, size, address, checksum and its source
    clkit data check NN --params SET [--no-open] [-p NAME VALUE]   # found / unverified / missing / wrong, with the fix
        [--memory] [--card CARD] [--host-gib GIB]   # and (paper* sets, or --memory) the memory at the real sizes
    clkit data get NN --params SET [--allow-unverified] [--only NAME]   # download into the cache, verified

``check`` and ``get`` exit 2 when anything is still missing or wrong; ``check`` also when the set's memory plan
(:mod:`clkit.memory_check`) is over the card or the host it is checked against.
"""

from __future__ import annotations

import sys


def register(sub) -> None:
    p = sub.add_parser("data", help="datasets and weights each parameter set needs: list, check, get")
    s = p.add_subparsers(dest="data_cmd", required=True)
    lst = s.add_parser("list", help="every dataset and weight file of each set: folder, size, address, checksum")
    lst.add_argument("notebook", nargs="?", default=None, help="a notebook (02 or 02_edge); default all")
    lst.add_argument("--params", default=None, help="one parameter set (default: every set of the notebook)")
    for name, helptext in (("check", "open and verify each file a set needs; one table, with the fix for each"),
                           ("get", "download what a set needs into the clkit cache: resumable, verified")):
        c = s.add_parser(name, help=helptext)
        c.add_argument("notebook", help="a notebook (02 or 02_edge)")
        c.add_argument("--params", default="default", help="smoke | default | paper | ... | FILE.yaml")
        c.add_argument("-p", nargs=2, action="append", metavar=("NAME", "VALUE"), help="override a parameter")
        if name == "check":
            c.add_argument("--no-open", action="store_true",
                           help="check presence and digests only, without opening each file through its loader")
            c.add_argument("--memory", action="store_true",
                           help="print the memory plan for any set (paper* sets always print it)")
            c.add_argument("--card", default=None,
                           help="the card the memory plan is checked against (default: the one the set's budget names)")
            c.add_argument("--host-gib", type=float, default=None,
                           help="the host memory the plan is checked against, GiB (default 64)")
        else:
            c.add_argument("--allow-unverified", action="store_true",
                           help="keep a downloaded file whose digest differs from the published one")
            c.add_argument("--only", action="append", metavar="NAME", help="fetch only this entry (repeatable)")
            c.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.set_defaults(func=_cmd)


def _values(notebook: str, params: str, overrides):
    from ..notebooks import load_params, resolve_notebook

    nb = resolve_notebook(notebook)
    return nb, load_params(nb, params, overrides or ())


def _cmd(args) -> int:
    try:   # arguments first, before any heavy import: one line, exit 2
        if args.data_cmd == "list":
            from ..notebooks import list_notebooks, param_sets, resolve_notebook

            nbs = [resolve_notebook(args.notebook)] if args.notebook else list_notebooks()
            plan = []
            for nb in nbs:
                sets = [args.params] if args.params else param_sets(nb)
                plan += [(nb, s, _values(nb, s, ())[1]) for s in sets]
        else:
            nb, values = _values(args.notebook, args.params, args.p)
            if args.data_cmd == "check":
                _memory_args(args)
    except (ValueError, TypeError) as exc:
        print(f"[clkit] ERROR: {exc}", file=sys.stderr, flush=True)
        return 2
    if args.data_cmd == "list":
        return _list(plan)
    if args.data_cmd == "check":
        return _check(nb, args.params, values, open_=not args.no_open, args=args)
    return _get(nb, args.params, values, args)


def _list(plan) -> int:
    from ..data.catalog import required_files

    for nb, s, values in plan:
        entries = required_files(nb, values)
        print(f"{nb} --params {s}: " + ("nothing to download (shipped, package or synthetic data)" if not entries
                                        else f"{len(entries)} file set(s)"))
        for e in entries:
            print(f"  {e.name} [{e.kind}] {e.title}")
            print(f"    looked for in: {', '.join(str(loc.folder) for loc in e.locations)}")
            for a in e.artifacts:
                print(f"    {a.url}  size: {a.size or 'not published'}")
                print(f"      checksum: {a.digest or 'none'}  ({a.source})")
            if not e.artifacts:
                print("    a local file or folder named by the parameters")
    return 0


def _memory_args(args) -> None:
    """Refuse a bad ``--card`` or ``--host-gib`` before any work (one line, exit 2)."""
    import math

    if args.card is not None:
        from ..cards import card_spec
        from ..memory_check import CARD_MEMORY

        if card_spec(args.card) not in CARD_MEMORY:
            raise ValueError(f"--card must be one of {sorted(CARD_MEMORY)} (or CUDA's name of one), got {args.card!r}")
    if args.host_gib is not None and not (math.isfinite(args.host_gib) and args.host_gib > 0):
        raise ValueError(f"--host-gib must be a positive number of GiB, got {args.host_gib!r}")


def _check(nb, set_name, values, open_, args=None) -> int:
    from ..data.preflight import check

    report = check(nb, values, set_name=set_name, open=open_)
    print(report.table())
    memory = None
    if args is not None and (args.memory or str(set_name).startswith("paper")):
        from ..data.preflight import memory_finding
        from ..memory_check import DEFAULT_HOST_GIB, plan_for, table

        host = DEFAULT_HOST_GIB if args.host_gib is None else args.host_gib
        plan = plan_for(nb, values, set_name, card=args.card, host_gib=host)
        if plan is not None:
            print()
            print(table([plan]))
            memory = memory_finding(nb, values, set_name, plan=plan)
            if memory.problem:
                print(f"[clkit] memory: {memory.detail}", file=sys.stderr)
    if report.problems:
        print(f"[clkit] {len(report.problems)} of {len(report.findings)} missing or wrong; "
              f"`clkit data get {nb[:2]} --params {set_name}` fetches what can be fetched", file=sys.stderr)
        return 2
    if memory is not None and memory.problem:
        return 2
    return 0


def _get(nb, set_name, values, args) -> int:
    from ..data.catalog import required_files
    from ..data.download import DownloadError, get

    entries = required_files(nb, values)
    if args.only:
        names = {e.name for e in entries}
        bad = [n for n in args.only if n not in names]
        if bad:
            print(f"[clkit] ERROR: --only must name entries of {nb} --params {set_name}: {sorted(names)}, got {bad}",
                  file=sys.stderr)
            return 2
        entries = [e for e in entries if e.name in args.only]
    failed = 0
    for e in entries:
        try:
            print(get(e, allow_unverified=args.allow_unverified, progress=not args.no_progress), flush=True)
        except (DownloadError, OSError, ValueError) as exc:
            failed += 1
            print(f"[clkit] ERROR: {e.name}: {exc}", file=sys.stderr, flush=True)
    if failed:
        print(f"[clkit] {failed} of {len(entries)} not fetched; nothing half-written is left in place "
              f"(a .partial file resumes on the next run)", file=sys.stderr)
        return 2
    return 0
