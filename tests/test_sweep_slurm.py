"""``clkit sweep --cluster slurm`` (issue 42): the options become dask-jobqueue's SLURMCluster and its job
script's #SBATCH lines (built for real, nothing submitted: no Slurm here); bad values exit 2 naming the option."""

import pytest

from clkit.cli import main
from clkit.cluster import slurm_kwargs


def test_job_script_has_the_sbatch_lines():
    pytest.importorskip("dask_jobqueue", reason="the slurm extra: pip install 'clkit[slurm]'")
    from dask_jobqueue import SLURMCluster

    kw = slurm_kwargs(cores=8, memory="16GB", walltime="02:00:00", gpus=2, queue="gpu", account="lab")
    cluster = SLURMCluster(**kw, scheduler_options={"dashboard_address": ":0"})
    try:
        script = cluster.job_script()
    finally:
        cluster.close()
    lines = [ln.strip() for ln in script.splitlines()]
    for want in ("#SBATCH --cpus-per-task=8", "#SBATCH -t 02:00:00", "#SBATCH --gres=gpu:2", "#SBATCH -p gpu",
                 "#SBATCH -A lab", "#SBATCH -n 1"):
        assert want in lines, f"{want!r} not in\n{script}"
    assert any(ln.startswith("#SBATCH --mem=") for ln in lines)
    worker = next(ln for ln in lines if "distributed.cli.dask_worker" in ln)
    assert "--nthreads 1" in worker            # one case at a time per job, with all its cores and GPUs
    assert "--resources GPU=2" in worker       # a case with device cuda (resources GPU=1) can land on it


def test_no_gpus_no_gres():
    assert slurm_kwargs()["job_extra_directives"] == [] and slurm_kwargs()["worker_extra_args"] == []


@pytest.mark.parametrize("device, resources", [("cuda", {"GPU": 1}), ("cuda:1", {"GPU": 1}), ("auto", None),
                                               ("cpu", None)])
def test_a_gpu_case_is_submitted_asking_for_a_gpu_worker(device, resources):
    """cuda / cuda:N need a worker that declares GPU; auto runs anywhere (on the CPU where there is no GPU)."""
    from clkit.sweep.execute import submit_options

    options = submit_options({"key": "abcdef0123456789", "params": {"device": device, "seed": 0}}, "r1")
    assert options.get("resources") == resources
    assert options["key"] == "clkit-case-abcdef012345-r1" and options["pure"] is False


class _Client:
    """Stands in for a Dask client whose connected workers declare ``resources``."""

    def __init__(self, *resources):
        self.resources = resources

    def scheduler_info(self):
        return {"workers": {f"tcp://w{i}": {"resources": r} for i, r in enumerate(self.resources)}}


def test_gpu_cases_without_a_gpu_worker_are_refused_before_submitting():
    from clkit.sweep.execute import _check_gpus

    cases = [{"index": 0, "name": "device=cpu", "params": {"device": "cpu"}},
             {"index": 1, "name": "device=cuda", "params": {"device": "cuda"}}]
    with pytest.raises(ValueError) as err:
        _check_gpus(_Client({}, {}), cases, "the Dask cluster at tcp://h:8786")
    msg = str(err.value)
    assert msg.startswith("device: case 1 (device=cuda) has device='cuda' (1 of 2 case(s) need a GPU)")
    assert "the Dask cluster at tcp://h:8786 has no GPU worker" in msg and "--cluster slurm --gpus N" in msg
    _check_gpus(_Client({}, {"GPU": 1}), cases, "x")     # one GPU worker: fine
    _check_gpus(_Client(), cases, "x")                   # no worker yet (jobs queued): cannot tell, not refused
    _check_gpus(_Client({}), cases[:1], "x")             # CPU cases need none


