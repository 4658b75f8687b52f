# clkit: two commands do everything on a fresh machine.
#   make run    all notebooks, default parameters, headless via papermill -> runs/default/, figures/
#   make test   the test suite (smoke notebooks and notebook 03 in JupyterLab in Chromium included)
#   make site   static HTML site: the user guide (docs/) and the notebooks as executed by `make run` -> site/
#   make docs   regenerate the guide's generated numbers from `make run` (runs/default, figures/)
#   make browser-test   all notebooks, Run All in JupyterLab in headless Chromium
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.clkit-installed
# torch/torchvision are pinned to the releases that install from local disk on the
# reference machine; elsewhere pip fetches them from PyPI.
TORCH_PIN ?= torch==2.14.1 torchvision==0.29.1
FMNIST := /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz

.PHONY: run test check rehearse install data browser-deps browser-test site docs clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -qq --upgrade pip
	$(PY) -m pip install -qq $(TORCH_PIN)
	$(PY) -m pip install -qq -e '.[test,trackers,slurm]'
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $(STAMP)

# JupyterLab saves the tracked notebooks without outputs (clkit.lab; .gitattributes marks them)
JUPYTER_CFG := $(VENV)/etc/jupyter/jupyter_server_config.json
$(JUPYTER_CFG): $(STAMP) clkit/lab.py
	$(PY) -c "from clkit.lab import enable; enable()"

install: $(STAMP) $(JUPYTER_CFG)

# Offline real data shipped by Debian (Fashion-MNIST). Skipped when present or not root.
data:
	@if [ ! -f $(FMNIST) ]; then \
	  if [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dataset-fashion-mnist) >/dev/null \
	      || echo "note: could not install dataset-fashion-mnist; notebooks will say which data they used"; \
	  else echo "note: Fashion-MNIST not found at $(FMNIST); see README (Data)"; fi; \
	fi

# Debian's chromium for the real-browser tests (Playwright drives it; no browser download).
# Installed with apt when root; elsewhere the browser tests are reported as skipped.
browser-deps:
	@if ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null; then \
	  if [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null \
	      || echo "note: could not install chromium; the browser tests will be skipped"; \
	  else echo "note: chromium not found; the browser tests will be skipped (see README)"; fi; \
	fi
	@# a local MathJax 2.7 for the tutorial site's formulas offline (clkit.site copies it in)
	@if [ ! -f /usr/share/javascript/mathjax/MathJax.js ] && [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null; then \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libjs-mathjax) >/dev/null \
	    || echo "note: could not install libjs-mathjax; the site's formulas will come from the CDN"; \
	fi

run: install data
	$(VENV)/bin/clkit run all --params default --out runs/default --figures figures

# Two test processes (one per core on the reference machine); each test file stays in one
# process so a notebook's smoke run is shared by its tests. TEST_WORKERS=0 runs serially.
TEST_WORKERS ?= 2
test: install data browser-deps
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --durations=15 -m "not paper_rehearsal and not documented_runs"

# The everyday loop (docs/development.md): doctests and unit tests without the notebook, browser, sweep,
# wheel and version tests, then one smoke notebook (06, seconds); a few minutes on 2 cores. make test
# stays the full suite, and the one CI runs.
CHECK_MARKS := not notebook and not browser and not sweep and not paper_rehearsal and not documented_runs and not gpu
check: install
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile -m "$(CHECK_MARKS)" -p no:cacheprovider \
	  --ignore=tests/test_wheel.py --ignore=tests/test_version.py --ignore=tests/test_browser.py \
	  --ignore=tests/test_browser_site.py
	$(PY) -m pytest -q -p no:cacheprovider tests/test_notebook_06.py

# Every paper set's rehearsal (a minute to six each on 2 cores): each notebook's paper set run
# end to end on files fabricated in the real datasets' formats, spread over the test processes.
# CI runs it after `make test`, which keeps the rehearsal's parts (fabrication, cuts, budgets).
# With them, every smoke-sized `clkit run` of README.md and docs/ executed to its end as written
# (tests/test_documented_commands.py; make test checks those through their validation cell).
rehearse: install data
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist load --durations=10 -m "paper_rehearsal or documented_runs"

browser-test: install data browser-deps
	CLKIT_BROWSER_NOTEBOOKS=all $(PY) -m pytest -q -rs tests/test_browser.py

# The site shows the user guide (docs/*.md) and the notebooks exactly as `make run` executed
# them (runs/default/; made first when absent); nothing is re-executed. Its browser test then
# loads every page with outside requests refused and saves screenshots under runs/site-screenshots/.
site: install browser-deps
	@[ -f runs/default/summary.csv ] || $(MAKE) run
	$(PY) -m clkit.site --runs runs/default --out site --docs docs
	CLKIT_SITE=site $(PY) -m pytest -q -rs tests/test_browser_site.py

# The guide's generated blocks (<!-- BEGIN generated: NAME -->): findings, run times and the
# README's picture from the default run, then every block filled from docs/generated/NAME.md.
docs: install
	@[ -f runs/default/summary.csv ] || $(MAKE) run
	$(PY) -m clkit.docs regenerate --runs runs/default --figures figures

clean:
	rm -rf $(VENV) runs site .pytest_cache
