"""Every command in README.md and docs/*.md runs as written (issue 43).

Extraction (:func:`extract`)
    Fenced blocks tagged ``bash``/``sh``/``shell``/``console``, or untagged: in a block of
    ``$ ``-prompted lines only the prompted lines are commands (the rest is their output);
    otherwise every line is one, ``\\`` continuations joined and ``# comments`` dropped. An
    untagged block whose first line is no command (a file layout, CSV) is not a command block.
    Inline code spans that start with ``clkit ``, ``.venv/bin/clkit ``, ``make ``, ``python -m
    clkit``, ``.venv/bin/python `` or ``CLKIT_...=... clkit`` are commands too, except a bare
    subcommand name (``clkit summary``: a reference, not a command). A command with
    placeholders (``RUNS``, ``NN``, ``<results.json>``, ``[--out DIR]``) is a template: its
    subcommand must exist, nothing more. ``docs/generated/*.md`` is not read on its own: each
    file is embedded verbatim in a page's generated block (``clkit.docs``), read with that page.
    A YAML block whose first line is ``# NAME.yaml`` is written to ``NAME.yaml`` for the
    commands after it. ``<!-- expect exit: 2 0 -->`` just before a block gives the exit status
    of each of its commands (a page showing a failing example on purpose); otherwise 0.

Execution
    Per page, in page order, in a fresh project folder (``tmp_path``) holding links to the
    checkout's ``.venv``, ``examples``, ``benchmarks`` and ``notebooks``, with ``.venv/bin``
    first on PATH: so ``.venv/bin/clkit`` and ``clkit`` both resolve, and files that earlier
    commands wrote (``my-notebooks/``, ``runs/``) are there for later ones. A ``clkit``
    command goes through the console script's entry point (``clkit.cli.main``) in this
    process with the argument list the shell gives it (``shlex``; a leading ``VAR=value`` is
    set in the environment): one import of torch and the papers for all of them. Every other
    command runs in ``bash``. The exit status must be the expected one and nothing may raise
    (no traceback).

Cost (the whole file: well under 120 s on 2 cores)
    ``clkit run ...`` runs with ``--check`` appended (``docs/running.md``: the parameters
    resolved and the notebook executed through its validation cell, nothing written; a
    smoke run takes 20-40 s, a default run minutes), and ``clkit sweep ...`` with
    ``--print-cases`` (the plan written and listed, nothing run), after which its first and
    last case are checked like a ``clkit run --check``. Commands that cannot run here are in
    :data:`EXCLUDED` by their exact text, each with the reason and where it IS exercised;
    :func:`test_every_command_is_executed_or_excluded` fails for a command that is neither,
    and for an exclusion no page has any more.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import os
import re
import shlex
import subprocess
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL_LANGS = {"bash", "sh", "shell", "console", ""}
INLINE = re.compile(r"(?<!`)`((?:\.venv/bin/clkit |clkit |make |python -m clkit|\.venv/bin/python |"
                    r"CLKIT_[A-Z_]+=\S+ (?:\.venv/bin/)?clkit )[^`]*)`(?!`)")
EXPECT = re.compile(r"^<!--\s*expect exit:\s*([\d ]+?)\s*-->$")
FENCE = re.compile(r"^(\s*)```(\w*)\s*$")
PLACEHOLDER = re.compile(r"^(<[^>]+>|[A-Z][A-Z0-9_]*(\.[a-z]+)?)$")
#: links in the temporary project folder to the checkout's folders the commands name
LINKED = (".venv", "examples", "benchmarks", "notebooks")

# exact command text -> why it does not run here, and where it is exercised
_MAKE = "a Makefile target (the checkout's set-up or a whole run)"
EXCLUDED = {
    "make run": f"{_MAKE}: every notebook at default scale, about 15 min on 2 cores; its commands are `clkit run all --params "
                "default` (checked here) and the docs' numbers come from it (docs/generated, tests/test_docs.py)",
    "make test": f"{_MAKE}: the whole test suite (this file included); what CI runs (.ci/run)",
    "make install": f"{_MAKE}: creates .venv, which this test runs in",
    "make rehearse": f"{_MAKE}: paper-scale rehearsals, minutes each; tests/test_rehearsal_budget.py and each "
                     "notebook's `-p rehearse true` command, checked here",
    "make site": f"{_MAKE}: builds the HTML site from executed notebooks; tests/test_docs.py, tests/test_browser_site.py",
    "make docs": f"{_MAKE}: rewrites the guide's generated blocks from runs/default; tests/test_docs.py runs "
                 "`python -m clkit.docs regenerate --check`",
    "make data": f"{_MAKE}: installs Debian's Fashion-MNIST package with apt (root); make test runs it first",
    "make run && make docs": "make run, then make docs (both above)",
    ".venv/bin/python benchmarks/bench_strategies.py --markdown docs/generated/bench-strategies.md && make docs":
        "a benchmark of minutes that rewrites docs/generated; its `--help` is run here",
    "OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_strategies.py --only steps --runs 3 --rounds 20 "
    "--markdown docs/generated/bench-strategies.md": "the same benchmark (minutes, rewrites docs/generated)",
    "python benchmarks/gpu_check.py --markdown docs/generated/gpu-check.md":
        "needs a GPU; tests/test_gpu_check.py (its CPU parts), and the GPU session of docs/benchmarks.md",
    ".venv/bin/python benchmarks/cora_sigma_table.py": "rewrites docs/cora.md's tables from a Cora run (minutes)",
    "python -m clkit.docs regenerate": "make docs (above)",
    "python -m clkit.site": "make site (above)",
    ".venv/bin/pip install --no-build-isolation -e examples/clkit-example-plugin":
        "installs into the shared .venv; its effect, the plugin's distribution on the path, is made here with "
        "tests/plugin_env.install_example_plugin (as tests/test_plugins.py does), so the plugin commands run",
    "OMP_NUM_THREADS=1 .venv/bin/python -m pytest -q -p no:cacheprovider tests/test_metrics.py clkit/metrics.py":
        "a test run inside the test suite; make test runs both files",
    ".venv/bin/clkit run 04 --params default -p device cuda -p precision bf16 --out runs/gpu":
        "needs a CUDA GPU (on a CPU machine it exits 2 naming the device); tests/test_curriculum_device.py on a GPU",
    ".venv/bin/clkit summary runs/sweep/05_drift --group-by sigma":
        "summarises the sweep's finished cases; the sweep is only planned here (--print-cases): "
        "tests/test_sweep_grid.py runs sweeps and summarises them",
    ".venv/bin/clkit summary runs/lambda/03_temporal_metrics --group-by learner_kwargs.ewc.ewc_lambda":
        "the same (a sweep's finished cases)",
    ".venv/bin/clkit run-case runs/lambda/03_temporal_metrics $SLURM_ARRAY_TASK_ID":
        "a job-array task running one smoke case (20-40 s; $SLURM_ARRAY_TASK_ID set by Slurm); "
        "tests/test_job_array.py",
    "clkit summary runs/lambda/03_temporal_metrics": "the same (a sweep's finished cases)",
    ".venv/bin/clkit plan runs/default/04_curriculum/results.json --effect-sds 2 --power 0.8":
        "reads a default run of 04 (make run); tests/test_stats_rows.py plans on fabricated results",
    "clkit course grade submitted": "needs students' submissions in submitted/; tests/test_course.py grades "
                                    "fabricated ones",
    "clkit course grade submitted --workers 8": "the same",
    "clkit course grade submitted --scheduler tcp://host:8786": "the same, on a Dask cluster at host:8786",
    "jupyter lab course/release/temporal/temporal.ipynb": "opens JupyterLab (interactive)",
    "cd course": "starts the nbgrader session below",
    "nbgrader formgrader": "a web application (interactive)",
    "nbgrader export": "needs the graded submissions of clkit course grade",
    "nbgrader generate_feedback temporal": "needs the graded submissions of clkit course grade",
}


@dataclass
class Command:
    page: str
    line: int
    text: str
    expect: int = 0
    template: bool = False
    files: dict = field(default_factory=dict)   # name -> text written before it runs

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def _strip_comment(line: str) -> str:
    """``line`` without a trailing ``# comment`` (outside quotes)."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.rstrip()


