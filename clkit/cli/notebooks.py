"""``clkit notebooks copy DIR``: editable copies of the notebooks, their parameter sets and grids."""

from __future__ import annotations

import shutil
from pathlib import Path

from ._output import guarded

__all__ = ["register", "copy_notebooks"]


def register(sub) -> None:
    n = sub.add_parser("notebooks", help="editable copies of the notebooks (clkit notebooks copy DIR)")
    s = n.add_subparsers(dest="notebooks_cmd", required=True)
    c = s.add_parser("copy", help="copy the notebooks, their params/ and grids/ into DIR")
    c.add_argument("dir", help="the folder to create (or an empty one)")
    c.add_argument("--force", action="store_true", help="overwrite the copies already in DIR")
    c.set_defaults(func=guarded(_cmd_copy))


def copy_notebooks(dest, *, force: bool = False) -> list[Path]:
    """Copy every notebook (``.ipynb`` and its paired ``.py``), ``params/`` and ``grids/`` into ``dest``.

    The copies are the user's to edit and run: in JupyterLab (Run All writes outputs into them,
    not into the kit's tracked notebooks) or headless with ``CLKIT_NOTEBOOKS=DEST clkit run NN``.
    A file already in ``dest`` is refused unless ``force``; nothing is written then.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp()) / "my-notebooks"
    >>> names = {p.name for p in copy_notebooks(d)}
    >>> {"03_temporal_metrics.ipynb", "params", "grids"} <= names
    True
    """
    from ..notebooks import list_notebooks, notebooks_dir

    src, dest = notebooks_dir(), Path(dest)
    if dest.exists() and not dest.is_dir():
        raise ValueError(f"dir {dest} is a file; give a folder to copy the notebooks into")
    items = []
    for stem in list_notebooks():
        items += [p for p in (src / f"{stem}.ipynb", src / f"{stem}.py") if p.exists()]
    items += [src / d for d in ("params", "grids") if (src / d).is_dir()]
    clash = [dest / p.name for p in items if (dest / p.name).exists()]
    if clash and not force:
        raise ValueError(f"dir {dest} already holds {', '.join(p.name for p in clash[:4])}"
                         f"{' ...' if len(clash) > 4 else ''}; pass --force to overwrite them")
    dest.mkdir(parents=True, exist_ok=True)
    out = []
    for p in items:
        target = dest / p.name
        if p.is_dir():
            shutil.copytree(p, target, dirs_exist_ok=True)
        else:
            shutil.copy2(p, target)
        out.append(target)
    return out


def _cmd_copy(args) -> int:
    copied = copy_notebooks(args.dir, force=args.force)
    nbs = sorted(p.name for p in copied if p.suffix == ".ipynb")
    print(f"[clkit] copied {len(nbs)} notebooks, their parameter sets and grids into {args.dir}")
    print(f"  open them in JupyterLab (jupyter lab {args.dir}), or run your edited copies headless:")
    print(f"  CLKIT_NOTEBOOKS={args.dir} clkit run 03 --params smoke")
    return 0
