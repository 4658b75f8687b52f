"""Notebook 03's memory plan: what a Wild-Time run holds on the host and on the card, checked before loading.

:func:`clkit.temporal.experiment.period_tasks` moves all periods to the run's device once (the
device rule: tensors move at task boundaries, never per step), so the card holds all of the
stream's images next to the network's training memory, and the host holds them too. How they
are held (:func:`image_dtype`):

* **unpooled** (``image_size`` at least the file's: FMoW at 224 px, Yearbook at 32): as the
  file's **uint8** pixels (:func:`clkit.data.temporal.load_wild_time` with ``dtype="uint8"``),
  converted to float and normalised one batch at a time on the device
  (:class:`clkit.temporal.image_input.ImageInput`, the same arithmetic as the float path). FMoW's
  141,696 images at 224 px take 21.3 GB (19.9 GiB); with the largest batch converted at once
  (:data:`CONVERT_BATCH` = 4096 images, the evaluation batch of
  :meth:`clkit.strategies.Strategy.predict`: 2.3 GiB of float32) and a 16 GiB allowance for
  DenseNet-121 the card needs 38.2 GiB: an 80 GB H100 (74.5 GiB by ``80 x 10^9`` bytes, 79.6 GiB
  by torch's count) holds it, and a 32 GiB host holds the 19.9 GiB of images.
* **pooled** (FMoW at 32 px): as float32 (pooling averages pixels), 1.6 GiB for all of FMoW.

The images are counted exactly (:func:`clkit.data.temporal.wild_time_bytes`); the training
memory of the network is an **allowance, not a measurement**: :data:`TRAINING_ALLOWANCE_GIB`
per backbone (DenseNet-121 at 224 px and batch 64 in fp32: activations kept for the backward
pass, weights, gradients and Adam's two moments; the smaller backbones far less). The host
holds the images once (:data:`HOST_COPIES`), plus, while the loader joins a period's split, that
split's copy (the loader releases each step's part as it is joined).
"""

from __future__ import annotations

from .._validate import check_choice, check_int

__all__ = ["TRAINING_ALLOWANCE_GIB", "HOST_COPIES", "CONVERT_BATCH", "image_dtype", "memory_plan",
           "check_memory_plan", "run_memory_plan"]

#: GiB set aside on the card for training the backbone (an allowance, not a measurement)
TRAINING_ALLOWANCE_GIB = {"densenet121": 16.0, "yearbook_cnn": 1.0, "mlp": 2.0}

#: copies of the float32 images the host must hold at least (the loader's peak adds one period's split)
HOST_COPIES = 1

#: images converted from uint8 to float32 at once at most (Strategy.predict's evaluation batch)
CONVERT_BATCH = 4096

_GIB = 2 ** 30


def image_dtype(dataset: str, image_size: int) -> str:
    """How notebook 03 holds Wild-Time ``dataset``'s images at ``image_size``: ``"uint8"`` unpooled, else ``"float32"``.

    Examples
    --------
    >>> image_dtype("fmow", 224), image_dtype("fmow", 32), image_dtype("yearbook", 32)
    ('uint8', 'float32', 'uint8')
    """
    from ..data.temporal import wild_time_native_size

    image_size = check_int("image_size", image_size, low=1)
    return "uint8" if image_size >= wild_time_native_size(dataset) else "float32"


