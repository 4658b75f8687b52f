"""Runs into experiment trackers: an MLflow store or TensorBoard event files (``clkit export``).

``clkit export RUNS --to mlflow --out mlruns`` writes every run under ``RUNS`` (each
folder holding a ``results.json``: ``clkit run``'s run folders, a sweep's cases) as
one MLflow run, in one experiment per notebook; ``--to tensorboard --out tb`` writes
one TensorBoard run folder per run. What is written:

- parameters: ``params`` of ``results.json``, flattened with dots (lists and other
  non-scalars as JSON text); MLflow stores them as text of at most
  :data:`MLFLOW_PARAM_CHARS` characters, a longer value is cut with a note and the
  whole set is in the ``params.json`` artifact;
- metrics: every numeric scalar result, flattened as ``clkit summary`` flattens
  them (``metrics.<order>.<strategy>.ACC``), plus ``runtime_s`` and one
  ``verdict.<comparison>.effect`` per statistical verdict; names are cut down to the
  characters MLflow allows (:func:`metric_name`);
- tags (MLflow) / hparams (TensorBoard): notebook, parameter set, status, clkit
  version and git commit of the run's manifest;
- the verdicts as ``verdicts.json`` and ``verdicts.csv`` artifacts (TensorBoard: a
  text summary), the figures as artifacts under ``figures/`` (TensorBoard: images,
  the PNG bytes as saved), and ``results.json`` / ``run.json`` themselves.

Exporting again does not duplicate: each run is tagged with its folder and a digest
of its files; an unchanged run is skipped, a changed one replaced.

Both need the optional extra: ``pip install 'clkit[trackers]'`` (mlflow-skinny and
tensorboard). MLflow 3 refuses a plain-folder store unless ``MLFLOW_ALLOW_FILE_STORE``
is ``true``; :func:`export_runs` sets it for the folder it writes (reading it back,
set it too), and ``--out`` may instead be any tracking URI (``sqlite:///mlflow.db``,
``http://host:5000``).
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import math
import os
import re
import struct
import tempfile
from datetime import datetime
from pathlib import Path

from ._io import atomic_write_json, flatten_scalars, replace_dir

__all__ = ["TARGETS", "INSTALL_HINT", "MLFLOW_PARAM_CHARS", "find_runs", "flatten_params", "metric_name",
           "run_metrics", "export_runs"]

#: where ``clkit export`` writes
TARGETS = ("mlflow", "tensorboard")
#: what a user types when the trackers are not installed
INSTALL_HINT = "pip install 'clkit[trackers]'"
#: MLflow's longest parameter value (mlflow.utils.validation.MAX_PARAM_VAL_LENGTH)
MLFLOW_PARAM_CHARS = 6000
_MLFLOW_TAG_CHARS = 8000
_MLFLOW_KEY_CHARS = 250
_TRUNCATED = " ...[cut; the whole value is in the params.json artifact]"
#: nesting levels of results flattened into metrics (as ``clkit summary``'s columns)
_DEPTH = 5
_DIGEST_FILE = "clkit-export.json"
_VERDICT_COLUMNS = ("comparison", "decision", "effect", "ci_low", "ci_high", "p", "n", "role", "expect",
                    "control_ok", "family", "scope", "wording")


def _missing(exc: ImportError, what: str) -> ImportError:
    return ImportError(f"clkit export --to {what} needs the trackers extra: {INSTALL_HINT} ({exc})")


def find_runs(folder, figures=None) -> list[dict]:
    """The runs under ``folder``: one dict per ``results.json`` found (the folder itself included).

    Each dict holds ``name`` (the folder relative to ``folder``, or the notebook's name for
    ``folder`` itself), ``key`` (the absolute folder), ``dir``, ``record`` (``results.json``),
    ``meta`` (``run.json``, or ``{}``), ``notebook``, ``figures`` (the PNG files found: the
    names ``results.json`` lists, looked up in the run's ``figures/`` folder, the run folder
    and ``FIGURES/<notebook>/``, plus any other file in the run's ``figures/``) and
    ``digest`` (of these files, for re-exports).

    Parameters
    ----------
    folder : str or Path
        A run folder, or a folder of runs or sweeps.
    figures : str or Path, optional
        The ``--figures DIR`` the runs were made with (figures in ``DIR/<notebook>/``).

    Raises
    ------
    ValueError
        ``folder`` does not exist or holds no ``results.json``.

    Examples
    --------
    >>> import json, tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> (d / "a").mkdir(); _ = (d / "a" / "results.json").write_text(json.dumps({"notebook": "nb", "results": {}}))
    >>> [(r["name"], r["notebook"], r["figures"]) for r in find_runs(d)]
    [('a', 'nb', [])]
    >>> find_runs(d / "none")
    Traceback (most recent call last):
    ...
    ValueError: runs must be a folder holding results.json files, got '.../none' (no such folder)
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"runs must be a folder holding results.json files, got {str(folder)!r} (no such folder)")
    runs = []
    for res in sorted(folder.rglob("results.json")):
        if any(part.startswith(".") for part in res.relative_to(folder).parts[:-1]):
            continue   # a run being written (.partial) or put aside
        try:
            record = json.loads(res.read_text())
        except (OSError, ValueError) as exc:
            raise ValueError(f"runs: {res} is not a readable results.json ({exc})") from None
        d = res.parent
        meta = {}
        if (d / "run.json").exists():
            try:
                meta = json.loads((d / "run.json").read_text())
            except ValueError:
                meta = {}
        notebook = str(record.get("notebook") or meta.get("notebook") or d.name)
        rel = d.relative_to(folder).as_posix()
        found = []
        places = [d / "figures", d] + ([Path(figures) / notebook] if figures is not None else [])
        for name in record.get("figures") or []:
            hit = next((p / Path(name).name for p in places if (p / Path(name).name).is_file()), None)
            if hit is not None and hit not in found:
                found.append(hit)
        if (d / "figures").is_dir():
            found += [p for p in sorted((d / "figures").iterdir()) if p.suffix.lower() == ".png" and p not in found]
        h = hashlib.sha256()
        for p in [res, d / "run.json", *found]:
            if p.is_file():
                h.update(p.name.encode() + b"\0" + p.read_bytes())
        runs.append({"name": notebook if rel == "." else rel, "key": str(d.resolve()), "dir": d, "record": record,
                     "meta": meta, "notebook": notebook, "figures": found, "digest": h.hexdigest()[:16]})
    if not runs:
        raise ValueError(f"runs: no results.json found under {str(folder)!r} (give a clkit run or sweep folder)")
    return runs


