"""What ran a run: clkit's version and commit, Python and the key libraries, the machine, the data files,
the seeds.

Every ``run.json`` (written by :func:`clkit.run.run_notebook`) and every ``results.json``
(:class:`clkit.results.RunRecord`) carries :func:`manifest`, so a number can be traced to
the code and the environment that produced it; ``clkit summary`` warns when the runs it
combines differ in them (:func:`differences`). Nothing in it is random or timed, so two
runs of the same code on the same machine, reading the same data, write the same manifest.
"""

from __future__ import annotations

import functools
import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path

__all__ = ["LIBRARIES", "version", "git_state", "libraries", "machine", "seeds", "manifest",
           "differences"]

#: the libraries whose versions a manifest records (distribution names)
LIBRARIES = ("numpy", "scipy", "pandas", "scikit-learn", "statsmodels", "matplotlib", "torch", "torchvision",
             "torch-geometric", "timm", "open_clip_torch", "POT", "papermill")


@functools.lru_cache(maxsize=1)
def version() -> str:
    """clkit's version: :data:`clkit.__version__`, read from the code that runs.

    One string, the same in every clone of main (no git tag is needed: tags never reach the published
    main), in an editable install (whose metadata would keep the version of the day it was installed),
    a wheel and an sdist (both built from it: ``pyproject.toml`` reads it as the version attribute).
    ``X.Y.Z`` at a release, ``X.Y.Z.dev0`` between releases; the commit that ran is :func:`git_state`'s.

    Examples
    --------
    >>> import clkit
    >>> version() == clkit.__version__
    True
    """
    from . import __version__

    return __version__


@functools.lru_cache(maxsize=1)
def git_state() -> dict | None:
    """``{"commit", "dirty"}`` of the checkout clkit runs from, or ``None`` outside a git checkout (a wheel).

    ``dirty`` is whether tracked files differ from the commit (``git status --porcelain
    --untracked-files=no``), so a number from uncommitted code is marked as such.
    """
    root = Path(__file__).resolve().parent.parent
    if not (root / ".git").exists():
        return None
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=10, check=True).stdout.strip()
        status = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": commit, "dirty": bool(status.strip())}


def libraries(names=LIBRARIES) -> dict:
    """``{distribution: version}`` of the installed ones among ``names`` (missing ones left out).

    Examples
    --------
    >>> "numpy" in libraries(["numpy", "no-such-distribution"])
    True
    """
    out = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def machine(*, gpu: bool = True) -> dict:
    """The machine: OS, CPU model and cores, memory, and with ``gpu`` every visible CUDA card
    (name, memory, CUDA version) -- ``torch.cuda`` is asked only when torch is already imported
    or ``gpu`` is true, and it creates no CUDA context for the count.

    Examples
    --------
    >>> m = machine(gpu=False)
    >>> sorted(m) == ["cores", "cpu", "gpus", "memory_gib", "platform"], m["gpus"]
    (True, [])
    """
    from .device import _cpu_name, _host_memory_gib

    info = {"platform": platform.platform(), "cpu": _cpu_name(), "cores": os.cpu_count(),
            "memory_gib": _host_memory_gib(), "gpus": []}
    if gpu:
        try:
            import torch

            if torch.cuda.is_available():
                for i in range(torch.cuda.device_count()):
                    props = torch.cuda.get_device_properties(i)
                    info["gpus"].append({"name": props.name, "memory_gib": round(props.total_memory / 2**30, 1),
                                         "cuda": torch.version.cuda})
        except Exception:  # noqa: BLE001 -- a broken CUDA setup must not stop a run from being recorded
            pass
    return info


def _is_int(value) -> bool:
    """An integer (a NumPy one too), not a boolean."""
    from numbers import Integral

    return isinstance(value, Integral) and not isinstance(value, bool)


def seeds(params: dict) -> dict:
    """The run's seeds among its parameters ``params``: ``{name: value}``, in the parameters' order.

    The rule, right for the six notebooks' parameters:

    - ``seed`` and every ``*_seed`` holding an integer is a seed (every notebook's ``seed``);
    - ``seeds`` and every ``*_seeds`` holding a list (or tuple) of integers is a list of seeds
      (02's RS protocol ``seeds``, 05's ``seeds``);
    - ``seeds`` / ``*_seeds`` holding an integer is a *count* of seeds (01's ``cl_seeds``, 03's
      ``verdict_seeds``, 04's ``seeds``: the seeds ``seed``, ``seed + 1``, ... that the count
      implies are fixed by ``seed``, which is recorded) and is left out, as is a value of any other
      type (``None``, a string, a boolean) under those names.

    Parameters
    ----------
    params : dict
        The run's parameters (``name -> value``); only the top-level names are read.

    Returns
    -------
    dict
        ``{name: value}`` (lists as lists); empty when the run has no seed parameter.

    Examples
    --------
    >>> seeds({"seed": 0, "seeds": [0, 42, 1993], "num_null": 5, "lr": 0.1})
    {'seed': 0, 'seeds': [0, 42, 1993]}
    >>> seeds({"cl_seeds": 7, "seed": 0, "data_seed": 3, "verdict_seeds": 8, "use_seed": True})
    {'seed': 0, 'data_seed': 3}
    """
    out = {}
    for name, value in (params or {}).items():
        if not isinstance(name, str):
            continue
        if (name == "seed" or name.endswith("_seed")) and _is_int(value):
            out[name] = int(value)
        elif (name == "seeds" or name.endswith("_seeds")) and isinstance(value, (list, tuple)) \
                and all(_is_int(v) for v in value):
            out[name] = [int(v) for v in value]
    return out


