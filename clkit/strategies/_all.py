"""Imports every strategy module so that each registers its name."""

from . import base  # noqa: F401