def flatten_params(params: dict, prefix: str = "") -> dict:
    """Parameters as ``{dotted name: text}``: nested dicts joined with dots, other values as JSON text.

    Examples
    --------
    >>> flatten_params({"seed": 0, "learners": ["naive", "ewc"], "opt": {"lr": 0.1, "name": "sgd"}, "x": None})
    {'seed': '0', 'learners': '["naive", "ewc"]', 'opt.lr': '0.1', 'opt.name': 'sgd', 'x': 'null'}
    """
    out = {}
    for k, v in params.items():
        if isinstance(v, dict) and v:
            out.update(flatten_params(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, sort_keys=True)
    return out


def metric_name(name: str) -> str:
    """``name`` in the characters MLflow allows in metric and parameter names (letters, digits, ``_ - . /``
    and spaces; ``:`` is refused on Windows, so it goes too), at most 250 of them, kept readable: the minus
    sign ``−`` becomes ``-``, brackets go, and ``: `` becomes `` / `` (a group in MLflow's UI); what is left
    outside the allowed characters becomes ``_`` (issue 55: names read ``verdict.ACC _all seen__ ewc _
    naive.effect``).

    Examples
    --------
    >>> metric_name("verdict.TAS: finetune − ewc (seeds).effect")
    'verdict.TAS / finetune - ewc seeds.effect'
    >>> metric_name("verdict.ACC (all seen): ewc − naive.p")
    'verdict.ACC all seen / ewc - naive.p'
    >>> metric_name("../x//y/")
    'x/y'
    """
    s = str(name).replace("−", "-").replace("–", "-").replace("×", "x")
    s = re.sub(r"\s*:\s+", " / ", s)
    s = re.sub(r"[()\[\]{}]", " ", s)
    s = re.sub(r" +", " ", s).replace(" .", ".")
    s = re.sub(r"[^\w.\- /]", "_", s)
    s = "/".join(part for part in s.split("/") if part.strip(". ")).strip()
    return (s.lstrip(".") or "_")[:_MLFLOW_KEY_CHARS]


def _unique(names: dict) -> dict:
    """``{original: sanitised}`` made one-to-one by suffixes ``~2``, ``~3`` ... on sanitised clashes."""
    seen, out = {}, {}
    for orig, clean in names.items():
        n, c = seen.get(clean, 0) + 1, clean
        seen[clean] = n
        if n > 1:
            c = f"{clean[:_MLFLOW_KEY_CHARS - 5]}~{n}"
        out[orig] = c
    return out


def _verdicts(record: dict) -> list[dict]:
    from .plan import verdict_rows

    return verdict_rows(record)


def run_metrics(run: dict) -> dict:
    """The numeric scalars of a run (as :func:`find_runs` gives it): ``{name: float}`` -- the results
    flattened (booleans and text left out), ``runtime_s`` from ``run.json`` and
    per verdict ``verdict.<comparison>.effect``, ``.ci_low``, ``.ci_high``, ``.p`` and ``.finding`` (1 when
    the decision is a finding, 0 for "no difference"; the decision's words are a tag,
    :func:`verdict_tags`). Names are not yet sanitised.

    Examples
    --------
    >>> run = {"record": {"results": {"acc": 0.5, "ok": True, "m": {"bwt": -0.1}, "txt": "x",
    ...        "verdicts": [{"comparison": "A − B", "decision": "higher", "effect": 0.2}]}},
    ...        "meta": {"runtime_s": 3.5}}
    >>> run_metrics(run)
    {'acc': 0.5, 'm.bwt': -0.1, 'runtime_s': 3.5, 'verdict.A − B.effect': 0.2, 'verdict.A − B.finding': 1.0}
    """
    out = {k: float(v) for k, v in flatten_scalars(run["record"].get("results") or {}, depth=_DEPTH).items()
           if isinstance(v, (int, float)) and not isinstance(v, bool)}
    rt = (run.get("meta") or {}).get("runtime_s")
    if isinstance(rt, (int, float)) and not isinstance(rt, bool):
        out["runtime_s"] = float(rt)
    for v in _verdicts(run["record"]):
        base = f"verdict.{v.get('comparison')}"
        while f"{base}.effect" in out or f"{base}.finding" in out:
            base += "~"
        for field in ("effect", "ci_low", "ci_high", "p"):
            x = v.get(field)
            if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x):
                out[f"{base}.{field}"] = float(x)
        decision = v.get("decision")
        if isinstance(decision, str) and decision not in ("not testable",):
            out[f"{base}.finding"] = 0.0 if decision == "no difference" else 1.0
    return out


