"""``python -m clkit ...``: the ``clkit`` command (:mod:`clkit.cli`)."""

import sys

from .cli import main

sys.exit(main())
