"""Running a sweep's cases on Dask: a local cluster of processes or an existing scheduler.

Every case is one task, :func:`run_case`, which executes the notebook with
papermill (:func:`clkit.run.execute`) inside a Dask worker process (one thread per
worker on the local cluster, so a case gets one core). With
``scheduler="tcp://host:port"`` the same tasks go to an existing cluster
(``dask scheduler`` / ``dask worker``, dask-jobqueue, Kubernetes); its workers must
run the same clkit environment and see the sweep folder and the notebooks on a
shared file system (:mod:`clkit.cluster`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import sys
import threading
import time
import uuid
from pathlib import Path

from .. import __version__
from .._io import atomic_write_json
from .._signals import Terminated, stop_word
from .._validate import check_int
from ..cluster import (CONNECT_TIMEOUT_S, case_resources, check_gpu_workers, check_scheduler, close_client,
                       default_workers, start_client)
from .grid import expand_grid, load_grid, resolve_grid
from .store import (case_key, case_names, case_status, clean_line, clean_work, manifest_names,
                    make_work_dir, notebook_hash, publish_case, read_manifest, write_manifest)

__all__ = ["plan_sweep", "run_case", "run_sweep", "prepare_cases", "run_case_of", "SweepInterrupted",
           "submit_options", "CONNECT_TIMEOUT_S"]

TOPIC = "clkit-sweep"
#: the environment variable naming a case's checkpoint folder for the kernel (read by
#: :func:`clkit.taskification.resume.checkpoint_dir`)
CHECKPOINT_ENV = "CLKIT_CHECKPOINT_DIR"


def checkpoint_folder(root, key: str) -> Path:
    """The folder a case may checkpoint into, ``ROOT/.checkpoints/<key>``: it outlives the case's attempts
    (each runs in a fresh work folder) and goes once the case has finished.

    Examples
    --------
    >>> checkpoint_folder("out/nb", "ab12").as_posix()
    'out/nb/.checkpoints/ab12'
    """
    return Path(root) / ".checkpoints" / key


class CaseCancelled(RuntimeError):
    """A case stopped by an interrupt: nothing is published, it stays pending."""


class SweepInterrupted(KeyboardInterrupt):
    """Raised by :func:`run_sweep` after Ctrl-C (SIGINT), once workers are stopped.

    ``counts`` says what had finished; rerunning the same sweep resumes it.
    """

    def __init__(self, counts: dict, terminated: bool = False):
        super().__init__(f"sweep {'terminated (SIGTERM)' if terminated else 'interrupted'}: {counts}")
        self.counts = counts
        #: stopped by SIGTERM (``clkit sweep`` exits 143) rather than Ctrl-C (130)
        self.terminated = terminated


def plan_sweep(notebook: str, grid, params: str | None = None, out="runs/sweep") -> dict:
    """Resolve and check every case of a sweep before anything runs.

    Parameters
    ----------
    notebook : str
        Notebook stem or number prefix.
    grid : str, Path or dict
        Grid file, shipped grid name (``notebooks/grids/<notebook>/<name>.yaml``)
        or grid mapping (see :mod:`clkit.sweep.grid`).
    params : str, optional
        Base parameter set or YAML file; default the grid's ``params``, else ``default``
        (the notebook's own defaults when it has no ``default`` set).
    out : str or Path
        Sweep folder; the cases go to ``out/<notebook>/``.

    Returns
    -------
    dict
        The manifest: ``notebook``, ``notebook_path``, ``notebook_hash``,
        ``clkit``, ``params_set``, ``grid_params`` (names varied), ``root`` and
        ``cases`` (``index``, ``key``, ``name`` (its folder under ``root``,
        :func:`clkit.sweep.store.case_name`), ``case`` (the case as the grid gives it),
        ``params`` (base merged with the case: what papermill injects) and
        ``values`` (every varied parameter's value, notebook defaults filled in)).

    Raises
    ------
    ValueError, TypeError
        Bad grid file, empty grid, unknown parameter name or wrong value type,
        naming the case and the parameter.

    Examples
    --------
    >>> import tempfile
    >>> plan = plan_sweep("03", {"drift": [0.0, 0.5], "seed": [0, 1]}, params="smoke", out=tempfile.mkdtemp())
    >>> [c["values"] for c in plan["cases"]][:2], plan["cases"][0]["params"]["epochs"]
    ([{'drift': 0.0, 'seed': 0}, {'drift': 0.0, 'seed': 1}], 3)
    >>> len({c["key"] for c in plan["cases"]}), plan["cases"][1]["name"]
    (4, 'drift=0.0,seed=1')
    """
    from ..notebooks import (check_values, load_params, lookup, merge_params, notebook_parameters, notebook_path,
                             param_sets, resolve_notebook)

    notebook = resolve_notebook(notebook)
    where = "grid"
    if isinstance(grid, (str, Path)):
        grid = resolve_grid(notebook, str(grid))
        where = str(grid)
    g = load_grid(grid, where=where)
    base_set = params or g["params"] or "default"
    if base_set == "default" and "default" not in param_sets(notebook):
        base_set, base = "notebook defaults", {}
    else:
        base = load_params(notebook, base_set)
    declared = notebook_parameters(notebook)
    unknown = [n for n in g.names if n.split(".")[0] not in declared]
    if unknown:
        raise ValueError(f"{where}: {notebook} has no parameter(s) {unknown}; parameters: {sorted(declared)}")
    nb_path = notebook_path(notebook)
    nb_hash = notebook_hash(nb_path)
    root = Path(out) / notebook
    cases = []
    expanded = expand_grid(g)
    for i, (case, name) in enumerate(zip(expanded, case_names(expanded))):
        try:
            resolved = merge_params(notebook, base, case, declared)
            check_values(notebook, resolved, declared)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{where}, case {i} {case}: {exc}") from None
        cases.append({"index": i, "key": case_key(notebook, nb_hash, resolved, __version__), "name": name,
                      "case": case, "params": resolved,
                      "values": {n: lookup(resolved, n, declared) for n in g.names}})
    return {"notebook": notebook, "notebook_path": str(nb_path.resolve()), "notebook_hash": nb_hash,
            "clkit": __version__, "params_set": base_set, "description": g["description"],
            "grid_params": g.names, "root": str(root.resolve()), "cases": cases}


def _emit(event: str, key: str) -> None:
    try:
        from distributed import get_worker

        get_worker().log_event(TOPIC, {"event": event, "key": key})
    except (ImportError, ValueError):  # not inside a Dask worker
        pass


def _stopped(name: str | None) -> bool:
    """Whether the client set the Dask event ``name`` (Ctrl-C); False outside a cluster."""
    if not name:
        return False
    try:
        from distributed import Event, get_worker

        get_worker()
        return Event(name).is_set()
    except (ImportError, ValueError):
        return False


def run_case(spec: dict) -> dict:
    """Execute one case (the Dask task); return its ``run.json`` record.

    ``spec`` holds ``root``, ``key``, ``name``, ``index``, ``case``, ``params``,
    ``notebook`` and ``notebook_path``. The case runs in a fresh work folder
    which is published to ``root/<name>/`` in one rename once ``run.json`` is
    written. A failing cell, or a kernel that dies, gives ``status="failed"``
    with the error; an interrupt raises :class:`CaseCancelled` and leaves
    nothing behind but the case's checkpoints.

    The kernel sees ``CLKIT_CHECKPOINT_DIR`` = :func:`checkpoint_folder`: a notebook that
    checkpoints there (notebook 01's CL runs, :mod:`clkit.taskification.resume`) continues an
    attempt that was killed (a wall time, a requeued job) instead of starting over. The folder is
    removed once the case finished with ``status="ok"``; after a failure it is kept for the retry.
    """
    from ..run import execute

    root, key, name = Path(spec["root"]), spec["key"], spec["name"]
    done = case_status(root, key, name)
    if done["status"] == "ok":
        return done
    if _stopped(spec.get("stop_event")):
        raise CaseCancelled(f"sweep interrupted before case {spec['index']} started")
    work = make_work_dir(root)
    _emit("start", key)
    try:
        atomic_write_json(work / "case.json", {k: spec[k] for k in ("key", "name", "index", "case", "params",
                                                                    "notebook")}
                          | {"notebook_hash": spec.get("notebook_hash"), "clkit": __version__})
        t0 = time.perf_counter()
        ckpt, env_before = checkpoint_folder(root, key), os.environ.get(CHECKPOINT_ENV)
        os.environ[CHECKPOINT_ENV] = str(ckpt.resolve())   # one case at a time per worker process
        try:
            res = execute(spec["notebook_path"], work, spec["params"], progress=False)
        except Exception as exc:  # kernel died, could not start, ...
            res = {"status": "failed", "ename": type(exc).__name__,
                   "error": f"{spec['notebook']} could not run: {type(exc).__name__}: {exc}",
                   "runtime_s": round(time.perf_counter() - t0, 2)}
        finally:
            if env_before is None:
                os.environ.pop(CHECKPOINT_ENV, None)
            else:
                os.environ[CHECKPOINT_ENV] = env_before
        if res.get("ename") == "KeyboardInterrupt":  # Ctrl-C reached the kernel: not the notebook's fault
            raise CaseCancelled(res["error"])
        meta = {"key": key, "name": name, "index": spec["index"], "notebook": spec["notebook"], "case": spec["case"],
                "status": res["status"], "error": res["error"], "runtime_s": res["runtime_s"],
                "host": socket.gethostname(), "finished": time.strftime("%Y-%m-%dT%H:%M:%S")}
        atomic_write_json(work / "run.json", meta)
        publish_case(work, root, key, name)
        if res["status"] == "ok":   # finished: its checkpoints are spent
            shutil.rmtree(ckpt, ignore_errors=True)
            with contextlib.suppress(OSError):
                ckpt.parent.rmdir()   # .checkpoints/ goes when empty
        return meta
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    finally:
        _emit("end", key)


def prepare_cases(notebook: str, grid, params: str | None = None, out="runs/sweep") -> dict:
    """Plan a sweep for a job array: write its ``sweep.json`` and return the plan, nothing run.

    Each array task then runs one case with :func:`run_case_of` (``clkit run-case ROOT INDEX``): no
    Dask scheduler and no open ports, for sites that forbid them. Cases already complete stay so.

    Examples
    --------
    >>> import tempfile
    >>> plan = prepare_cases("03", {"seed": [0, 1]}, params="smoke", out=tempfile.mkdtemp())
    >>> [c["index"] for c in plan["cases"]], (Path(plan["root"]) / "sweep.json").exists()
    ([0, 1], True)
    """
    plan = plan_sweep(notebook, grid, params, out)
    root = Path(plan["root"])
    root.mkdir(parents=True, exist_ok=True)
    write_manifest(root, {k: v for k, v in plan.items() if k != "root"})
    return plan


def run_case_of(root, which) -> dict:
    """Run one case of a prepared sweep (:func:`prepare_cases`) in this process: ``which`` is its index
    (an array task id), its key or its folder name. Returns its ``run.json`` record; a complete case is
    not rerun. Work folders of dead processes on this host are removed first, said in one line on stderr
    (:func:`clkit.sweep.store.clean_work`).

    Raises ``ValueError`` when ``root`` holds no ``sweep.json``, when no case has that index or key, or
    when the notebook changed since the sweep was prepared (its cases' keys would no longer match).
    """
    root = Path(root)
    if not (root / "sweep.json").is_file():
        raise ValueError(f"{root} holds no sweep.json; prepare it first: clkit sweep NOTEBOOK --grid GRID "
                         f"--out OUT --print-cases (the cases go to OUT/<notebook>)")
    plan = read_manifest(root)
    cases = [{**c, "name": name} for c, name in zip(plan["cases"], manifest_names(plan))]
    text = str(which)
    found = [c for c in cases if (text.isdigit() and c["index"] == int(text)) or text in (c["key"], c["name"])]
    if not found:
        raise ValueError(f"case {which!r}: the sweep in {root} has cases 0..{len(cases) - 1} "
                         f"(or their keys or folder names, e.g. {cases[0]['key']} or {cases[0]['name']})")
    if notebook_hash(plan["notebook_path"]) != plan["notebook_hash"]:
        raise ValueError(f"{plan['notebook_path']} changed since this sweep was prepared; prepare it again "
                         "(--print-cases) so every case runs the same notebook")
    case = found[0]
    _clean(root)
    try:
        return run_case({**case, "root": str(root), "notebook": plan["notebook"],
                         "notebook_path": plan["notebook_path"], "notebook_hash": plan["notebook_hash"]})
    finally:
        clean_work(root)  # .work/ goes when empty


def run_sweep(notebook: str, grid, params: str | None = None, out="runs/sweep", workers: int | None = None,
              scheduler: str | None = None, retry_failed: bool = False, progress: bool | None = None,
              log=print) -> dict:
    """Run every pending case of a grid; skip complete ones.

    Parameters
    ----------
    notebook, grid, params, out
        As in :func:`plan_sweep`.
    workers : int, optional
        Local cluster size (default: the number of cores); ignored with ``scheduler``.
    scheduler : str, optional
        Address of an existing Dask scheduler (``tcp://host:port``).
    retry_failed : bool
        Also rerun cases whose earlier attempt failed (by default they are
        reported and skipped).
    progress : bool, optional
        Progress bar on stderr (default: when stderr is a terminal).
    log : callable
        Receives the report lines.

    Returns
    -------
    dict
        ``total``, ``skipped`` (complete before), ``done``, ``failed`` (list of
        ``{"index", "case", "error"}``, earlier failures included), ``wall_s``
        and ``root``.

    Each case goes to ``OUT/<notebook>/<name>/`` (:func:`clkit.sweep.store.case_name`).
    Before anything runs, work folders that killed workers left on this host are
    removed (those of a sweep running beside this one are kept), said in one line on
    stderr; a finished sweep leaves no ``.work/`` folder.

    Notes
    -----
    The local cluster starts its workers with ``spawn``: in a script, call this
    under ``if __name__ == "__main__":``.

    Raises
    ------
    SweepInterrupted
        On Ctrl-C, after the workers are stopped and unfinished work removed.
    ConnectionError
        When ``scheduler`` cannot be reached within ``CONNECT_TIMEOUT_S`` seconds.
    """
    t0 = time.perf_counter()
    workers = default_workers() if workers is None else check_int("workers", workers, low=1)
    check_scheduler(scheduler)
    plan = plan_sweep(notebook, grid, params, out)
    root = Path(plan["root"])
    root.mkdir(parents=True, exist_ok=True)
    write_manifest(root, {k: v for k, v in plan.items() if k != "root"})
    todo, skipped, failed = [], 0, []
    for c in plan["cases"]:
        st = case_status(root, c["key"], c["name"])
        if st["status"] == "ok":
            skipped += 1
        elif st["status"] == "failed" and not retry_failed:
            failed.append({"index": c["index"], "case": c["case"], "error": st.get("error"), "earlier": True})
        else:
            todo.append(c)
    _clean(root)
    counts = {"total": len(plan["cases"]), "skipped": skipped, "done": 0, "failed": failed,
              "root": str(root)}
    if todo:
        _execute(plan, todo, counts, workers, scheduler, progress, log)
    counts["wall_s"] = round(time.perf_counter() - t0, 2)
    for f in failed:
        log(f"[clkit] case {f['index']} {f['case']} failed{' earlier' if f.get('earlier') else ''}: {f['error']}")
    earlier = sum(1 for f in failed if f.get("earlier"))
    log(f"[clkit] sweep {plan['notebook']}: {counts['total']} cases: {counts['done']} run, "
        f"{skipped} already complete, {len(failed)} failed"
        f"{f' ({earlier} earlier; --retry-failed reruns them)' if earlier else ''} "
        f"in {counts['wall_s']:.1f} s -> {root}")
    return counts


def _clean(root) -> dict:
    """Remove leftover work folders of dead processes (:func:`clean_work`); one line on stderr if any."""
    cleaned = clean_work(root)
    line = clean_line(cleaned, root)
    if line:
        print(line, file=sys.stderr, flush=True)
    return cleaned


def _children() -> list:
    """This process's child processes (a local cluster's workers), as ``psutil.Process``; [] without psutil."""
    try:
        import psutil

        return psutil.Process().children(recursive=True)
    except Exception:  # noqa: BLE001 - psutil missing or a child went meanwhile
        return []


def _wait_gone(procs: list, timeout: float) -> None:
    """Wait up to ``timeout`` seconds for ``procs`` (a closed local cluster's workers) to exit."""
    if procs:
        import psutil

        psutil.wait_procs(procs, timeout=timeout)


def submit_options(spec: dict, run_id: str) -> dict:
    """``client.submit``'s keyword arguments for a case's task (besides the function and ``spec``).

    A task key unique to the case and to this sweep run, ``pure=False``, and
    ``resources={"GPU": 1}`` when the case's ``device`` is ``cuda`` or ``cuda:N``
    (:func:`clkit.cluster.case_resources`), so that it only starts on a GPU worker.

    Examples
    --------
    >>> submit_options({"key": "0123456789abcdef", "params": {"device": "cuda"}}, "run1")
    {'key': 'clkit-case-0123456789ab-run1', 'pure': False, 'resources': {'GPU': 1}}
    >>> submit_options({"key": "0123456789abcdef", "params": {"device": "auto"}}, "run1")
    {'key': 'clkit-case-0123456789ab-run1', 'pure': False}
    """
    options = {"key": f"clkit-case-{spec['key'][:12]}-{run_id}", "pure": False}
    resources = case_resources(spec.get("params"))
    if resources:
        options["resources"] = resources
    return options


def _check_gpus(client, specs: list, where: str) -> None:
    """:func:`clkit.cluster.check_gpu_workers` on the workers connected now (skipped while none is: batch jobs
    still queued, or a scheduler whose workers come later)."""
    workers = client.scheduler_info().get("workers", {})
    if workers:
        check_gpu_workers(specs, [w.get("resources") or {} for w in workers.values()], where)


def _execute(plan: dict, todo: list, counts: dict, workers: int, scheduler, progress, log) -> None:
    """Submit ``todo`` to Dask and collect results into ``counts`` (see :func:`run_sweep`)."""
    from distributed import Event
    from tqdm.auto import tqdm

    root = Path(plan["root"])
    client, cluster = start_client(workers, scheduler)
    workers_pids = _children() if cluster is not None else []
    running, lock = set(), threading.Lock()

    def on_event(event):
        msg = event[1] if isinstance(event, tuple) else event
        with lock:
            (running.add if msg.get("event") == "start" else running.discard)(msg.get("key"))

    specs = [{**c, "root": str(root), "notebook": plan["notebook"], "notebook_path": plan["notebook_path"],
              "notebook_hash": plan["notebook_hash"]} for c in todo]
    bar = tqdm(total=len(todo), desc=plan["notebook"], unit="case", file=sys.stderr,
               disable=not (sys.stderr.isatty() if progress is None else progress))
    where = scheduler or f"a local cluster of {workers} worker process(es)"
    try:
        _check_gpus(client, specs, f"the Dask cluster at {scheduler}" if scheduler else where)
    except ValueError:
        close_client(client, cluster)
        _wait_gone(workers_pids, timeout=10)
        raise
    log(f"[clkit] sweep {plan['notebook']}: {len(todo)} of {counts['total']} case(s) to run on {where}")
    futures = {}
    run_id = uuid.uuid4().hex[:8]
    try:
        try:
            client.subscribe_topic(TOPIC, on_event)
        except AttributeError:  # pragma: no cover - very old distributed
            pass
        for spec in specs:
            spec["stop_event"] = f"clkit-stop-{run_id}"
            fut = client.submit(run_case, spec, **submit_options(spec, run_id))
            futures[fut] = spec
        pending = set(futures)
        while pending:
            finished = [f for f in pending if f.done()]
            for fut in finished:
                pending.discard(fut)
                spec = futures[fut]
                try:
                    meta = fut.result()
                except Exception as exc:  # the worker died or the task could not run
                    meta = {"status": "failed", "error": f"{type(exc).__name__}: {exc}"}
                if meta["status"] == "ok":
                    counts["done"] += 1
                else:
                    counts["failed"].append({"index": spec["index"], "case": spec["case"], "error": meta["error"]})
                bar.update(1)
            with lock:
                n_running = len(running)
            bar.set_postfix(done=counts["done"], running=n_running, failed=len(counts["failed"]), refresh=False)
            bar.refresh()
            if pending:
                time.sleep(0.2)
    except KeyboardInterrupt as exc:
        bar.close()
        # Cases a worker has queued but not started see the event and return at once; the
        # running ones stop with their worker process.
        try:
            Event(f"clkit-stop-{run_id}", client=client).set()
            client.cancel(list(futures), force=True)
        except Exception:  # noqa: BLE001 - the cluster may already be going down
            pass
        close_client(client, cluster, topics=[TOPIC])
        _wait_gone(workers_pids, timeout=10)
        clean_work(root)  # the stopped workers' folders: said by the line below, not as leftovers
        status = [case_status(root, s["key"], s["name"])["status"] for s in specs]
        counts.update(done=status.count("ok"), pending=status.count("pending"))
        log(f"[clkit] {stop_word(exc)}: {counts['done']} case(s) finished and kept, {counts['pending']} not run; "
            "rerun the same command to resume")
        raise SweepInterrupted({k: (len(v) if isinstance(v, list) else v) for k, v in counts.items()},
                               terminated=isinstance(exc, Terminated)) from None
    bar.close()
    close_client(client, cluster, topics=[TOPIC])
    _wait_gone(workers_pids, timeout=10)
    clean_work(root)  # a worker that died mid-case left its folder; .work/ goes when empty