def verdict_tags(run: dict) -> dict:
    """``{"verdict.<comparison>.decision": words}`` per verdict (tags: MLflow metrics hold numbers only).

    Examples
    --------
    >>> verdict_tags({"record": {"results": {"verdicts": [{"comparison": "A − B", "decision": "A higher"}]}}})
    {'verdict.A - B.decision': 'A higher'}
    """
    out = {}
    for v in _verdicts(run["record"]):
        if isinstance(v.get("decision"), str):
            out[metric_name(f"verdict.{v.get('comparison')}.decision")] = v["decision"][:_MLFLOW_TAG_CHARS]
    return out


def _tags(run: dict) -> dict:
    """What a run is: notebook, parameter set, status, clkit version and commit (manifest), source folder."""
    rec, meta = run["record"], run["meta"]
    man = rec.get("manifest") or meta.get("manifest") or {}
    git = man.get("git") or {}
    tags = {"clkit.notebook": run["notebook"], "clkit.params_set": meta.get("params_set"),
            "clkit.status": meta.get("status") or ("ok" if not meta else None), "clkit.version": man.get("clkit"),
            "clkit.git_commit": git.get("commit"), "clkit.git_dirty": git.get("dirty"),
            "clkit.python": man.get("python"), "clkit.run": run["name"], "clkit.source": run["key"],
            "clkit.digest": run["digest"]}
    paper = rec.get("paper")
    if isinstance(paper, dict):
        paper = paper.get("title") or paper.get("key")
    if isinstance(paper, str):
        tags["clkit.paper"] = paper
    return {k: str(v) for k, v in tags.items() if v is not None}


