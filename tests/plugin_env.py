"""Make the example plugin visible the real way: an installed distribution's metadata on sys.path.

``install_example_plugin(dir)`` writes ``dir/clkit_example_plugin-0.1.0.dist-info`` (METADATA,
entry_points.txt read from the example's pyproject.toml) beside a copy of the package, as
``pip install`` would, and returns ``dir`` to put on ``sys.path`` / ``PYTHONPATH``.
"""

import shutil
import tomllib
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "clkit-example-plugin"


def install_example_plugin(site: Path, *, entry_points: dict | None = None, dist: str = "clkit_example_plugin",
                           version: str = "0.1.0") -> Path:
    site = Path(site)
    site.mkdir(parents=True, exist_ok=True)
    meta = tomllib.loads((EXAMPLE / "pyproject.toml").read_text())["project"]
    if entry_points is None:
        entry_points = meta["entry-points"]["clkit.strategies"]
        shutil.copytree(EXAMPLE / "clkit_example_plugin", site / "clkit_example_plugin", dirs_exist_ok=True)
    info = site / f"{dist}-{version}.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist.replace('_', '-')}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(
        "[clkit.strategies]\n" + "".join(f"{k} = {v}\n" for k, v in entry_points.items()))
    return site
