"""Imports every strategy module so that each registers its name in :data:`.base._REGISTRY`."""

from . import distillation  # noqa: F401
from . import importance  # noqa: F401
from . import projection  # noqa: F401
from . import rehearsal  # noqa: F401
from . import task_free  # noqa: F401
from . import graph  # noqa: F401
from . import architectural  # noqa: F401
from . import generative  # noqa: F401
from . import prototype  # noqa: F401
from . import ranpac  # noqa: F401
from . import der  # noqa: F401
from . import icarl  # noqa: F401
from . import prompt  # noqa: F401
from . import foster  # noqa: F401
from . import memo  # noqa: F401
from . import tagfex  # noqa: F401
from . import coda_prompt  # noqa: F401
from . import hide_prompt  # noqa: F401
from . import ease  # noqa: F401
from . import mos  # noqa: F401