def _times_ms(meta: dict) -> tuple[int | None, int | None]:
    """(start, end) of the run in ms since the epoch, from ``run.json``'s ``finished`` and ``runtime_s``."""
    try:
        end = datetime.fromisoformat(str(meta["finished"])).timestamp()
    except (KeyError, ValueError, TypeError):
        return None, None
    rt = meta.get("runtime_s") if isinstance(meta.get("runtime_s"), (int, float)) else 0.0
    return int((end - rt) * 1000), int(end * 1000)


def _verdict_files(rows: list[dict], folder: Path) -> list[Path]:
    if not rows:
        return []
    js = atomic_write_json(folder / "verdicts.json", rows)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=_VERDICT_COLUMNS, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    (folder / "verdicts.csv").write_text(buf.getvalue(), encoding="utf-8")
    return [js, folder / "verdicts.csv"]


@contextlib.contextmanager
def _file_store_allowed():
    """MLflow 3 refuses a plain-folder store unless ``MLFLOW_ALLOW_FILE_STORE`` is true: allow it for the block."""
    old = os.environ.get("MLFLOW_ALLOW_FILE_STORE")
    os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("MLFLOW_ALLOW_FILE_STORE", None)
        else:
            os.environ["MLFLOW_ALLOW_FILE_STORE"] = old


def tracking_uri(out) -> str:
    """The MLflow tracking URI of ``--out``: a URI as given, a folder as ``file:`` URI of its absolute path.

    Examples
    --------
    >>> tracking_uri("sqlite:///mlflow.db")
    'sqlite:///mlflow.db'
    >>> tracking_uri("/tmp/mlruns")
    'file:///tmp/mlruns'
    """
    out = str(out)
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", out) and not re.match(r"^[A-Za-z]:[\\/]", out):
        return out
    return Path(out).resolve().as_uri()