def test_cluster_slurm_without_gpus_refuses_gpu_cases_before_any_job(tmp_path, capsys, monkeypatch):
    """Exit 2 naming the device and the cluster; sbatch never runs (a stand-in would record it)."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (bin_ / "sbatch").write_text(f"#!/bin/sh\ntouch {tmp_path}/submitted\n")
    (bin_ / "sbatch").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_}:{__import__('os').environ['PATH']}")
    grid = tmp_path / "grid.yaml"
    grid.write_text("params: smoke\ngrid:\n  device: [cuda]\n")
    argv = ["sweep", "03", "--grid", str(grid), "--out", str(tmp_path / "out"), "--cluster", "slurm"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "device: case 0 (device=cuda) has device='cuda'" in err
    assert "--cluster slurm without --gpus has no GPU worker" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "submitted").exists()


@pytest.mark.parametrize("options, words", [
    (["--cluster", "slurm", "--cores", "0"], "--cores must be a whole number >= 1, got '0'"),
    (["--cluster", "slurm", "--memory", "lots"], "--memory must be a number and a unit"),
    (["--cluster", "slurm", "--walltime", "2h"], "--walltime must be Slurm's"),
    (["--cluster", "slurm", "--gpus", "-1"], "--gpus must be a whole number >= 0, got '-1'"),
    (["--cluster", "slurm", "--jobs", "x"], "--jobs must be a whole number >= 1, got 'x'"),
    (["--cluster", "slurm", "--queue", "a b"], "--queue must be a Slurm partition"),
    (["--cluster", "pbs"], "--cluster must be one of slurm, got 'pbs'"),
    (["--cores", "4"], "--cores sets a batch job's resources: it needs --cluster slurm"),
    (["--cluster", "slurm", "--scheduler", "tcp://h:8786"], "leave --scheduler out"),
])
def test_bad_options_exit_2_naming_them(tmp_path, capsys, options, words):
    argv = ["sweep", "03", "--grid", str(tmp_path / "grid.yaml"), "--out", str(tmp_path / "out"), *options]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_start_slurm_submits_the_jobs_with_sbatch(tmp_path, monkeypatch):
    """start_slurm asks sbatch for --jobs jobs (a stand-in sbatch records the scripts; no worker starts)."""
    pytest.importorskip("dask_jobqueue", reason="the slurm extra: pip install 'clkit[slurm]'")
    import time

    from clkit.cluster import start_slurm

    bin_ = tmp_path / "bin"
    bin_.mkdir()
    log = tmp_path / "submitted"
    log.mkdir()
    (bin_ / "sbatch").write_text(f'#!/bin/sh\ncp "$1" {log}/job$$.sh\necho "Submitted batch job $$"\n')
    (bin_ / "scancel").write_text(f'#!/bin/sh\necho "$@" >> {tmp_path}/cancelled\n')
    for f in bin_.iterdir():
        f.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_}:{__import__('os').environ['PATH']}")
    cluster = start_slurm(2, cores=4, memory="8GB", walltime="00:30:00", gpus=1)
    try:
        deadline = time.monotonic() + 30
        while len(list(log.iterdir())) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        scripts = [p.read_text() for p in sorted(log.iterdir())]
    finally:
        cluster.close()
    assert len(scripts) == 2
    assert all("#SBATCH --cpus-per-task=4" in s and "#SBATCH --gres=gpu:1" in s and "-t 00:30:00" in s
               for s in scripts)
    cancelled = sorted((tmp_path / "cancelled").read_text().split())   # close() cancels both jobs
    assert cancelled == sorted(p.stem[3:] for p in log.iterdir())


def test_a_local_cluster_makes_one_worker_per_gpu(monkeypatch):
    """gpus=1 of 2 workers (as on a machine with one CUDA device): one worker declares GPU=1 and sees
    device 0 alone; the other declares nothing. A GPU task runs on the GPU worker."""
    import os

    from clkit.cluster import close_client, start_client

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    client, cluster = start_client(2, gpus=1)
    try:
        workers = client.scheduler_info()["workers"]
        assert sorted(str((w.get("resources") or {}).get("GPU")) for w in workers.values()) == ["1", "None"]
        seen = client.submit(lambda: os.environ.get("CUDA_VISIBLE_DEVICES"), resources={"GPU": 1},
                             pure=False).result()   # a lambda: the worker's os.environ, not a pickled copy of ours
        assert seen == "0"
    finally:
        close_client(client, cluster)


def test_cluster_slurm_without_sbatch_is_one_line_not_a_hang(tmp_path, capsys, monkeypatch):
    """Issue 55: without sbatch on PATH, dask-jobqueue printed a tornado traceback, then waited forever."""
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    grid = tmp_path / "grid.yaml"
    grid.write_text("params: smoke\ngrid:\n  seed: [0, 1]\n")
    argv = ["sweep", "03", "--grid", str(grid), "--out", str(tmp_path / "out"), "--cluster", "slurm"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "sbatch is not on PATH" in err[0] and "clkit run-case" in err[0], err


@pytest.mark.parametrize("text, words", [
    ("[]", "a JSON list, where clkit sweep writes an object"),
    ('{"notebook": "03_temporal_metrics", "cases": [{"index": 0', "invalid JSON at line 1"),
    ('{"cases": []}', "no notebook"),
    ("\xff\xfe", "not text"),
])
def test_a_broken_sweep_json_names_the_file(tmp_path, capsys, text, words):
    """Issue 55: ``[]`` gave "list indices must be integers", a truncated file a JSON error without the file."""
    root = tmp_path / "sweep"
    root.mkdir()
    (root / "sweep.json").write_bytes(text.encode("latin-1"))
    assert main(["run-case", str(root), "0"]) == 2
    err = capsys.readouterr().err
    assert f"{root / 'sweep.json'} is not a sweep manifest" in err and words in err, err
    assert "prepare the sweep again" in err and "Traceback" not in err