def _subcommands():
    from clkit.cli import build_parser

    def tree(parser):
        import argparse

        for a in parser._actions:
            if isinstance(a, argparse._SubParsersAction):
                return {name: tree(p) for name, p in a.choices.items()}
        return {}

    return tree(build_parser())


def _is_reference(text: str, subs) -> bool:
    """``clkit summary``, ``clkit metrics cl``: only a subcommand's name."""
    words = text.split()
    if words[0] not in ("clkit", ".venv/bin/clkit"):
        return False
    node = subs
    for w in words[1:]:
        if w not in node:
            return False
        node = node[w]
    return True


def _is_template(text: str) -> bool:
    try:
        words = shlex.split(text)
    except ValueError:
        return True
    return any(PLACEHOLDER.match(w) and not re.match(r"^[A-Z_]+=", w) for w in words[1:]) or \
        bool(re.search(r"\[--|\|", text))


def _block_commands(lines: list[str], lang: str) -> list[tuple[int, str]]:
    """(offset, command) of a fenced block's lines."""
    prompted = any(line.startswith("$ ") for line in lines)
    if lang == "" and not prompted:
        first = next((ln for ln in lines if ln.strip()), "")
        if not re.match(r"^(\.venv/bin/)?(clkit|make|python)\b", first):
            return []   # a file layout, a CSV, a synopsis of output
    out, i = [], 0
    while i < len(lines):
        line, start = lines[i], i
        if prompted and not line.startswith("$ "):
            i += 1
            continue
        text = line[2:] if prompted else line
        while text.rstrip().endswith("\\") and i + 1 < len(lines):
            i += 1
            text = text.rstrip()[:-1].rstrip() + " " + lines[i].strip()
        text = _strip_comment(text.strip())
        if text:
            out.append((start, " ".join(text.split())))
        i += 1
    return out


