"""Where a run computes: one device, one precision and one determinism setting per run.

Every notebook takes three parameters and hands them to :func:`setup` once, in its
validation cell:

``device``
    ``"auto"`` (CUDA when available, else the CPU), ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or
    ``"mps"``. A device that is not there is refused, naming the parameter and what is
    available.
``precision``
    ``"fp32"`` (default), ``"bf16"`` or ``"fp16"``: the forward passes run under
    :func:`torch.autocast` with that dtype; ``fp16`` needs CUDA and scales the loss
    (:class:`torch.amp.GradScaler`). The parameters stay in float32.
``deterministic``
    ``True`` turns on PyTorch's deterministic algorithms and sets the cuBLAS workspace
    variable they need on CUDA. Operations without a deterministic kernel warn (they
    are named in the warning) instead of stopping the run.

:func:`setup` returns a :class:`RunDevice`; learners, backbones and data receive its
``torch.device`` (never a string they parse again). Tensors move to the device at task
boundaries (:func:`move`, pinned and non-blocking from the CPU to CUDA), not per step,
and the training loops read no value back from the device: :func:`to_host` does that
at evaluation boundaries. On the ``meta`` device, which holds shapes but no values,
:func:`to_host` gives NaN, so a whole training loop can run on ``meta`` in a CPU-only
test: any tensor made on the CPU instead of the model's device, and any read of a value
inside a step, fails there as it would on a GPU (``tests/test_device.py``).
"""

from __future__ import annotations

import contextlib
import os
import platform
import re
import shutil
import subprocess
from dataclasses import dataclass, field

import numpy as np
import torch

__all__ = ["DEVICES", "PRECISIONS", "RunDevice", "Amp", "available_devices", "resolve_device", "check_precision",
           "setup", "device_info", "move", "to_host", "host_float", "as_device", "set_deterministic",
           "DeviceAudit", "fork_safe"]

DEVICES = ("auto", "cpu", "cuda", "cuda:N", "mps")
PRECISIONS = ("fp32", "bf16", "fp16")
_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
_CUBLAS = ":4096:8"


