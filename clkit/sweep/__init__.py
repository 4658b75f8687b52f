"""Parameter sweeps: many notebook runs, resumable, on a local or remote Dask cluster.

``clkit sweep NOTEBOOK --grid GRID.yaml`` expands a grid file (:mod:`.grid`)
into cases, checks every case against the notebook's parameters cell, skips
cases already complete (:mod:`.store`), runs the rest as Dask tasks
(:mod:`.execute`) and tabulates them (:mod:`.table`, ``clkit summary``).
"""

from .execute import SweepInterrupted, plan_sweep, prepare_cases, run_case, run_case_of, run_sweep
from .grid import expand_grid, grid_files, load_grid, resolve_grid
from .store import case_key, case_status, notebook_hash
from .table import find_sweeps, group_table, sweep_table, write_table

__all__ = ["SweepInterrupted", "plan_sweep", "run_case", "run_sweep", "prepare_cases", "run_case_of", "expand_grid", "grid_files",
           "load_grid", "resolve_grid", "case_key", "case_status", "notebook_hash", "find_sweeps",
           "group_table", "sweep_table", "write_table"]