def extract(page: Path) -> list[Command]:
    """The commands of one page, in page order (see the module docstring)."""
    subs = _subcommands()
    rel = str(page.relative_to(ROOT))
    lines = page.read_text(encoding="utf-8").splitlines()
    cmds, files, i = [], {}, 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m:
            indent, lang = m.group(1), m.group(2).lower()
            j = i + 1
            while j < len(lines) and not FENCE.match(lines[j]):
                j += 1
            body = [ln[len(indent):] if ln.startswith(indent) else ln for ln in lines[i + 1:j]]
            prev = next((lines[k].strip() for k in range(i - 1, -1, -1) if lines[k].strip()), "")
            expect = EXPECT.match(prev)
            if lang in ("yaml", "yml") and body and re.match(r"^#\s*[\w.\-]+\.ya?ml\s*$", body[0]):
                files[body[0].lstrip("#").strip()] = "\n".join(body) + "\n"
            elif lang in SHELL_LANGS:
                block = _block_commands(body, lang)
                codes = [int(c) for c in expect.group(1).split()] if expect else [0] * len(block)
                assert len(codes) == len(block), f"{rel}:{i + 1}: expect exit gives {len(codes)} statuses " \
                                                 f"for {len(block)} commands"
                for (off, text), code in zip(block, codes):
                    cmds.append(Command(rel, i + 2 + off, text, code, _is_template(text), dict(files)))
            i = j + 1
            continue
        for span in INLINE.findall(lines[i]):
            text = " ".join(span.split())
            if not _is_reference(text, subs):
                cmds.append(Command(rel, i + 1, text, 0, _is_template(text), dict(files)))
        i += 1
    return cmds


def all_commands() -> list[Command]:
    return [c for page in PAGES for c in extract(page)]


COMMANDS = all_commands()
RUNNABLE = [c for c in COMMANDS if not c.template and c.text not in EXCLUDED]


# --------------------------------------------------------------------------- the rules themselves

