"""Build step of the wheel: the kit's top-level resources become package data (one source, the checkout).

``pip install .`` / ``python -m build`` run this: the notebooks (``.ipynb`` with their paired
``.py``), their parameter sets, grids and course sources, and the shipped class-name lists are
copied from ``notebooks/`` and ``data/class_names/`` into ``clkit/_bundle/`` of the build, where
``clkit._io.resource_dir`` finds them when clkit runs outside a checkout. Everything else is in
``pyproject.toml``.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
#: (source in the checkout, destination under clkit/_bundle/)
RESOURCES = [("notebooks", "notebooks"), ("data/class_names", "data/class_names")]
SKIP = shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__", "*.pyc")


class BuildPyWithResources(build_py):
    """``build_py`` that also copies :data:`RESOURCES` into the built package."""

    def run(self):
        super().run()
        bundle = Path(self.build_lib) / "clkit" / "_bundle"
        for src, dest in RESOURCES:
            if (ROOT / src).is_dir():
                shutil.copytree(ROOT / src, bundle / dest, ignore=SKIP, dirs_exist_ok=True)


setup(cmdclass={"build_py": BuildPyWithResources})
