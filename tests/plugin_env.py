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


def write_image_folder(root: Path, num_classes: int = 4, per_class: int = 24, size: int = 8, seed: int = 0) -> Path:
    """An ImageFolder tree root/<class>/<i>.png of gray images whose brightness pattern depends on the class."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(seed)
    root = Path(root)
    for k in range(num_classes):
        d = root / f"class_{k:02d}"
        d.mkdir(parents=True, exist_ok=True)
        pattern = rng.uniform(0, 255, size=(size, size))
        for i in range(per_class):
            img = np.clip(pattern + rng.normal(0, 30, size=(size, size)), 0, 255).astype(np.uint8)
            Image.fromarray(img).save(d / f"{i:03d}.png")
    return root


def write_graph(path: Path, num_nodes: int = 120, num_classes: int = 4, seed: int = 0) -> Path:
    """A torch.save'd torch-geometric Data: class-dependent features, mostly within-class edges."""
    import numpy as np
    import torch
    from torch_geometric.data import Data

    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(num_classes), num_nodes // num_classes)
    x = rng.normal(size=(len(y), 8)) + 2 * np.eye(num_classes, 8)[y]
    src = rng.integers(0, len(y), 4 * len(y))
    same = [rng.choice(np.flatnonzero(y == y[s])) for s in src]
    ei = np.array([np.r_[src, same], np.r_[same, src]])
    torch.save(Data(x=torch.tensor(x, dtype=torch.float32), edge_index=torch.tensor(ei), y=torch.tensor(y)), path)
    return Path(path)