def test_extraction_rules(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("Run `clkit run 03 --params smoke` or see `clkit summary` and `clkit plan RESULTS.json`.\n\n"
                    "```yaml\n# g.yaml\nparams: smoke\n```\n\n"
                    "```bash\n.venv/bin/clkit sweep 03 --grid g.yaml \\\n    --out runs/x   # 8 cases\n"
                    "# a comment line\n```\n\n<!-- expect exit: 2 -->\n```\n$ clkit run 9\n[clkit] ERROR: ...\n```\n\n"
                    "```\nruns/\n  a.csv\n```\n", encoding="utf-8")
    global ROOT
    root, ROOT = ROOT, tmp_path
    try:
        got = [(c.line, c.text, c.expect, c.template, sorted(c.files)) for c in extract(page)]
    finally:
        ROOT = root
    assert got == [(1, "clkit run 03 --params smoke", 0, False, []),
                   (1, "clkit plan RESULTS.json", 0, True, []),
                   (9, ".venv/bin/clkit sweep 03 --grid g.yaml --out runs/x", 0, False, ["g.yaml"]),
                   (16, "clkit run 9", 2, False, ["g.yaml"])]


def test_every_command_is_executed_or_excluded():
    texts = {c.text for c in COMMANDS}
    stale = sorted(set(EXCLUDED) - texts)
    assert not stale, f"EXCLUDED names commands no page has any more: {stale}"
    assert len(RUNNABLE) >= 30, [c.id for c in RUNNABLE]
    assert len(EXCLUDED) <= 30
    for c in COMMANDS:   # every command is one of the three, by construction; say which for the record
        assert c.template or c.text in EXCLUDED or c in RUNNABLE, c.id


@pytest.mark.parametrize("cmd", [c for c in COMMANDS if c.template], ids=lambda c: c.id)
def test_template_names_a_real_subcommand(cmd):
    words = cmd.text.split()
    if words[0] not in ("clkit", ".venv/bin/clkit"):
        pytest.skip("not a clkit command")
    subs = _subcommands()
    assert words[1] in subs, f"{cmd.id}: `{cmd.text}`: clkit has no subcommand {words[1]!r}"


# --------------------------------------------------------------------------- running them

def _project(tmp: Path, pth: Path) -> dict:
    """Links to the checkout in ``tmp``; the environment the commands run in."""
    for name in LINKED:
        (tmp / name).symlink_to(ROOT / name)
    from plugin_env import install_example_plugin

    site = install_example_plugin(pth)
    env = dict(os.environ)
    env["PATH"] = f"{ROOT / '.venv' / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = os.pathsep.join([str(site), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.pop("CLKIT_NOTEBOOKS", None)
    return env


def _in_process(argv: list[str], env: dict, cwd: Path) -> tuple[int, str, str]:
    """``clkit ARGV`` through the console script's entry point, in this process."""
    from clkit.cli import main

    out, err = io.StringIO(), io.StringIO()
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = main(argv)
            except SystemExit as exc:
                rc = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            except Exception:
                err.write(traceback.format_exc())
                rc = 1
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    return rc, out.getvalue(), err.getvalue()


def _sweep_cases_checked(argv: list[str], env: dict, cwd: Path) -> list[str]:
    """After ``clkit sweep ... --print-cases``: its first and last case through ``clkit run --check``."""
    out = argv[argv.index("--out") + 1] if "--out" in argv else "runs/sweep"
    [plan] = list((cwd / out).glob("*/sweep.json"))
    cases = json.loads(plan.read_text())["cases"]
    problems = []
    for case in {cases[0]["index"]: cases[0], cases[-1]["index"]: cases[-1]}.values():
        over = [a for k, v in case["params"].items() for a in ("-p", k, json.dumps(v))]
        rc, _, err = _in_process(["run", plan.parent.name, *over, "--check"], env, cwd)
        if rc != 0:
            problems.append(f"case {case['index']} ({case['values']}): {err.strip()}")
    return problems


def runs_as_written(cmd: Command) -> bool:
    """A smoke-sized ``clkit run`` (``--params smoke``): executed to its end, as written, by
    :func:`test_documented_smoke_runs_as_written` (``make rehearse``)."""
    words = shlex.split(cmd.text) if not cmd.template else []
    while words and re.match(r"^[A-Za-z_]\w*=", words[0]):
        words.pop(0)
    return (words[:2] in (["clkit", "run"], [".venv/bin/clkit", "run"]) and "--check" not in words
            and "--params" in words and words[words.index("--params") + 1:words.index("--params") + 2] == ["smoke"])


def run_command(cmd: Command, env: dict, cwd: Path, as_written: bool = False) -> tuple[int, str, str, list[str]]:
    """Run ``cmd`` (with ``--check`` / ``--print-cases`` for runs and sweeps unless ``as_written``);
    rc, stdout, stderr, problems."""
    for name, text in cmd.files.items():
        if not (cwd / name).exists():
            (cwd / name).write_text(text, encoding="utf-8")
    words = shlex.split(cmd.text)
    assigned = {}
    while words and re.match(r"^[A-Za-z_]\w*=", words[0]):
        k, v = words.pop(0).split("=", 1)
        assigned[k] = v
    shell_like = any(ch in cmd.text for ch in "&|;><$`") or not words
    if not shell_like and words[0] in ("clkit", ".venv/bin/clkit"):
        argv = words[1:]
        extra = []
        if argv[:1] == ["run"] and not as_written:
            argv.append("--check")
        elif argv[:1] == ["sweep"]:
            argv.append("--print-cases")
        rc, out, err = _in_process(argv, {**env, **assigned}, cwd)
        if argv[:1] == ["sweep"] and rc == 0:
            extra = _sweep_cases_checked(argv, {**env, **assigned}, cwd)
        return rc, out, err, extra
    proc = subprocess.run(["bash", "-c", cmd.text], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    return proc.returncode, proc.stdout, proc.stderr, []


@pytest.fixture(scope="module")
def projects(tmp_path_factory):
    """A fresh project folder per page (the page's commands share it, in page order)."""
    site = tmp_path_factory.mktemp("site")
    made = {}

    def get(page: str):
        if page not in made:
            cwd = tmp_path_factory.mktemp("project")
            made[page] = (cwd, _project(cwd, site))
        return made[page]

    sys.path.insert(0, str(site))   # the plugin's distribution, for the in-process commands
    importlib.invalidate_caches()
    try:
        yield get
    finally:
        sys.path.remove(str(site))


@pytest.mark.parametrize("cmd", RUNNABLE, ids=lambda c: c.id)
def test_documented_command_runs(cmd, projects):
    cwd, env = projects(cmd.page)
    rc, out, err, problems = run_command(cmd, env, cwd)
    shown = f"{cmd.id}: `{cmd.text}` exited {rc} (expected {cmd.expect})\n--- stdout\n{out[-2000:]}\n" \
            f"--- stderr\n{err[-3000:]}"
    assert rc == cmd.expect, shown
    assert "Traceback (most recent call last)" not in err, shown
    assert not problems, f"{cmd.id}: `{cmd.text}`: " + "; ".join(problems)


# --------------------------------------------------------------------------- smoke runs, to the end

@pytest.mark.documented_runs
@pytest.mark.parametrize("page", sorted({c.page for c in RUNNABLE if runs_as_written(c)}))
def test_documented_smoke_runs_as_written(page, tmp_path):
    """The page's commands in order, its smoke-sized ``clkit run`` commands executed to the end exactly
    as written (the others as in :func:`test_documented_command_runs`). Minutes per page, so this runs
    in ``make rehearse`` (CI, after ``make test``)."""
    cwd = tmp_path / "project"
    cwd.mkdir()
    site = tmp_path / "site"
    site.mkdir()
    env = _project(cwd, site)
    sys.path.insert(0, str(site))
    importlib.invalidate_caches()
    ran = 0
    try:
        for cmd in [c for c in RUNNABLE if c.page == page]:
            full = runs_as_written(cmd)
            rc, out, err, problems = run_command(cmd, env, cwd, as_written=full)
            shown = (f"{cmd.id}: `{cmd.text}` exited {rc} (expected {cmd.expect})\n--- stdout\n{out[-2000:]}\n"
                     f"--- stderr\n{err[-3000:]}")
            assert rc == cmd.expect and "Traceback (most recent call last)" not in err and not problems, shown
            ran += full
    finally:
        sys.path.remove(str(site))
    assert ran >= 1