def manifest(*, gpu: bool = True, params: dict | None = None) -> dict:
    """Everything above in one dict: ``clkit``, ``git``, ``python``, ``libraries``, ``machine``, and
    ``data_files``: every data file this process read, ``{"path", "sha256", "bytes"}`` each
    (:func:`clkit.data._reads.data_files`; empty when the run generated its data); given the run's
    ``params``, also ``seeds``: its seeds, :func:`seeds` (issue 42).

    Examples
    --------
    >>> m = manifest(gpu=False)
    >>> sorted(m), m["python"] == platform.python_version()
    (['clkit', 'data_files', 'git', 'libraries', 'machine', 'python'], True)
    >>> manifest(gpu=False, params={"seed": 3, "seeds": 6})["seeds"]
    {'seed': 3}
    """
    from .data._reads import data_files

    out = {"clkit": version(), "git": git_state(), "python": platform.python_version(),
           "libraries": libraries(), "machine": machine(gpu=gpu), "data_files": data_files()}
    if params is not None:
        out["seeds"] = seeds(params)
    return out


def differences(manifests: dict) -> list[str]:
    """What differs among runs' manifests, one line per field: ``{run name: manifest or None}`` in.

    Compared: clkit's version, the git commit and dirty flag, Python, each library's version,
    the CPU model, the GPU names, and the SHA-256 of each data file among the runs that read
    it (a file only some runs read is a choice of data, not a difference; shown by its first
    12 hex digits). A run without a manifest (written by an older clkit) is named as such.

    Examples
    --------
    >>> a = {"clkit": "0.1.0", "python": "3.11.7", "libraries": {"torch": "2.14.1"}}
    >>> differences({"r1": a, "r2": {**a, "libraries": {"torch": "2.11.0"}}, "r3": None})
    ['torch: 2.14.1 (r1), 2.11.0 (r2)', 'no manifest (written by an older clkit): r3']
    >>> f = {"path": "<data>/x.csv", "sha256": "ab" * 32, "bytes": 10}
    >>> differences({"r1": {**a, "data_files": [f]}, "r2": {**a, "data_files": [{**f, "sha256": "cd" * 32}]},
    ...              "r3": {**a, "data_files": []}})
    ['data <data>/x.csv: sha256 abababababab (r1), cdcdcdcdcdcd (r2)']
    """
    lines, missing = [], [name for name, m in manifests.items() if not m]
    present = {name: m for name, m in manifests.items() if m}

    def field(get):
        return {name: get(m) for name, m in present.items()}

    fields = {"clkit": field(lambda m: m.get("clkit")),
              "git commit": field(lambda m: (m.get("git") or {}).get("commit")),
              "uncommitted changes": field(lambda m: (m.get("git") or {}).get("dirty")),
              "python": field(lambda m: m.get("python")),
              "cpu": field(lambda m: (m.get("machine") or {}).get("cpu")),
              "gpus": field(lambda m: ", ".join(g["name"] for g in (m.get("machine") or {}).get("gpus", []))
                            or None)}
    libs = sorted({lib for m in present.values() for lib in (m.get("libraries") or {})})
    for lib in libs:
        fields[lib] = field(lambda m, lib=lib: (m.get("libraries") or {}).get(lib))
    read = {name: {f.get("path"): f.get("sha256") for f in (m.get("data_files") or []) if isinstance(f, dict)}
            for name, m in present.items()}
    for path in sorted({p for files in read.values() for p in files if p}):
        fields[f"data {path}"] = {name: (files[path] or "unreadable")[:12] for name, files in read.items()
                                  if path in files}
    for label, values in fields.items():
        seen = {}
        for name, value in values.items():
            seen.setdefault(value, []).append(name)
        if len(seen) > 1:
            lines.append(f"{label}: " + ("sha256 " if label.startswith("data ") else "") + ", ".join(f"{v} ({', '.join(names[:3])}{', ...' if len(names) > 3 else ''})"
                                                  for v, names in seen.items()))
    if missing:
        lines.append(f"no manifest (written by an older clkit): {', '.join(missing[:5])}"
                     + (f" and {len(missing) - 5} more" if len(missing) > 5 else ""))
    return lines


if __name__ == "__main__":  # pragma: no cover
    import json

    json.dump(manifest(), sys.stdout, indent=1)
