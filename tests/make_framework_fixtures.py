"""Write tests/data/compare/mammoth and tests/data/compare/pycil: the provenance of those fixtures.

Neither framework is installable here (offline), so the logs are **fabricated** in the format their
code writes, as read (not copied) from:

- mammoth (aimagelab/mammoth @ e75a491c69fd729edeb01431afb753d9157d9a81): ``utils/loggers.py``
  ``Logger.write`` appends ``str(dict)`` + newline to ``<results>/<setting>/<dataset>/<model>/logs.pyd``;
  the dict is ``vars(args)`` plus ``accmean_task{i}`` (``np.mean`` of the row: ``np.float64``),
  ``accuracy_{j}_task{i}`` (``utils/evaluate.py``: ``correct / total * 100``, a Python float),
  ``cpu_memory_usage``, ``gpu_memory_usage``, ``forward_transfer`` / ``backward_transfer`` /
  ``forgetting`` (``np.float64`` with ``--enable_other_metrics``, else ``None``), in that order.
- PyCIL (LAMDA-CL/PyCIL @ f3509b8ca3f20660ce4aa13f19d5283de81b4b35): ``trainer.py`` logs with
  ``%(asctime)s [%(filename)s] => %(message)s``: ``print_args`` (``key: value``), then per task
  ``All params``, ``Trainable params``, ``CNN: {grouped}`` (``NME: {grouped}`` for iCaRL), the
  top1/top5 curves and ``Average Accuracy``; at the end ``Forgetting (CNN)`` (and NME). ``grouped``
  (``utils/toolkit.accuracy``) is ``total``, one ``"aa-bb"`` key per 10 classes, ``old``, ``new``,
  each ``np.around(..., decimals=2)`` (``old`` is the int ``0`` after the first task).

Run from the repository root: ``.venv/bin/python tests/make_framework_fixtures.py``. Counts are
fixed (no random state), so the output is the same on every run.
"""

from pathlib import Path

import numpy as np

OUT = Path(__file__).parent / "data" / "compare"

# correct answers out of 1000 test images per task (mammoth) / per 10-class group (PyCIL): [row][col]
MAMMOTH = {
    "sgd": {0: [[981], [402, 975], [310, 355, 978]], 1: [[979], [396, 971], [322, 340, 976]]},
    "derpp": {0: [[980], [901, 960], [870, 890, 955]], 1: [[978], [895, 958], [861, 884, 951]]},
}
PYCIL = {
    "finetune": {1993: [[912], [105, 890], [41, 120, 885]], 1994: [[905], [98, 884], [37, 115, 880]]},
    "icarl": {1993: [[915], [780, 850], [690, 720, 835]], 1994: [[910], [771, 845], [684, 713, 829]]},
}


def _mammoth_args(model: str, seed: int) -> dict:
    # a part of mammoth's vars(args) (the full namespace has ~100 keys), in argparse order
    return {"dataset": "seq-cifar10", "model": model, "lr": 0.03, "batch_size": 32, "n_epochs": 50,
            "buffer_size": 500 if model != "sgd" else None, "seed": seed, "permute_classes": 0,
            "base_path": "./data/", "results_path": "results/", "enable_other_metrics": 1, "eval_future": 0,
            "eval_epochs": None, "validation": None, "nowand": 1, "disable_log": 0, "notes": None,
            "conf_jobnum": "3f2c9a1e-8d1b-4c55-b0a4-6e1f0d2c7b11", "conf_timestamp": "2026-05-21 10:02:11.481516",
            "conf_host": "gpu-node-07"}


def write_mammoth() -> None:
    for model, seeds in MAMMOTH.items():
        folder = OUT / "mammoth" / "class-il" / "seq-cifar10" / model
        folder.mkdir(parents=True, exist_ok=True)
        lines = []
        for seed, counts in seeds.items():
            rows = [[c / 1000 * 100 for c in row] for row in counts]  # evaluate(): correct / total * 100
            d = _mammoth_args(model, seed)
            for i, row in enumerate(rows):
                d[f"accmean_task{i + 1}"] = np.mean(row)
            for i, row in enumerate(rows):
                for j, acc in enumerate(row):
                    d[f"accuracy_{j + 1}_task{i + 1}"] = acc
            d["cpu_memory_usage"] = [2210.5, 2231.2, 2240.9]
            d["gpu_memory_usage"] = [{0: 1480.3}, {0: 1480.3}, {0: 1480.3}]
            T = len(rows)
            d["forward_transfer"] = None  # needs a random-init evaluation; not logged for these
            d["backward_transfer"] = np.mean([rows[-1][k] - rows[k][k] for k in range(T - 1)])
            d["forgetting"] = np.mean([max(rows[r][k] for r in range(k, T)) - rows[-1][k] for k in range(T - 1)])
            lines.append(str(d) + "\n")
        (folder / "logs.pyd").write_text("".join(lines))


def _grouped(row: list, known: int) -> dict:
    acc = [np.around(c * 100 / 1000, decimals=2) for c in row]
    out = {"total": np.around(sum(row) * 100 / (1000 * len(row)), decimals=2)}
    for g, a in enumerate(acc):
        out[f"{str(g * 10).rjust(2, '0')}-{str(g * 10 + 9).rjust(2, '0')}"] = a
    old = [c for g, c in enumerate(row) if g * 10 < known]
    out["old"] = 0 if not old else np.around(sum(old) * 100 / (1000 * len(old)), decimals=2)
    new = [c for g, c in enumerate(row) if g * 10 >= known]
    out["new"] = np.around(sum(new) * 100 / (1000 * len(new)), decimals=2)
    return out