def _export_mlflow(runs, out, log, counts: dict) -> dict:
    try:
        from mlflow.entities import Metric, Param
        from mlflow.tracking import MlflowClient
    except ImportError as exc:
        raise _missing(exc, "mlflow") from None
    uri = tracking_uri(out)
    with _file_store_allowed():
        client = MlflowClient(tracking_uri=uri)
        for run in runs:
            exp = client.get_experiment_by_name(run["notebook"])
            exp_id = exp.experiment_id if exp is not None else client.create_experiment(run["notebook"])
            old = [r for r in _all_runs(client, exp_id) if r.data.tags.get("clkit.source") == run["key"]]
            if any(r.data.tags.get("clkit.digest") == run["digest"] for r in old):
                counts["unchanged"] += 1
                log(f"[clkit] unchanged: {run['name']} (experiment {run['notebook']})")
                continue
            start, end = _times_ms(run["meta"])
            tags = {k: v[:_MLFLOW_TAG_CHARS] for k, v in {**_tags(run), **verdict_tags(run)}.items()}
            created = client.create_run(exp_id, start_time=start, tags=tags, run_name=run["name"])
            rid = created.info.run_id
            try:
                params = flatten_params(run["record"].get("params") or {})
                names = _unique({k: metric_name(k) for k in params})
                plist = [Param(names[k], v if len(v) <= MLFLOW_PARAM_CHARS
                               else v[:MLFLOW_PARAM_CHARS - len(_TRUNCATED)] + _TRUNCATED) for k, v in params.items()]
                metrics = run_metrics(run)
                mnames = _unique({k: metric_name(k) for k in metrics})
                ts = end if end is not None else start or 0
                mlist = [Metric(mnames[k], v, ts, 0) for k, v in metrics.items()]
                for i in range(0, len(plist), 100):
                    client.log_batch(rid, params=plist[i:i + 100])
                for i in range(0, len(mlist), 1000):
                    client.log_batch(rid, metrics=mlist[i:i + 1000])
                with tempfile.TemporaryDirectory() as tmp:
                    tmp = Path(tmp)
                    atomic_write_json(tmp / "params.json", run["record"].get("params") or {})
                    for f in [tmp / "params.json", *_verdict_files(_verdicts(run["record"]), tmp)]:
                        client.log_artifact(rid, str(f))
                for name in ("results.json", "run.json"):
                    if (run["dir"] / name).is_file():
                        client.log_artifact(rid, str(run["dir"] / name), "clkit")
                for fig in run["figures"]:
                    client.log_artifact(rid, str(fig), "figures")
                client.set_terminated(rid, "FINISHED", end_time=end)
            except BaseException:
                client.delete_run(rid)   # no half-written run left behind
                raise
            for r in old:
                client.delete_run(r.info.run_id)
            counts["replaced" if old else "written"] += 1
            log(f"[clkit] {'replaced' if old else 'written'}: {run['name']} -> experiment {run['notebook']} "
                f"(run {rid[:8]}: {len(plist)} params, {len(mlist)} metrics, {len(run['figures'])} figures)")
    return counts


def _all_runs(client, exp_id) -> list:
    out, token = [], None
    while True:
        page = client.search_runs([exp_id], max_results=1000, page_token=token)
        out += list(page)
        token = page.token
        if not token:
            return out