def memory_plan(dataset: str, *, image_size: int, max_per_period: int = 0, backbone: str = "mlp",
                device_bytes: int | None = None, host_bytes: int | None = None, device_name: str = "") -> dict:
    """Bytes a Wild-Time run needs on its device and its host, against what they have.

    Parameters
    ----------
    dataset : {"fmow", "yearbook"}
    image_size : int
        Pixels a side (FMoW: 32 pooled or 224, Wild-Time's).
    max_per_period : int
        Images per split and time step at most (0: all).
    backbone : str
        Picks the training allowance (:data:`TRAINING_ALLOWANCE_GIB`; unknown: the largest).
    device_bytes, host_bytes : int, optional
        The card's total memory and the host's; ``None``: not checked.
    device_name : str
        The card's name, for the message.

    Returns
    -------
    dict
        ``dtype`` (:func:`image_dtype`), ``images_bytes``, ``convert_bytes`` (one batch of
        :data:`CONVERT_BATCH` images as float32, uint8 only), ``device_need_bytes`` (images +
        conversion + allowance), ``host_need_bytes``
        (:data:`HOST_COPIES` x images), ``device_bytes``, ``host_bytes``, ``fits_device``,
        ``fits_host`` (``None`` where not checked) and ``text``, one line saying it.

    Examples
    --------
    >>> p = memory_plan("fmow", image_size=224, backbone="densenet121", device_bytes=80 * 10**9, device_name="H100")
    >>> p["dtype"], round(p["images_bytes"] / 2**30, 1), round(p["device_need_bytes"] / 2**30, 1), p["fits_device"]
    ('uint8', 19.9, 38.2, True)
    >>> memory_plan("fmow", image_size=224, backbone="densenet121", device_bytes=32 * 10**9)["fits_device"]
    False
    >>> memory_plan("fmow", image_size=32, backbone="densenet121", device_bytes=80 * 10**9)["fits_device"]
    True
    """
    from ..data.temporal import WILD_TIME_IMAGES, wild_time_bytes

    check_choice("dataset", dataset, ["fmow", "yearbook"])
    image_size = check_int("image_size", image_size, low=1)
    max_per_period = check_int("max_per_period", max_per_period, low=0)
    dtype = image_dtype(dataset, image_size)
    images = wild_time_bytes(dataset, image_size, max_per_period, dtype=dtype)
    count, (c, h, w) = WILD_TIME_IMAGES[dataset]
    convert = 0 if dtype == "float32" else min(CONVERT_BATCH, count) * c * h * w * 4
    allowance = TRAINING_ALLOWANCE_GIB.get(backbone, max(TRAINING_ALLOWANCE_GIB.values()))
    need_dev = images + convert + int(allowance * _GIB)
    need_host = HOST_COPIES * images
    fits_dev = None if device_bytes is None else need_dev <= device_bytes
    fits_host = None if host_bytes is None else need_host <= host_bytes
    card = f" ({device_name})" if device_name else ""
    conv = f" + {convert / _GIB:.1f} GiB for converting {CONVERT_BATCH} of them to float32 at once" if convert else ""
    text = (f"Memory plan: {images / _GIB:.1f} GiB of {dtype} images ({dataset}, {image_size} px"
            f"{f', at most {max_per_period} per split and step' if max_per_period else ''}){conv} + a {allowance:g} GiB "
            f"training allowance for {backbone} = {need_dev / _GIB:.1f} GiB on the device"
            + ("" if device_bytes is None else f"{card}, which has {device_bytes / _GIB:.1f} GiB")
            + f"; {need_host / _GIB:.1f} GiB on the host"
            + ("" if host_bytes is None else f", which has {host_bytes / _GIB:.1f} GiB") + ".")
    return {"dataset": dataset, "image_size": image_size, "backbone": backbone, "dtype": dtype, "images_bytes": images,
            "convert_bytes": convert, "device_need_bytes": need_dev, "host_need_bytes": need_host,
            "device_bytes": device_bytes, "host_bytes": host_bytes, "fits_device": fits_dev,
            "fits_host": fits_host, "text": text}


def check_memory_plan(plan: dict) -> None:
    """Refuse a plan over its device's or its host's memory, naming the parameters that make it fit.

    Examples
    --------
    >>> check_memory_plan(memory_plan("fmow", image_size=224, backbone="densenet121", device_bytes=32 * 10**9,
    ...                               device_name="Tesla V100-SXM2-32GB"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: image_size 224 does not fit the device: ... 38.2 GiB on the device (Tesla V100-SXM2-32GB), which has 29.8 GiB...
    """
    for where, key in (("device", "fits_device"), ("host", "fits_host")):
        if plan[key] is False:
            raise ValueError(
                f"image_size {plan['image_size']} does not fit the {where}: {plan['text']} The 224-px FMoW set "
                f"(paper) needs a card with {plan['device_need_bytes'] / 2**30:.0f} GiB (an 80 GB H100 holds it) and a "
                f"host with {plan['host_need_bytes'] / 2**30:.0f} GiB; on a smaller machine set -p max_per_period N "
                "(images per split and year) or run the paper_32px set (32 px, 1.7 GB).")



def run_memory_plan(dataset: str, device, *, image_size: int, max_per_period: int = 0, backbone: str = "mlp",
                    check: bool = True) -> dict | None:
    """:func:`memory_plan` on the run's ``device`` and this host, checked (:func:`check_memory_plan`) before loading.

    The card's total memory on CUDA (``torch.cuda.get_device_properties``); on the CPU the
    images stay on the host, so only the host is checked (its free memory,
    :func:`clkit._validate.available_memory`); other devices (MPS, ``meta``): not checked.
    ``None`` for a dataset that is not Wild-Time's.

    Examples
    --------
    >>> import torch
    >>> run_memory_plan("rainfall", torch.device("cpu"), image_size=32) is None
    True
    >>> run_memory_plan("yearbook", torch.device("meta"), image_size=32)["fits_device"] is None
    True
    """
    import torch

    from .._validate import available_memory
    from ..device import as_device

    if dataset not in ("fmow", "yearbook"):
        return None
    device = as_device(device)
    dev_bytes, name = None, ""
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        dev_bytes, name = int(props.total_memory), props.name
    plan = memory_plan(dataset, image_size=image_size, max_per_period=max_per_period, backbone=backbone,
                       device_bytes=dev_bytes, host_bytes=available_memory() if device.type in ("cpu", "cuda") else None,
                       device_name=name)
    if check:
        check_memory_plan(plan)
    return plan