def write_pycil() -> None:
    for model, seeds in PYCIL.items():
        folder = OUT / "pycil" / "logs" / model / "cifar100" / "0" / "10"
        folder.mkdir(parents=True, exist_ok=True)
        for seed, counts in seeds.items():
            (folder / f"reproduce_{seed}_resnet32.log").write_text(_pycil_text(model, seed, counts, [0]))


def write_pycil_multi_seed() -> None:
    """``"seed": [1993, 1994]`` in one PyCIL process: trainer.py's ``logging.basicConfig`` runs once, so both
    seeds go to the first seed's file and the second seed's FileHandler (never attached) leaves a 0-byte file."""
    folder = OUT / "pycil_multi_seed" / "logs" / "finetune" / "cifar100" / "0" / "10"
    folder.mkdir(parents=True, exist_ok=True)
    clock = [0]
    text = "".join(_pycil_text("finetune", seed, counts, clock) for seed, counts in PYCIL["finetune"].items())
    (folder / "reproduce_1993_resnet32.log").write_text(text)
    (folder / "reproduce_1994_resnet32.log").write_text("")


def write_avalanche_placeholder() -> None:
    """Avalanche 0.6's CSVLogger when the EvaluationPlugin has no ``accuracy_metrics(experience=True)``:
    ``after_eval_exp`` starts ``acc, loss, forgetting = 0, 0, 0`` and ``_val_to_str`` writes the int as ``0``
    (a measured float as ``%.4f``); here ``loss_metrics(experience=True)`` is monitored, so the loss is a float."""
    for method, seed in (("naive", 0), ("replay", 0)):
        folder = OUT / "avalanche_placeholder" / f"{method}_seed{seed}"
        folder.mkdir(parents=True, exist_ok=True)
        rows = ["eval_exp,training_exp,eval_accuracy,eval_loss,forgetting"]
        for i in range(3):
            for j in range(3):
                loss = 0.31 + 0.6 * (i - j) if j <= i else 2.2
                rows.append(f"{j},{i},0,{loss:.4f},0")
        (folder / "eval_results.csv").write_text("\n".join(rows) + "\n")
        (folder / "training_results.csv").write_text(
            "training_exp,epoch,training_accuracy,val_accuracy,training_loss,val_loss\n"
            + "".join(f"{i},1,0,0,{0.9 - 0.1 * i:.4f},0\n" for i in range(3)))
    (OUT / "avalanche_placeholder" / "runs.csv").write_text(
        "file,method,seed\nnaive_seed0,naive,0\nreplay_seed0,replay,0\n")


def _pycil_text(model: str, seed: int, counts: list, clock: list) -> str:
    """One seed's lines of trainer.py's log (``clock`` carries the fake time across seeds of one file)."""

    def line(msg, src="trainer.py"):
        clock[0] += 7
        s, ms = divmod(clock[0], 1000)
        return f"2026-05-21 11:{s // 60:02d}:{s % 60:02d},{ms:03d} [{src}] => {msg}\n"

    args = {"config": f"./exps/{model}.json", "prefix": "reproduce", "dataset": "cifar100",
            "memory_size": 2000, "memory_per_class": 20, "fixed_memory": False, "shuffle": True,
            "init_cls": 10, "increment": 10, "model_name": model, "convnet_type": "resnet32",
            "device": "[device(type='cuda', index=0)]", "seed": seed}
    out = [line(f"{k}: {v}") for k, v in args.items()]
    out.append(line("Files already downloaded and verified", "data.py"))
    curves = {"cnn": [], "nme": []}
    for t, row in enumerate(counts):
        out += [line("All params: 464154"), line("Trainable params: 464154"),
                line(f"Learning on {t * 10}-{t * 10 + 10}", f"{model}.py"),
                line(f"Task {t}, Epoch 170/170 => Loss 0.412, Train_accy 91.20, Test_accy "
                     f"{row[-1] / 10:.2f}", f"{model}.py")]
        cnn = _grouped(row, t * 10)
        curves["cnn"].append(cnn["total"])
        if model == "icarl":
            nme = _grouped([c - 5 for c in row], t * 10)
            curves["nme"].append(nme["total"])
            out += [line(f"CNN: {cnn}"), line(f"NME: {nme}"),
                    line(f"CNN top1 curve: {curves['cnn']}"),
                    line(f"CNN top5 curve: {[np.around(min(x + 15, 100), decimals=2) for x in curves['cnn']]}"),
                    line(f"NME top1 curve: {curves['nme']}"),
                    line(f"NME top5 curve: {[np.around(min(x + 15, 100), decimals=2) for x in curves['nme']]}\n"),
                    line(f"Average Accuracy (CNN): {sum(curves['cnn']) / len(curves['cnn'])}"),
                    line(f"Average Accuracy (NME): {sum(curves['nme']) / len(curves['nme'])}")]
        else:
            out += [line("No NME accuracy."), line(f"CNN: {cnn}"),
                    line(f"CNN top1 curve: {curves['cnn']}"),
                    line(f"CNN top5 curve: {[np.around(min(x + 15, 100), decimals=2) for x in curves['cnn']]}\n"),
                    line(f"Average Accuracy (CNN): {sum(curves['cnn']) / len(curves['cnn'])}")]
    heads = {"cnn": counts}
    if model == "icarl":
        heads["nme"] = [[c - 5 for c in row] for row in counts]
    for head, rows in heads.items():
        T = len(rows)
        acc = [[np.around(c * 100 / 1000, decimals=2) for c in row] for row in rows]
        f = np.mean([max(acc[r][k] for r in range(k, T)) - acc[-1][k] for k in range(T - 1)])
        out.append(line(f"Forgetting ({head.upper()}): {f}"))
    return "".join(out)


if __name__ == "__main__":
    write_mammoth()
    write_pycil()
    write_pycil_multi_seed()
    write_avalanche_placeholder()