def _png_size(data: bytes) -> tuple[int, int, int]:
    """(height, width, channels) of PNG bytes, from the IHDR header."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG file")
    width, height = struct.unpack(">II", data[16:24])
    channels = {0: 1, 2: 3, 3: 3, 4: 2, 6: 4}.get(data[25], 4)
    return height, width, channels


def _export_tensorboard(runs, out, log, counts: dict) -> dict:
    try:
        from tensorboard.compat.proto.summary_pb2 import Summary
        from torch.utils.tensorboard import SummaryWriter
        from torch.utils.tensorboard.summary import hparams
    except ImportError as exc:
        raise _missing(exc, "tensorboard") from None
    out = Path(out)
    for run in runs:
        dest = out / run["name"]
        stamp = dest / _DIGEST_FILE
        old = None
        if stamp.is_file():
            with contextlib.suppress(ValueError, OSError):
                old = json.loads(stamp.read_text()).get("digest")
        if old == run["digest"]:
            counts["unchanged"] += 1
            log(f"[clkit] unchanged: {run['name']}")
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
        try:
            _, end = _times_ms(run["meta"])
            wall = end / 1000 if end is not None else None
            metrics = run_metrics(run)
            w = SummaryWriter(log_dir=str(tmp))
            for k, v in metrics.items():
                w.add_scalar(k, v, global_step=0, walltime=wall)
            hp = {k: v for k, v in flatten_params(run["record"].get("params") or {}).items()}
            hp.update({k: v for k, v in _tags(run).items() if k not in ("clkit.source", "clkit.digest")})
            for s in hparams(hp, metrics):
                w.file_writer.add_summary(s, walltime=wall)
            for fig in run["figures"]:
                data = fig.read_bytes()
                try:
                    h, wd, ch = _png_size(data)
                except ValueError:
                    continue
                img = Summary.Image(height=h, width=wd, colorspace=ch, encoded_image_string=data)
                w.file_writer.add_summary(Summary(value=[Summary.Value(tag=f"figures/{fig.stem}", image=img)]),
                                          global_step=0, walltime=wall)
            rows = _verdicts(run["record"])
            if rows:
                head = ["comparison", "decision", "effect", "ci_low", "ci_high", "p", "n"]
                lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
                lines += ["| " + " | ".join(_cell(r.get(c)) for c in head) + " |" for r in rows]
                w.add_text("verdicts", "\n".join(lines), global_step=0, walltime=wall)
            w.close()
            atomic_write_json(tmp / _DIGEST_FILE, {"digest": run["digest"], "source": run["key"]})
            replace_dir(tmp, dest)
        except BaseException:
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)
            raise
        counts["replaced" if old else "written"] += 1
        log(f"[clkit] {'replaced' if old else 'written'}: {run['name']} -> {dest} "
            f"({len(metrics)} scalars, {len(run['figures'])} figures)")
    return counts


def _cell(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return "" if v is None else str(v).replace("|", "/")


def how_to_open(to: str, out) -> str:
    """The command that shows what :func:`export_runs` wrote (issue 55: the export did not say).

    Examples
    --------
    >>> how_to_open("tensorboard", "tb")
    'open it with: tensorboard --logdir tb'
    >>> how_to_open("mlflow", "sqlite:///mlflow.db")
    'open it with: mlflow ui --backend-store-uri sqlite:///mlflow.db'
    >>> how_to_open("mlflow", "/runs/mlruns")
    'open it with: MLFLOW_ALLOW_FILE_STORE=true mlflow ui --backend-store-uri file:///runs/mlruns'
    """
    if to == "tensorboard":
        return f"open it with: tensorboard --logdir {out}"
    uri = tracking_uri(out)
    env = "MLFLOW_ALLOW_FILE_STORE=true " if uri.startswith("file:") else ""
    return f"open it with: {env}mlflow ui --backend-store-uri {uri}"


def export_runs(runs, to: str, out, *, figures=None, log=print) -> dict:
    """Write the runs under ``runs`` to an MLflow store or TensorBoard event files.

    Parameters
    ----------
    runs : str or Path
        A run folder or a folder of runs or sweeps (every ``results.json`` under it).
    to : {"mlflow", "tensorboard"}
        The tracker.
    out : str or Path
        MLflow: a folder (a file store, created if needed) or a tracking URI; TensorBoard: the
        log folder, one subfolder per run (point ``tensorboard --logdir`` at it).
    figures : str or Path, optional
        The ``--figures DIR`` the runs were made with, when their figures are not in the run folders.
    log : callable
        Called with one line per run.

    Returns
    -------
    dict
        ``written``, ``replaced`` and ``unchanged`` run counts.

    Raises
    ------
    ValueError
        ``to`` is not one of :data:`TARGETS`, or ``runs`` holds no run.
    ImportError
        The trackers extra is not installed (the message says ``pip install 'clkit[trackers]'``).

    Examples
    --------
    >>> export_runs("runs", to="wandb", out="x")
    Traceback (most recent call last):
    ...
    ValueError: to must be one of 'mlflow', 'tensorboard', got 'wandb'
    """
    if to not in TARGETS:
        raise ValueError(f"to must be one of {', '.join(map(repr, TARGETS))}, got {to!r}")
    if out is None or str(out) == "":
        raise ValueError(f"out must be a folder or tracking URI, got {out!r}")
    found = find_runs(runs, figures=figures)
    counts = {"written": 0, "replaced": 0, "unchanged": 0}
    return (_export_mlflow if to == "mlflow" else _export_tensorboard)(found, out, log, counts)
