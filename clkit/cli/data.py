"""``clkit data list|check|get``: every file a parameter set needs, checked and fetched (:mod:`clkit.data.catalog`,
:mod:`clkit.data.preflight`, :mod:`clkit.data.download`).

::

    clkit data list [NN] [--params SET]        # what each set needs: folder, size, address, checksum and its source
    clkit data check NN --params SET [--no-open] [-p NAME VALUE]   # found / unverified / missing / wrong, with the fix
    clkit data get NN --params SET [--allow-unverified] [--only NAME]   # download into the cache, verified

``check`` and ``get`` exit 2 when anything is still missing or wrong.
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
    except (ValueError, TypeError) as exc:
        print(f"[clkit] ERROR: {exc}", file=sys.stderr, flush=True)
        return 2
    if args.data_cmd == "list":
        return _list(plan)
    if args.data_cmd == "check":
        return _check(nb, args.params, values, open_=not args.no_open)
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


def _check(nb, set_name, values, open_) -> int:
    from ..data.preflight import check

    report = check(nb, values, set_name=set_name, open=open_)
    print(report.table())
    if report.problems:
        print(f"[clkit] {len(report.problems)} of {len(report.findings)} missing or wrong; "
              f"`clkit data get {nb[:2]} --params {set_name}` fetches what can be fetched", file=sys.stderr)
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