def available_devices() -> list[str]:
    """The devices this machine offers: ``"cpu"``, then ``"cuda:0"``, ... and ``"mps"`` when present.

    Examples
    --------
    >>> available_devices()[0]
    'cpu'
    """
    out = ["cpu"]
    if torch.cuda.is_available():
        out += [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        out.append("mps")
    return out


def resolve_device(device="auto", *, parameter: str = "device") -> torch.device:
    """The ``torch.device`` a ``device`` parameter names.

    Parameters
    ----------
    device : str or torch.device
        ``"auto"`` | ``"cpu"`` | ``"cuda"`` | ``"cuda:N"`` | ``"mps"``; a ``torch.device`` is
        returned as it is (tests pass ``torch.device("meta")``).
    parameter : str
        The parameter's name in error messages.

    Raises
    ------
    TypeError
        ``device`` is neither a string nor a ``torch.device``.
    ValueError
        An unknown name, or a device this machine does not have (the message lists what it has).

    Examples
    --------
    >>> resolve_device("cpu"), resolve_device(torch.device("meta"))
    (device(type='cpu'), device(type='meta'))
    >>> resolve_device("auto") == (torch.device("cuda", 0) if torch.cuda.is_available() else torch.device("cpu"))
    True
    >>> resolve_device("tpu")
    Traceback (most recent call last):
    ...
    ValueError: device must be one of auto | cpu | cuda | cuda:N | mps, got 'tpu'
    """
    if isinstance(device, torch.device):
        return device
    if not isinstance(device, str):
        raise TypeError(f"{parameter} must be a string ({' | '.join(DEVICES)}) or a torch.device, "
                        f"got {type(device).__name__} {device!r}")
    name = device.strip().lower()
    if name == "auto":   # the same device as "cuda" (cuda:0), so results.json names it alike
        return torch.device("cuda", 0) if torch.cuda.is_available() else torch.device("cpu")
    if name in ("cpu", "meta"):   # meta: shapes without values, for tests (setup refuses it for runs)
        return torch.device(name)
    match = re.fullmatch(r"cuda(?::(\d+))?", name)
    if match:
        have = available_devices()
        if not torch.cuda.is_available():
            raise ValueError(f"{parameter} {device!r} needs CUDA, which this machine does not have "
                             f"(torch {torch.__version__}, CUDA build: {torch.version.cuda or 'no'}); "
                             f"available: {', '.join(have)} (or auto)")
        index = int(match.group(1) or 0)
        if index >= torch.cuda.device_count():
            raise ValueError(f"{parameter} {device!r}: this machine has {torch.cuda.device_count()} CUDA "
                             f"device(s); available: {', '.join(have)}")
        return torch.device("cuda", index)
    if name == "mps":
        if "mps" not in available_devices():
            raise ValueError(f"{parameter} 'mps' needs Apple's Metal backend, which this machine does not "
                             f"have; available: {', '.join(available_devices())} (or auto)")
        return torch.device("mps")
    raise ValueError(f"{parameter} must be one of {' | '.join(DEVICES)}, got {device!r}")


def as_device(device) -> torch.device:
    """A ``torch.device`` from a :class:`RunDevice`, a ``torch.device`` or a device name."""
    if isinstance(device, RunDevice):
        return device.device
    return resolve_device(device)


def check_precision(precision: str, device: torch.device, *, parameter: str = "precision") -> str:
    """``precision`` checked against :data:`PRECISIONS` and the device.

    ``fp16`` needs CUDA (its loss scaling is CUDA's); ``bf16`` runs on CUDA and on the CPU.

    Examples
    --------
    >>> check_precision("bf16", torch.device("cpu"))
    'bf16'
    >>> check_precision("fp16", torch.device("cpu"))
    Traceback (most recent call last):
    ...
    ValueError: precision 'fp16' needs a CUDA device (loss scaling), got device cpu; use fp32 or bf16 there
    """
    if not isinstance(precision, str) or precision not in PRECISIONS:
        raise ValueError(f"{parameter} must be one of {' | '.join(PRECISIONS)}, got {precision!r}")
    if precision == "fp16" and device.type not in ("cuda", "meta"):
        raise ValueError(f"{parameter} 'fp16' needs a CUDA device (loss scaling), got device {device}; "
                         "use fp32 or bf16 there")
    return precision


def fork_safe() -> bool:
    """Whether a process forked from this one can still train with autograd.

    PyTorch's autograd engine starts one thread per accelerator device at its first
    backward pass whenever the machine has an accelerator -- also when the training
    itself runs on the CPU. After that, a backward pass in a forked child raises
    "Unable to handle autograd's threading in combination with fork-based
    multiprocessing". Forking is therefore safe only where no accelerator is visible
    (``torch.accelerator.device_count() == 0``; ``torch.cuda.device_count()`` on a
    torch without ``torch.accelerator``). Neither call creates a CUDA context.

    Found by ``benchmarks/gpu_check.py``: notebook 01 with ``device cpu`` and
    ``cl_workers 2`` failed on an H200 machine and ran on a machine without a GPU.

    Returns
    -------
    bool
        ``True`` when no accelerator is visible.

    Examples
    --------
    >>> fork_safe() == (torch.accelerator.device_count() == 0)
    True
    """
    acc = getattr(torch, "accelerator", None)
    count = acc.device_count() if acc is not None and hasattr(acc, "device_count") else torch.cuda.device_count()
    return int(count) == 0


def set_deterministic(on: bool) -> None:
    """Turn PyTorch's deterministic algorithms on (``True``) or off, in this process.

    On: ``CUBLAS_WORKSPACE_CONFIG`` is set to ``:4096:8`` when unset (cuBLAS needs it for
    reproducible matrix products; it takes effect for a CUDA context created afterwards),
    cuDNN's autotuner is off and operations without a deterministic implementation warn
    (``warn_only=True``) instead of raising.
    """
    if not isinstance(on, bool):
        raise TypeError(f"deterministic must be true or false, got {type(on).__name__} {on!r}")
    if on:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", _CUBLAS)
    torch.use_deterministic_algorithms(on, warn_only=True)
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = on


def _driver_version() -> str | None:
    """The NVIDIA driver's version (NVML when importable, else ``nvidia-smi``), or ``None``."""
    try:
        import pynvml  # nvidia-ml-py

        pynvml.nvmlInit()
        try:
            v = pynvml.nvmlSystemGetDriverVersion()
            return v.decode() if isinstance(v, bytes) else str(v)
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # noqa: BLE001 -- no NVML: ask the command line tool
        pass
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        out = subprocess.run([smi, "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=10, check=True).stdout.strip().splitlines()
        return out[0].strip() if out else None
    except (OSError, subprocess.SubprocessError):
        return None


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _host_memory_gib() -> float | None:
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2 ** 30, 1)
    except (ValueError, OSError, AttributeError):
        return None


def device_info(device) -> dict:
    """What a run records about its device: name, memory, versions.

    CUDA: the card's name, memory (GiB), compute capability, CUDA runtime, cuDNN and driver
    versions; CPU: the processor, cores, memory and torch's thread count. Always ``type``,
    ``device`` and the torch version.

    Examples
    --------
    >>> info = device_info(torch.device("cpu"))
    >>> info["type"], info["device"], "cores" in info
    ('cpu', 'cpu', True)
    """
    device = as_device(device)
    info = {"type": device.type, "device": str(device), "torch": torch.__version__}
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        props = torch.cuda.get_device_properties(index)
        info.update(device=f"cuda:{index}", name=props.name, memory_gib=round(props.total_memory / 2 ** 30, 1),
                    capability=f"{props.major}.{props.minor}", cuda=torch.version.cuda,
                    cudnn=torch.backends.cudnn.version(), driver=_driver_version())
    elif device.type == "cpu":
        info.update(name=_cpu_name(), cores=os.cpu_count(), memory_gib=_host_memory_gib(),
                    threads=torch.get_num_threads())
    elif device.type == "mps":
        info.update(name=f"Apple MPS ({platform.machine()})", memory_gib=_host_memory_gib())
    else:
        info.update(name=f"{device.type} (no computation: shapes only)")
    return info


@dataclass(frozen=True)
class RunDevice:
    """A run's device, precision and determinism, resolved once by :func:`setup`.

    Attributes
    ----------
    device : torch.device
    precision : {"fp32", "bf16", "fp16"}
    deterministic : bool
    requested : str
        The ``device`` parameter as given (``"auto"`` when the run chose).
    info : dict
        :func:`device_info` of the device.
    """

    device: torch.device
    precision: str = "fp32"
    deterministic: bool = False
    requested: str = "auto"
    info: dict = field(default_factory=dict, compare=False)

    @property
    def type(self) -> str:
        return self.device.type

    def autocast(self):
        """The forward passes' context: autocast in the run's precision (nothing for fp32)."""
        return autocast(self.device, self.precision)

    def workers(self, workers: int, *, fork: bool = False) -> int:
        """Worker processes a notebook may start: ``workers`` on the CPU, 1 on an accelerator
        (one process drives the device; CUDA does not survive a fork). With ``fork=True``
        (the workers are forked, as notebook 01's CL runs are) also 1 on the CPU of a machine
        that has an accelerator: autograd does not survive that fork either (:func:`fork_safe`).

        Examples
        --------
        >>> rd = RunDevice(torch.device("cpu"))
        >>> rd.workers(4), rd.workers(4, fork=True) == (4 if fork_safe() else 1)
        (4, True)
        """
        if self.device.type != "cpu" or (fork and not fork_safe()):
            return 1
        return workers

    def describe(self) -> str:
        """One line for the notebook: the device, how it was chosen, its name and memory, the precision.

        Examples
        --------
        >>> RunDevice(torch.device("cpu"), requested="auto", info={"name": "x86", "cores": 2}).describe()
        'cpu (chosen by device=auto: no CUDA device): x86, 2 cores; precision fp32'
        """
        i = self.info
        how = ""
        if self.requested == "auto":
            how = " (chosen by device=auto: " + ("no CUDA device)" if self.device.type == "cpu" else "CUDA available)")
        what = i.get("name", self.device.type)
        if self.device.type == "cuda":
            what += f", {i.get('memory_gib')} GiB, CUDA {i.get('cuda')}, driver {i.get('driver') or 'unknown'}"
        elif self.device.type == "cpu" and i.get("cores"):
            what += f", {i['cores']} cores"
        det = "; deterministic algorithms on" if self.deterministic else ""
        return f"{self.device}{how}: {what}; precision {self.precision}{det}"

    def record(self) -> dict:
        """The machine-readable record for ``results.json``."""
        return {"device": str(self.device), "requested": self.requested, "precision": self.precision,
                "deterministic": self.deterministic, **{f"device_{k}": v for k, v in self.info.items()
                                                        if k not in ("device",)}}


def setup(device="auto", precision: str = "fp32", deterministic: bool = False) -> RunDevice:
    """Resolve a run's ``device``, ``precision`` and ``deterministic`` parameters (once per run).

    Checks all three (``ValueError`` / ``TypeError`` naming the parameter, the value and
    what is allowed), applies ``deterministic`` to this process (:func:`set_deterministic`)
    and returns the :class:`RunDevice` that learners, backbones and data are given.

    Examples
    --------
    >>> rd = setup("cpu")
    >>> rd.device, rd.precision, rd.deterministic, rd.record()["device_type"]
    (device(type='cpu'), 'fp32', False, 'cpu')
    >>> setup("cpu", deterministic="yes")
    Traceback (most recent call last):
    ...
    TypeError: deterministic must be true or false, got str 'yes'
    """
    requested = device if isinstance(device, str) else str(device)
    dev = resolve_device(device)
    if dev.type == "meta":
        raise ValueError("device 'meta' computes no values (it is for tests); use one of "
                         f"{' | '.join(DEVICES)}")
    precision = check_precision(precision, dev)
    set_deterministic(deterministic)
    return RunDevice(dev, precision, deterministic, requested, device_info(dev))


_NULL = contextlib.nullcontext()


def autocast(device, precision: str = "fp32"):
    """``torch.autocast`` for ``precision`` on ``device``; a reusable no-op context for fp32 (and on meta)."""
    device = as_device(device)
    if precision == "fp32" or device.type == "meta":
        return _NULL
    return torch.autocast(device.type, dtype=_DTYPES[precision])


class Amp:
    """A learner's mixed-precision steps: autocast, loss scaling (fp16) and the optimizer step.

    ``fp32`` costs nothing: :meth:`autocast` is a shared no-op context, :meth:`backward` is
    ``loss.backward()`` and :meth:`step` is ``optimizer.step()``. ``fp16`` scales the loss
    with a :class:`torch.amp.GradScaler` and unscales the gradients right after the backward
    pass, so hooks that read or change gradients (projections) see their true values; a step
    whose gradients overflowed is skipped by the scaler, which costs one read of a flag per
    step.

    Examples
    --------
    >>> amp = Amp("fp32", torch.device("cpu"))
    >>> w = torch.nn.Parameter(torch.ones(2)); opt = torch.optim.SGD([w], lr=0.5)
    >>> with amp.autocast():
    ...     loss = (w ** 2).sum()
    >>> amp.backward(loss, opt); amp.step(opt); w.tolist()
    [0.0, 0.0]
    """

    def __init__(self, precision: str = "fp32", device=torch.device("cpu")):
        self.device = as_device(device)
        self.precision = check_precision(precision, self.device)
        self._ctx = autocast(self.device, self.precision)
        self.scaler = (torch.amp.GradScaler(self.device.type)
                       if self.precision == "fp16" and self.device.type == "cuda" else None)

    def autocast(self):
        """The context of a forward pass."""
        return self._ctx if self._ctx is _NULL else autocast(self.device, self.precision)

    def backward(self, loss: torch.Tensor, optimizer) -> None:
        """``loss.backward()``; in fp16 on the scaled loss, then the gradients unscaled."""
        if self.scaler is None:
            loss.backward()
        else:
            self.scaler.scale(loss).backward()
            self.scaler.unscale_(optimizer)

    def step(self, optimizer) -> None:
        """``optimizer.step()``; in fp16 through the scaler (skipped on overflow)."""
        if self.scaler is None:
            optimizer.step()
        else:
            self.scaler.step(optimizer)
            self.scaler.update()


def move(x, device, *, non_blocking: bool = True):
    """``x`` (a tensor, or a tuple/list/dict of them) on ``device``; tensors already there are returned as they are.

    From the CPU to CUDA the tensor is pinned first and copied without blocking the host,
    so a task's data goes over while the previous kernels run. Meant for task boundaries:
    move a task once, then index it on the device.

    Examples
    --------
    >>> t = torch.ones(3)
    >>> move(t, "cpu") is t, move((t, t), torch.device("meta"))[0].device
    (True, device(type='meta'))
    """
    device = as_device(device)
    if isinstance(x, torch.Tensor):
        if x.device == device or (device.index is None and x.device.type == device.type):
            return x
        if device.type == "cuda" and x.device.type == "cpu" and non_blocking:
            try:
                x = x.pin_memory()
            except RuntimeError:   # no CUDA driver for pinning: a plain copy
                non_blocking = False
        return x.to(device, non_blocking=non_blocking)
    if isinstance(x, (tuple, list)):
        return type(x)(move(v, device, non_blocking=non_blocking) for v in x)
    if isinstance(x, dict):
        return {k: move(v, device, non_blocking=non_blocking) for k, v in x.items()}
    return x


def to_host(x) -> np.ndarray:
    """A tensor's values as a NumPy array on the host: the one place a loop reads the device.

    On the ``meta`` device (shapes, no values) the result is NaN of the same shape, so code
    paths can be run end to end on ``meta`` in tests. Non-tensors go through ``np.asarray``.

    Examples
    --------
    >>> to_host(torch.tensor([1.0, 2.0])).tolist(), to_host(torch.ones(2, device="meta")).tolist()
    ([1.0, 2.0], [nan, nan])
    """
    if isinstance(x, torch.Tensor):
        if x.device.type == "meta":
            return np.full(tuple(x.shape), np.nan)
        x = x.detach()
        if x.dtype == torch.bfloat16:
            x = x.float()
        return x.cpu().numpy()
    return np.asarray(x)


def host_float(x) -> float:
    """``float(x)`` for a one-element tensor or a number; NaN on the ``meta`` device."""
    if isinstance(x, torch.Tensor):
        return float(to_host(x).reshape(-1)[0]) if x.numel() else float("nan")
    return float(x)


class DeviceAudit(torch.overrides.TorchFunctionMode):
    """Raise when a torch call mixes a CPU tensor into work on ``device`` (for tests).

    PyTorch itself stops most such calls on an accelerator, but not all on ``meta`` (e.g.
    ``index_select`` with an index on the CPU runs on ``meta`` and fails on CUDA). Under this
    mode every torch call that takes a tensor on ``device`` and a CPU tensor with at least one
    dimension raises ``RuntimeError`` naming the call, except those PyTorch allows on CUDA too:
    indexing with a CPU index (``x[idx]``; a small host-to-device copy), copying into a tensor
    (``copy_``, ``to``), deep copies (``copy.deepcopy`` of a model on the device that also
    holds a CPU generator: each tensor is copied where it is) and 0-dim CPU tensors (scalars). Reads of values fail on ``meta`` by
    themselves (``.item()``, ``.tolist()``, ``.numpy()``).

    Examples
    --------
    >>> x = torch.ones(3, device="meta")
    >>> with DeviceAudit("meta"):
    ...     _ = x[torch.tensor([0, 1])] + x[:2]          # allowed: CPU index
    ...     x.index_select(0, torch.tensor([0]))
    Traceback (most recent call last):
    ...
    RuntimeError: index_select mixes a CPU tensor of shape (1,) into work on meta
    """

    _ALLOWED = {"__getitem__", "to", "copy_", "_to_copy", "__get__", "__set__", "size", "dim", "__len__",
                "is_floating_point", "__repr__", "__format__", "type", "_has_compatible_shallow_copy_type",
                "is_contiguous", "data_ptr", "stride", "numel", "_is_view", "requires_grad_",
                "__deepcopy__"}   # copy.deepcopy copies each tensor where it is (its memo holds the others)

    def __init__(self, device):
        super().__init__()
        self.device = as_device(device)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", str(func))
        if self.device.type != "cpu" and name not in self._ALLOWED:   # on the CPU there is nothing to mix
            flat = _tensors((args, kwargs))
            if any(t.device.type == self.device.type for t in flat):
                for t in flat:
                    if t.device.type == "cpu" and t.dim() > 0 and not (name == "__setitem__" and t is _index_of(args)):
                        raise RuntimeError(f"{name} mixes a CPU tensor of shape {tuple(t.shape)} into work on "
                                           f"{self.device}")
        return func(*args, **kwargs)


def _tensors(obj) -> list:
    """Every tensor inside nested tuples, lists and dicts."""
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, (tuple, list)):
        return [t for v in obj for t in _tensors(v)]
    if isinstance(obj, dict):
        return [t for v in obj.values() for t in _tensors(v)]
    return []


def _index_of(args):
    """The index argument of ``x[idx] = value`` (a CPU index is allowed there, as in ``x[idx]``)."""
    return args[1] if len(args) > 1 else None
