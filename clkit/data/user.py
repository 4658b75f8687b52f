"""The user's own data for each protocol, through the same validation as the shipped data.

- :func:`load_stream_table` -- a time-indexed stream from CSV or Parquet (01 taskification,
  ``clkit taskify bps``) -> :class:`~clkit.data.timeseries.TimeSeriesData`;
- :func:`load_class_names_file` -- class names from a text file (one per line) or a YAML
  list (02 EDGE, ``clkit edge orders``);
- :func:`load_image_folder` -- a torchvision ``ImageFolder`` tree (02 ground truth,
  04 tasks) -> :class:`~clkit.data.images.ImageDataset`; :func:`imagefolder_enumerable`
  shapes it like ``clkit.edge.experiment.load_enumerable_data``;
- :func:`load_matrix_csv` -- an accuracy matrix A(t, tau) or R[i, j] from CSV (03 without
  training, ``clkit metrics``);
- :func:`load_period_table` -- a period-labelled table (period column, feature columns,
  label column) -> :class:`~clkit.data.temporal.PeriodDataset` (03 training);
- :func:`load_graph_file` / :func:`load_graph_class` -- a torch-geometric ``Data`` saved
  with ``torch.save``, or a torch-geometric dataset class by import path and root (05,
  ``clkit drift stream``) -> :class:`~clkit.data.graphs.GraphData`;
- :func:`load_labels` -- node labels from ``.npy`` (``clkit drift stream``).

Every malformed input raises ``ValueError`` (``FileNotFoundError`` for a missing path)
naming the file, the column or the value, and what is allowed.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np

from .._io import check_lines, read_text
from ._reads import record_read

__all__ = ["is_user_path", "load_stream_table", "load_class_names_file", "load_image_folder",
           "imagefolder_enumerable", "load_matrix_csv", "load_period_table", "load_graph_file",
           "load_graph_class", "load_graph_source", "load_labels"]

TABLE_SUFFIXES = (".csv", ".parquet", ".pq")
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp", ".ppm", ".pgm")


def is_user_path(value) -> bool:
    """Whether a dataset parameter names a file or folder (contains '/' or a file suffix).

    Examples
    --------
    >>> is_user_path("rainfall"), is_user_path("my/stream.csv"), is_user_path("a.pt")
    (False, True, True)
    """
    if not isinstance(value, str):
        return False
    return "/" in value or "\\" in value or Path(value).suffix.lower() in (*TABLE_SUFFIXES, ".pt", ".npy", ".txt",
                                                                           ".yaml", ".yml")


def resolve_path(path) -> Path:
    """``path``, or a relative path that does not exist here resolved against ``$PWD``.

    ``clkit run`` executes a notebook in ``notebooks/``; ``$PWD`` still names the folder
    the command was started from, so relative paths typed in the shell work.
    """
    p = Path(path).expanduser()
    if not p.is_absolute() and not p.exists() and os.environ.get("PWD"):
        q = Path(os.environ["PWD"]) / p
        if q.exists():
            return q
    return p


def _existing(path, what: str, *, folder: bool = False) -> Path:
    p = resolve_path(path)
    if not p.exists():
        where = f" (looked in {os.getcwd()!r} and $PWD)" if not p.is_absolute() else ""
        raise FileNotFoundError(f"{what}: {str(p)!r} does not exist{where}")
    if folder and not p.is_dir():
        raise ValueError(f"{what}: {str(p)!r} is not a folder")
    if not folder and p.is_dir():
        raise ValueError(f"{what}: {str(p)!r} is a folder, expected a file")
    if not folder:
        record_read(p)   # the caller reads it next (a file it cannot read raises there)
    return p


def _read_table(path, what: str):
    import pandas as pd

    p = _existing(path, what)
    suffix = p.suffix.lower()
    if suffix not in TABLE_SUFFIXES:
        raise ValueError(f"{what}: {str(p)!r} must be a CSV or Parquet file (suffix one of {list(TABLE_SUFFIXES)})")
    if suffix == ".csv":
        check_lines(p, what)   # a line longer than clkit._io.MAX_LINE_BYTES is refused before pandas reads it
    try:
        df = pd.read_csv(p) if suffix == ".csv" else pd.read_parquet(p)
    except Exception as exc:  # noqa: BLE001
        raise ValueError(f"{what}: {str(p)!r} cannot be read as {suffix[1:]}: {exc}") from exc
    if len(df) == 0:
        raise ValueError(f"{what}: {str(p)!r} has no rows")
    return p, df


def _columns(df, p: Path, names, parameter: str) -> list:
    missing = [c for c in names if c not in df.columns]
    if missing:
        raise ValueError(f"{parameter}: column(s) {missing} not in {str(p)!r}; its columns are {list(df.columns)}")
    return list(names)


def _numeric(df, p: Path, cols, parameter: str) -> np.ndarray:
    import pandas as pd

    out = []
    for c in cols:
        v = pd.to_numeric(df[c], errors="coerce")
        bad = v.isna() & df[c].notna()
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise ValueError(f"{parameter}: column {c!r} of {str(p)!r} has a non-numeric value {df[c].iloc[i]!r} "
                             f"at row {i}")
        if v.isna().any():
            i = int(np.flatnonzero(v.isna().to_numpy())[0])
            raise ValueError(f"{parameter}: column {c!r} of {str(p)!r} has a missing value (NaN) at row {i}; "
                             "allowed: numbers only")
        out.append(v.to_numpy(np.float64))
    return np.stack(out, axis=1)


# --------------------------------------------------------------------------- 01: streams

def load_stream_table(path, *, time_column: str | None = None, value_columns=None, target: str | None = None,
                      interval_minutes: float | None = None, series_column: str | None = None):
    """A time-indexed stream from CSV / Parquet as :class:`~clkit.data.timeseries.TimeSeriesData`.

    Parameters
    ----------
    path : str or Path
        ``.csv`` or ``.parquet``; one row per time step (per series).
    time_column : str, optional
        Timestamps (parsed as dates) or numbers; rows are sorted by it and it must be
        strictly increasing within a series. ``None``: row order, one step per row.
    value_columns : list of str, optional
        Feature columns (default: every numeric column other than time / series).
    target : str, optional
        Forecasting target (default: the first value column).
    interval_minutes : float, optional
        Sampling interval; inferred from a datetime ``time_column`` (the median step)
        when omitted, else 1 (windows are then counted in steps).
    series_column : str, optional
        Identifier of several aligned series (equal lengths required).

    Examples
    --------
    >>> import pandas as pd, tempfile, os
    >>> f = os.path.join(tempfile.mkdtemp(), "s.csv")
    >>> pd.DataFrame({"t": pd.date_range("2024-01-01", periods=6, freq="10min"),
    ...               "a": range(6), "b": [1.0] * 6}).to_csv(f, index=False)
    >>> d = load_stream_table(f, time_column="t")
    >>> d.values.shape, d.features, d.interval_minutes
    ((1, 6, 2), ('a', 'b'), 10.0)
    """
    import pandas as pd

    from .timeseries import TimeSeriesData

    p, df = _read_table(path, "dataset")
    special = [c for c in (time_column, series_column) if c is not None]
    _columns(df, p, special, "time_column" if time_column and time_column not in df.columns else "series_column")
    if value_columns is None:
        value_columns = [c for c in df.columns if c not in special and pd.api.types.is_numeric_dtype(df[c])]
        if not value_columns:
            raise ValueError(f"value_columns: {str(p)!r} has no numeric column besides {special}")
    elif isinstance(value_columns, str) or not isinstance(value_columns, (list, tuple)) or not value_columns:
        raise ValueError(f"value_columns must be a non-empty list of column names, got {value_columns!r}")
    value_columns = _columns(df, p, value_columns, "value_columns")
    if target is None:
        target = value_columns[0]
    if target not in value_columns:
        raise ValueError(f"target: {target!r} must be one of value_columns {value_columns}")
    groups = [df] if series_column is None else [g for _, g in df.groupby(series_column, sort=True)]
    series, times = [], None
    for g in groups:
        if time_column is not None:
            t = g[time_column]
            if not pd.api.types.is_numeric_dtype(t):
                try:
                    t = pd.to_datetime(t)
                except Exception as exc:  # noqa: BLE001
                    raise ValueError(f"time_column: {time_column!r} of {str(p)!r} is neither numbers nor dates: "
                                     f"{exc}") from exc
            order = np.argsort(t.to_numpy(), kind="stable")
            g, t = g.iloc[order], t.iloc[order]
            if t.duplicated().any():
                raise ValueError(f"time_column: {time_column!r} of {str(p)!r} has repeated time stamps, e.g. "
                                 f"{t[t.duplicated()].iloc[0]!r}; allowed: one row per time step (per series)")
            times = t
        series.append(_numeric(g, p, value_columns, "value_columns"))
    lengths = {len(s) for s in series}
    if len(lengths) != 1:
        raise ValueError(f"series_column: the series of {str(p)!r} have different lengths {sorted(lengths)}; "
                         "allowed: aligned series of equal length")
    if min(lengths) < 4:
        raise ValueError(f"dataset: {str(p)!r} has {min(lengths)} time steps; at least 4 are needed")
    if interval_minutes is None:
        if times is not None and pd.api.types.is_datetime64_any_dtype(times):
            interval_minutes = float(np.median(np.diff(times.to_numpy()).astype("timedelta64[s]").astype(float))) / 60
        else:
            interval_minutes = 1.0
    if not np.isfinite(interval_minutes) or interval_minutes <= 0:
        raise ValueError(f"interval_minutes must be a positive number, got {interval_minutes!r}")
    values = np.stack(series).astype(np.float32)
    return TimeSeriesData(values=values, features=tuple(value_columns), target=target,
                          interval_minutes=float(interval_minutes),
                          source=f"user stream {str(p)!r} ({values.shape[0]} series x {values.shape[1]} steps, "
                                 f"columns {list(value_columns)}, one step = {interval_minutes:g} min)")


# --------------------------------------------------------------------------- 02: class names

def load_class_names_file(path, *, min_classes: int = 2) -> list:
    """Class names from a text file (one per line, ``#`` comments) or a YAML list.

    Examples
    --------
    >>> import tempfile, os
    >>> f = os.path.join(tempfile.mkdtemp(), "names.txt")
    >>> _ = open(f, "w").write("# my classes\\ncat\\ndog\\n\\nfrog\\n")
    >>> load_class_names_file(f)
    ['cat', 'dog', 'frog']
    """
    p = _existing(path, "class names")
    if p.suffix.lower() in (".yaml", ".yml"):
        import yaml

        try:
            names = yaml.safe_load(read_text(p, "class names"))
        except yaml.YAMLError as exc:
            raise ValueError(f"class names: {str(p)!r} is not valid YAML: {exc}") from exc
        if isinstance(names, dict) and len(names) == 1:
            names = next(iter(names.values()))
        if not isinstance(names, list) or not all(isinstance(n, (str, int, float)) for n in names):
            raise ValueError(f"class names: {str(p)!r} must hold a YAML list of names, got {type(names).__name__}")
        names = [str(n).strip() for n in names]
    else:
        names = [ln.strip() for ln in read_text(p, "class names").splitlines()]
        names = [n for n in names if n and not n.startswith("#")]
    if any(not n for n in names):
        raise ValueError(f"class names: {str(p)!r} has an empty name")
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"class names: {str(p)!r} repeats {dup}; allowed: distinct names")
    if len(names) < min_classes:
        raise ValueError(f"class names: {str(p)!r} has {len(names)} names, fewer than the {min_classes} needed")
    return names


# --------------------------------------------------------------------------- 02 / 04: images

def load_image_folder(root, *, image_size: int | None = None, channels: int = 1, min_classes: int = 2,
                      min_per_class: int = 2):
    """A torchvision ``ImageFolder`` tree as :class:`~clkit.data.images.ImageDataset`.

    ``root/<class>/<image>`` (classes in sorted folder order, as ``ImageFolder``), or
    ``root/train/<class>/...`` and ``root/test/<class>/...``. Without a split, the
    images of each class alternate between train and test (sorted file names). Images
    are converted to gray (``channels=1``) or RGB and resized to ``image_size``.

    Returns
    -------
    ImageDataset
        ``x_train`` / ``x_test`` uint8 (N, H, W) or (N, H, W, 3).
    """
    from PIL import Image, UnidentifiedImageError

    from .images import ImageDataset

    root = _existing(root, "image folder", folder=True)
    if channels not in (1, 3):
        raise ValueError(f"channels must be 1 or 3, got {channels!r}")
    split_dirs = {"train": root / "train", "test": root / "test"}
    has_split = all(d.is_dir() for d in split_dirs.values())

    def scan(d: Path):
        classes = sorted(c.name for c in d.iterdir() if c.is_dir())
        files = {c: sorted(f for f in (d / c).iterdir() if f.suffix.lower() in IMAGE_SUFFIXES) for c in classes}
        return classes, files

    def read(f: Path):
        try:
            with Image.open(f) as im:
                record_read(f, group=root)
                im = im.convert("L" if channels == 1 else "RGB")
                if image_size is not None:
                    im = im.resize((image_size, image_size))
                return np.asarray(im, dtype=np.uint8)
        except (UnidentifiedImageError, OSError) as exc:
            raise ValueError(f"image folder: {str(f)!r} is not a readable image: {exc}") from exc

    if has_split:
        classes, tr_files = scan(split_dirs["train"])
        te_classes, te_files = scan(split_dirs["test"])
        if te_classes != classes:
            raise ValueError(f"image folder: {str(root)!r} has train classes {classes} but test classes {te_classes}")
    else:
        classes, files = scan(root)
        tr_files = {c: f[0::2] for c, f in files.items()}
        te_files = {c: f[1::2] for c, f in files.items()}
    if len(classes) < min_classes:
        raise ValueError(f"image folder: {str(root)!r} has {len(classes)} class folders {classes}, fewer than the "
                         f"{min_classes} needed")
    for c in classes:
        n = len(tr_files[c]) + len(te_files[c])
        if n < min_per_class or not te_files[c] or not tr_files[c]:
            raise ValueError(f"image folder: class {c!r} of {str(root)!r} has {n} images; at least "
                             f"{max(2, min_per_class)} are needed (train and test)")
    arrays = {}
    for split, fl in (("train", tr_files), ("test", te_files)):
        xs, ys = [], []
        for k, c in enumerate(classes):
            xs += [read(f) for f in fl[c]]
            ys += [k] * len(fl[c])
        shapes = {x.shape for x in xs}
        if len(shapes) != 1:
            raise ValueError(f"image folder: images of {str(root)!r} differ in size {sorted(shapes)[:3]}; "
                             "pass image_size to resize them")
        arrays[split] = (np.stack(xs), np.array(ys, dtype=np.int64))
    how = "train/ and test/ folders" if has_split else "alternate images of each class to train / test"
    return ImageDataset(name=root.name, x_train=arrays["train"][0], y_train=arrays["train"][1],
                        x_test=arrays["test"][0], y_test=arrays["test"][1], classes=tuple(classes),
                        source=f"user ImageFolder {str(root)!r} ({len(classes)} classes, {how})")


def imagefolder_enumerable(root, classes=None, *, n_train: int = 20, n_test: int = 20, image_size: int = 14,
                           feature_dim: int = 64, seed: int = 0) -> dict:
    """An ImageFolder tree in the form of ``clkit.edge.experiment.load_enumerable_data``.

    Gray images resized to ``image_size``, flattened and standardised with the training
    mean / std; ``n_train`` / ``n_test`` images per class drawn with ``seed`` (every class
    needs that many); NCM features are fixed random ReLU features of width
    ``feature_dim``. ``classes``: indices into the sorted class folders (default all).
    """
    import torch

    from .._seed import torch_seeded

    ds = load_image_folder(root, image_size=image_size, channels=1)
    C_all = len(ds.classes)
    classes = list(range(C_all)) if classes is None else list(classes)
    bad = [c for c in classes if not isinstance(c, int) or not 0 <= c < C_all]
    if bad:
        raise ValueError(f"classes: {bad} are not class indices of {str(root)!r} (allowed 0..{C_all - 1}: "
                         f"{list(ds.classes)})")
    rng = np.random.default_rng(seed)

    def per_class(x, y, n, split):
        out = []
        for c in classes:
            idx = np.flatnonzero(y == c)
            if len(idx) < n:
                raise ValueError(f"image folder: class {ds.classes[c]!r} of {str(root)!r} has {len(idx)} {split} "
                                 f"images, fewer than the {n} requested (n_{split})")
            out.append(x[np.sort(rng.choice(idx, size=n, replace=False))].reshape(n, -1))
        return np.stack(out).astype(np.float32) / 255.0

    xtr = per_class(ds.x_train, ds.y_train, n_train, "train")
    xte = per_class(ds.x_test, ds.y_test, n_test, "test")
    mu, sd = xtr.reshape(-1, xtr.shape[-1]).mean(0), xtr.reshape(-1, xtr.shape[-1]).std(0) + 1e-3
    xtr, xte = (xtr - mu) / sd, (xte - mu) / sd
    with torch_seeded(seed):
        lin = torch.nn.Linear(xtr.shape[-1], feature_dim)

    def feats(z):
        with torch.no_grad():
            return torch.relu(lin(torch.as_tensor(z))).numpy()

    return {"x_train": xtr, "x_test": xte, "f_train": feats(xtr), "f_test": feats(xte),
            "class_names": [ds.classes[c] for c in classes],
            "data_source": f"{ds.source}; classes {[ds.classes[c] for c in classes]}; {n_train}/{n_test} train/test "
                           f"images per class; gray {image_size}x{image_size}; NCM features: random ReLU features"}


# --------------------------------------------------------------------------- 03: matrices and periods

MATRIX_SCALES = ("unit", "percent", "any")


def _numeric_cell(c: str) -> bool:
    """Whether a CSV cell reads as a number (an empty cell, ``nan`` or ``na`` are missing numbers)."""
    c = c.strip()
    if c == "" or c.lower() in ("nan", "na"):
        return True
    try:
        float(c)
    except ValueError:
        return False
    return True


def _cell_value(c: str) -> float:
    c = c.strip()
    return np.nan if c == "" or c.lower() in ("nan", "na") else float(c)


def _selection(spec, n: int, parameter: str, what: str) -> list[int]:
    """Indices chosen by ``spec``: ``None`` (all ``n``), a slice string ``"1:"`` / ``"0:4"`` or a list of ints.

    >>> _selection("1:", 5, "rows", "rows"), _selection([0, 2], 3, "cols", "columns"), _selection(None, 2, "rows", "rows")
    ([1, 2, 3, 4], [0, 2], [0, 1])
    """
    if spec is None:
        return list(range(n))
    if isinstance(spec, str) and re.fullmatch(r"\s*-?\d*\s*:\s*-?\d*\s*", spec):
        a, b = (int(v) if v.strip() else None for v in spec.split(":"))
        idx = list(range(n))[slice(a, b)]
    elif isinstance(spec, (list, tuple)) and spec and all(isinstance(i, int) and not isinstance(i, bool)
                                                          for i in spec):
        bad = [i for i in spec if not -n <= i < n]
        if bad:
            raise ValueError(f"{parameter}: {bad} are not {what} of a table with {n} {what} (allowed 0..{n - 1})")
        idx = [i % n for i in spec]
    else:
        raise ValueError(f"{parameter} must be a slice like '1:' or '0:4', or a list of {what} indices, "
                         f"got {spec!r}")
    if not idx:
        raise ValueError(f"{parameter}={spec!r} selects none of the {n} {what}")
    if len(set(idx)) != len(idx):
        raise ValueError(f"{parameter}={spec!r} repeats {what}")
    return idx


#: the largest magnitude a matrix cell may have (:func:`load_matrix_csv`): squares and sums of larger
#: values overflow float64 (1e308 squared is inf), so such a cell is refused, not turned into ``inf``
MAX_MAGNITUDE = 1e150


def load_matrix_csv(path, *, name: str = "A", nan_allowed: str = "below", header: bool | None = None,
                    index_col: bool | None = None, rows=None, cols=None, scale: str = "unit",
                    log=print) -> np.ndarray:
    """A square performance matrix (A(t, tau) or R[i, j]) from CSV, read only as the file says.

    Nothing is guessed from the counts of rows and columns. A header row and an index
    column are taken only when they are unambiguous: a first row with a non-numeric
    cell is a header; a first column with a non-numeric cell below the header, or
    under an empty first header cell (as pandas and R write a row index), is an
    index. A numeric header (``0,1,2``) or a numeric index column must be declared
    (``header=True``, ``index_col=True``). A matrix that is not square is refused
    unless ``rows`` / ``cols`` say which rows and columns are the tasks (e.g. a
    framework log's average column: ``cols="0:4"``; a row of scores before
    training: ``rows="1:"``). Every load reports the shape it read through ``log``.

    Parameters
    ----------
    path : str or Path
        The CSV file.
    name : str
        How the matrix is called in messages (``"A"`` for A(t, tau), ``"R"``).
    nan_allowed : {"below", "above", "none"}
        Where empty cells / NaN may be: below the diagonal (A(t, tau) is evaluated for
        tau >= t only), above it (R[i, j] for j > i), or nowhere.
    header, index_col : bool, optional
        Whether the first row is a header / the first column an index; ``None``
        (default) takes them only when unambiguous (see above).
    rows, cols : str or list of int, optional
        The task rows / columns among the data (after the header and index are
        removed): a slice ``"1:"``, ``"0:4"`` or a list of indices. Default: all.
    scale : {"unit", "percent", "any"}
        ``"unit"``: scores in [0, 1] (accuracies as fractions); a value outside is
        refused, since thresholds such as the Drift Horizon tolerances are absolute.
        ``"percent"``: scores in [0, 100], divided by 100 (said in the report).
        ``"any"``: no range (errors such as MSE).
    log : callable or None
        Receives one line saying what was read (shape, header, index, selection,
        scale); ``None`` for silence.

    Returns
    -------
    ndarray, shape (T, T)

    Raises
    ------
    ValueError
        Ragged, non-numeric, not square (without ``rows`` / ``cols``), a NaN where
        none may be, or a value outside the scale; the message names the file and
        what to pass.

    Examples
    --------
    >>> import tempfile, os
    >>> f = os.path.join(tempfile.mkdtemp(), "A.csv")
    >>> _ = open(f, "w").write("0.9,0.8\\n,0.85\\n")
    >>> load_matrix_csv(f, log=None).tolist()
    [[0.9, 0.8], [nan, 0.85]]
    >>> _ = open(f, "w").write("t0,t1,avg\\n0.9,0.1,0.5\\n0.7,0.8,0.75\\n")
    >>> load_matrix_csv(f, name="R", cols="0:2", log=lambda line: print(line.split(": ", 1)[1])).tolist()
    read 2 x 2 (header row: yes; index column: no; of 2 rows x 3 columns: rows all, columns 0:2; scale 0-1)
    [[0.9, 0.1], [0.7, 0.8]]
    """
    import csv

    if nan_allowed not in ("below", "above", "none"):
        raise ValueError(f"nan_allowed must be 'below', 'above' or 'none', got {nan_allowed!r}")
    if scale not in MATRIX_SCALES:
        raise ValueError(f"scale must be one of {list(MATRIX_SCALES)}, got {scale!r}")
    for par, v in (("header", header), ("index_col", index_col)):
        if v is not None and not isinstance(v, bool):
            raise TypeError(f"{par} must be True, False or None (only when unambiguous), got {v!r}")
    p = _existing(path, f"{name} matrix")
    where = f"{name} matrix: {str(p)!r}"
    try:
        text = read_text(p, f"{name} matrix")
    except UnicodeDecodeError:
        raise ValueError(f"{where} is not a text CSV file (binary content); write the matrix as CSV, "
                         "one row per line") from None
    sep = _separator(text, where)
    table = [r for r in csv.reader(text.splitlines(), delimiter=sep) if any(c.strip() for c in r)]
    if not table:
        raise ValueError(f"{where} is empty")
    lengths = sorted({len(r) for r in table})
    if len(lengths) > 1:
        raise ValueError(f"{where} is ragged: rows have {lengths} cells; allowed: every row the same length")
    how = ("(pass header=True / --header if the first row labels the columns, index_col=True / --index-col if "
           "the first column labels the rows, or rows= / --rows and cols= / --columns to say which rows and "
           "columns are tasks, e.g. '1:' or '0:4')")
    if header is None:
        header = not all(_numeric_cell(c) for c in table[0])
    head = table[0] if header else None
    data = table[1:] if header else table
    if not data:
        raise ValueError(f"{where} has a header row and no data")
    if index_col is None:
        index_col = any(not _numeric_cell(r[0]) for r in data) or (
            head is not None and len(head) > 1 and not head[0].strip() and all(c.strip() for c in head[1:]))
    if index_col:
        data = [r[1:] for r in data]
    for i, r in enumerate(data):
        bad = next((c for c in r if not _numeric_cell(c)), None)
        if bad is not None:
            raise ValueError(f"{where} row {i} has a non-numeric value {bad!r} (read with header row: "
                             f"{'yes' if header else 'no'}, index column: {'yes' if index_col else 'no'}) {how}")
    full = np.array([[_cell_value(c) for c in r] for r in data], dtype=float)
    n_rows, n_cols = full.shape
    ri = _selection(rows, n_rows, "rows", "rows")
    ci = _selection(cols, n_cols, "cols", "columns")
    M = full[np.ix_(ri, ci)]
    read_as = (f"header row: {'yes' if header else 'no'}; index column: {'yes' if index_col else 'no'}; "
               f"{n_rows} data rows x {n_cols} columns")
    if M.shape[0] != M.shape[1] or M.shape[0] < 2:
        chosen = "" if rows is None and cols is None else f", of which rows={rows!r} cols={cols!r} give {M.shape}"
        raise ValueError(f"{where} has {n_rows} rows x {n_cols} columns ({read_as}{chosen}); a performance matrix "
                         f"is square, one row and one column per task, at least 2 x 2. Nothing is guessed: say "
                         f"which rows and columns are tasks {how}")
    T = M.shape[0]
    allowed = {"below": np.tril(np.ones((T, T), bool), -1), "above": np.triu(np.ones((T, T), bool), 1),
               "none": np.zeros((T, T), bool)}[nan_allowed]
    bad = np.argwhere(np.isnan(M) & ~allowed)
    if len(bad):
        i, j = bad[0]
        where_nan = {"below": "below the diagonal", "above": "above the diagonal", "none": "nowhere"}[nan_allowed]
        raise ValueError(f"{where} has a missing value (NaN) at [{i}, {j}] ({read_as}); allowed: {where_nan}"
                         + (f"; an empty first cell often marks labels {how}" if (i, j) == (0, 0) else ""))
    if np.isinf(M).any():
        i, j = np.argwhere(np.isinf(M))[0]
        raise ValueError(f"{where} has an infinite value at [{i}, {j}] ({read_as}); a score is a finite number")
    huge = np.argwhere(np.abs(np.nan_to_num(M)) > MAX_MAGNITUDE)
    if len(huge):   # differences, means and squares of such values overflow to inf (numpy warns)
        i, j = huge[0]
        raise ValueError(f"{where} has {M[i, j]:g} at [{i}, {j}] ({read_as}), beyond +-{MAX_MAGNITUDE:g}, where the "
                         "metrics' differences and squares overflow; is it a sentinel for a missing value (leave "
                         "the cell empty) or a unit mistake?")
    M, scale_note = _check_scale(M, scale, where)
    if log is not None:
        sel = "" if rows is None and cols is None else (
            f" of {n_rows} rows x {n_cols} columns: rows {rows if rows is not None else 'all'}, "
            f"columns {cols if cols is not None else 'all'};")
        log(f"{name} matrix {str(p)!r}: read {T} x {T} (header row: {'yes' if header else 'no'}; index column: "
            f"{'yes' if index_col else 'no'};{sel} {scale_note}"
            + {",": "", "\t": "; cells separated by tabs", ";": "; cells separated by ';'"}[sep] + ")")
    return M


def _separator(text: str, where: str) -> str:
    r"""The cell separator of a matrix file: ``,`` (CSV), else tab or ``;`` when the lines hold those and no
    comma. A ``;`` file with commas too is European CSV with decimal commas (``0,5;0,6``): refused, saying so.

    Examples
    --------
    >>> _separator("0.5,0.6\n0.4,0.7", "R"), _separator("0.5\t0.6\n", "R"), _separator("0.5;0.6\n", "R")
    (',', '\t', ';')
    >>> _separator("0,5;0,6\n", "R matrix")
    Traceback (most recent call last):
    ...
    ValueError: R matrix separates cells with ';' and writes decimal commas (e.g. '0,5'); write decimal points (0.5), or cells separated by commas
    """
    lines = [ln for ln in text.splitlines() if ln.strip()]
    has = {c: any(c in ln for ln in lines) for c in (",", "\t", ";")}
    if has[";"] and has[","]:
        example = next((cell for ln in lines for cell in ln.split(";") if "," in cell), "0,5").strip()
        raise ValueError(f"{where} separates cells with ';' and writes decimal commas (e.g. {example!r}); "
                         "write decimal points (0.5), or cells separated by commas")
    if has[","]:
        return ","
    return "\t" if has["\t"] else ";" if has[";"] else ","


def _check_scale(M: np.ndarray, scale: str, where: str) -> tuple[np.ndarray, str]:
    """``(M on a 0-1 scale, a note)`` for ``scale`` (see :func:`load_matrix_csv`); raise when out of range."""
    if scale == "any":
        return M, "scale as given"
    top = 1.0 if scale == "unit" else 100.0
    vals = M[np.isfinite(M)]
    out = vals[(vals < 0) | (vals > top)]
    if len(out):
        hint = (" It looks like percent: pass scale='percent' (clkit metrics: --percent) to divide by 100, or "
                "divide the file by 100" if scale == "unit" and vals.min() >= 0 and vals.max() <= 100 else "")
        raise ValueError(f"{where} has values outside [0, {top:g}] (e.g. {out[0]:g}, range {vals.min():g} to "
                         f"{vals.max():g}); a score here is a fraction in [0, {top:g}].{hint} (errors such as MSE: "
                         "scale='any', clkit metrics cl --error)")
    if scale == "percent":
        from .._scale import check_not_fractions

        check_not_fractions(M, where=where, flag="scale='percent' (--percent)")
        return M / 100.0, "scale 0-100, divided by 100"
    return M, "scale 0-1"


def load_period_table(path, *, period_column: str = "period", label_column: str = "label", feature_columns=None,
                      test_fraction: float = 0.3, seed: int = 0, min_per_period: int = 2):
    """A period-labelled table (CSV / Parquet) as :class:`~clkit.data.temporal.PeriodDataset`.

    Rows are grouped by ``period_column`` (periods in sorted order), split at random
    into train / test per period (``test_fraction``, ``seed``); labels are mapped to
    ``0..C-1`` in sorted order; features are standardised with the first period's
    training mean and std.

    Examples
    --------
    >>> import pandas as pd, tempfile, os
    >>> f = os.path.join(tempfile.mkdtemp(), "p.csv")
    >>> pd.DataFrame({"period": [2020] * 4 + [2021] * 4, "x": range(8), "label": [0, 1] * 4}).to_csv(f, index=False)
    >>> ds = load_period_table(f, test_fraction=0.5)
    >>> ds.periods, ds.num_classes, ds.input_shape
    (['2020', '2021'], 2, (1,))
    """
    from ..data.temporal import PeriodDataset, split_periods

    p, df = _read_table(path, "dataset")
    _columns(df, p, [period_column], "period_column")
    _columns(df, p, [label_column], "label_column")
    if feature_columns is None:
        import pandas as pd

        feature_columns = [c for c in df.columns if c not in (period_column, label_column)
                           and pd.api.types.is_numeric_dtype(df[c])]
        if not feature_columns:
            raise ValueError(f"feature_columns: {str(p)!r} has no numeric column besides the period and label")
    feature_columns = _columns(df, p, feature_columns, "feature_columns")
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction!r}")
    codes = {}
    for par, col, what in (("period_column", period_column, "period"), ("label_column", label_column, "class")):
        values = df[col]
        if values.isna().any():
            raise ValueError(f"{par}: {col!r} of {str(p)!r} has a missing value at row "
                             f"{int(np.flatnonzero(values.isna().to_numpy())[0])}")
        levels = sorted(values.unique().tolist())
        if len(levels) < 2:
            raise ValueError(f"{par}: {col!r} of {str(p)!r} has {len(levels)} {what} ({levels}); at least 2 are needed")
        lookup = {v: i for i, v in enumerate(levels)}
        codes[par] = levels, np.array([lookup[v] for v in values.tolist()], dtype=np.int64)
    x = _numeric(df, p, feature_columns, "feature_columns").astype(np.float32)
    (periods, pidx), (labels, y) = codes["period_column"], codes["label_column"]
    counts = np.bincount(pidx, minlength=len(periods))
    small = [periods[i] for i in np.flatnonzero(counts < min_per_period)]
    if small:
        raise ValueError(f"period_column: period {small[0]!r} of {str(p)!r} has {int(counts[periods.index(small[0])])} "
                         f"rows; every period needs at least {min_per_period} (one to train, one to test)")
    train, test = split_periods(x, y, pidx, test_fraction, seed)
    mu, sd = train[0][0].mean(0), train[0][0].std(0) + 1e-6
    train = [((a - mu) / sd, b) for a, b in train]
    test = [((a - mu) / sd, b) for a, b in test]
    return PeriodDataset(name=p.stem, source=f"user table {str(p)!r} ({len(df)} rows, {len(periods)} periods of "
                                             f"{period_column!r}, features {feature_columns}, label {label_column!r})",
                         periods=[str(v) for v in periods], train=train, test=test, num_classes=len(labels),
                         meta={"labels": [str(v) for v in labels]})


# --------------------------------------------------------------------------- 05: graphs

def _graph_from(obj, where: str, min_classes: int):
    import torch

    from .graphs import GraphData

    get = (lambda k: obj.get(k)) if isinstance(obj, dict) else (lambda k: getattr(obj, k, None))
    x, edge_index, y = get("x"), get("edge_index"), get("y")
    missing = [k for k, v in (("x", x), ("edge_index", edge_index), ("y", y)) if v is None]
    if missing:
        raise ValueError(f"graph: {where} has no {missing}; allowed: a torch_geometric.data.Data (or dict) with x "
                         "(num_nodes, num_features), edge_index (2, num_edges) and integer node labels y")
    x, edge_index, y = (torch.as_tensor(v) for v in (x, edge_index, y))
    y = y.view(-1)
    if x.ndim != 2 or len(y) != x.shape[0]:
        raise ValueError(f"graph: {where} has x of shape {tuple(x.shape)} and {len(y)} labels; allowed: x "
                         "(num_nodes, num_features) and one label per node")
    if edge_index.ndim != 2 or edge_index.shape[0] != 2:
        raise ValueError(f"graph: {where} has edge_index of shape {tuple(edge_index.shape)}; allowed: (2, num_edges)")
    if edge_index.numel() and (int(edge_index.min()) < 0 or int(edge_index.max()) >= x.shape[0]):
        raise ValueError(f"graph: {where} has edge_index entries outside 0..{x.shape[0] - 1}")
    if torch.is_floating_point(y):
        if not torch.equal(y, y.round()):
            raise ValueError(f"graph: {where} has non-integer labels y; allowed: class indices")
    if torch.is_floating_point(x) and torch.isnan(x).any():
        raise ValueError(f"graph: {where} has NaN in the node features x (node "
                         f"{int(torch.isnan(x).any(1).nonzero()[0])})")
    y = y.long()
    if int(y.min()) < 0:
        raise ValueError(f"graph: {where} has negative labels; allowed: class indices 0..C-1")
    classes = torch.unique(y)
    if len(classes) < min_classes:
        raise ValueError(f"graph: {where} has {len(classes)} classes, fewer than the {min_classes} needed")
    if not torch.equal(classes, torch.arange(len(classes))):  # relabel to 0..C-1
        y = torch.searchsorted(classes, y)
    return GraphData(x.float(), edge_index.long(), y, Path(where.strip("'")).stem, f"user graph {where}")


def load_graph_file(path, *, min_classes: int = 2):
    """A torch-geometric ``Data`` (or a dict with ``x``, ``edge_index``, ``y``) saved with ``torch.save``.

    Examples
    --------
    >>> import torch, tempfile, os
    >>> f = os.path.join(tempfile.mkdtemp(), "g.pt")
    >>> torch.save({"x": torch.ones(4, 2), "edge_index": torch.tensor([[0, 1], [1, 0]]),
    ...             "y": torch.tensor([0, 0, 1, 1])}, f)
    >>> load_graph_file(f).num_classes
    2
    """
    import torch

    p = _existing(path, "graph")
    try:
        obj = torch.load(p, weights_only=False)
    except Exception as exc:  # noqa: BLE001
        raise ValueError(f"graph: {str(p)!r} cannot be read with torch.load: {exc}") from exc
    if isinstance(obj, (list, tuple)) and obj and not isinstance(obj, dict):
        obj = obj[0]
    return _graph_from(obj, repr(str(p)), min_classes)


def load_graph_class(spec: str, root, *, min_classes: int = 2, **kwargs):
    """A torch-geometric dataset class by import path and root: ``spec(root=root, **kwargs)[0]``.

    ``spec`` is ``"package.module:ClassName"``, e.g.
    ``"torch_geometric.datasets:KarateClub"`` (whose constructor takes no root: then
    it is called without one).
    """
    import inspect

    from ..plugins import load_object

    cls = load_object(spec, parameter="dataset")
    if not callable(cls):
        raise TypeError(f"dataset: {spec!r} is not a dataset class")
    params = inspect.signature(cls).parameters
    try:
        ds = cls(root=str(root), **kwargs) if "root" in params else cls(**kwargs)
    except Exception as exc:  # noqa: BLE001
        raise ValueError(f"dataset: {spec!r} with root {str(root)!r} failed: {type(exc).__name__}: {exc}") from exc
    try:
        data = ds[0]
    except Exception as exc:  # noqa: BLE001
        raise ValueError(f"dataset: {spec!r} has no graph at index 0: {exc}") from exc
    g = _graph_from(data, f"{spec} (root {str(root)!r})", min_classes)
    g.name = spec.split(":")[1]
    return g


def load_graph_source(dataset: str, root=None, *, min_classes: int = 2):
    """A user graph from a ``.pt`` file or a ``"package.module:Class"`` dataset (with ``root``)."""
    if ":" in dataset and not resolve_path(dataset).exists():
        return load_graph_class(dataset, root if root is not None else ".", min_classes=min_classes)
    return load_graph_file(dataset, min_classes=min_classes)


#: the most classes a label file may number without as many nodes (arrays are kept per class)
MAX_LABELS = 2**16


def load_labels(path) -> np.ndarray:
    """Integer node labels from a ``.npy`` file (1-D, non-negative)."""
    from .._io import load_npy

    p = _existing(path, "labels")
    y = load_npy(p, "labels")
    if y.ndim != 1 or len(y) == 0:
        raise ValueError(f"labels: {str(p)!r} has shape {y.shape}; allowed: a non-empty 1-D array of labels")
    if not np.issubdtype(y.dtype, np.integer):
        if not np.issubdtype(y.dtype, np.floating) or np.isnan(y).any() or not np.all(y == np.round(y)):
            raise ValueError(f"labels: {str(p)!r} holds {y.dtype} values; allowed: integer class labels")
        y = y.astype(np.int64)
    if y.min() < 0:
        raise ValueError(f"labels: {str(p)!r} has negative labels; allowed: 0..C-1")
    top = max(len(y), MAX_LABELS)
    if y.max() >= top:   # per-class arrays have max + 1 entries: a label of 10**12 would ask for TiB
        raise ValueError(f"labels: {str(p)!r} has the label {int(y.max())} but {len(np.unique(y))} distinct labels; "
                         f"allowed: 0..C-1 with C at most {top:,} (the node count or {MAX_LABELS:,}); "
                         "renumber the classes 0..C-1")
    return y.astype(np.int64)
