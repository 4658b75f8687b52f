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


def test_no_gpus_no_gres():
    assert slurm_kwargs()["job_extra_directives"] == []


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
