# clkit: two commands do everything on a fresh machine.
#   make run    all notebooks, default parameters, headless via papermill -> runs/default/, figures/
#   make test   the test suite (smoke notebooks included)
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.clkit-installed
# torch/torchvision are pinned to the releases that install from local disk on the
# reference machine; elsewhere pip fetches them from PyPI.
TORCH_PIN ?= torch==2.14.1 torchvision==0.29.1
FMNIST := /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz

.PHONY: run test install data clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -qq --upgrade pip
	$(PY) -m pip install -qq $(TORCH_PIN)
	$(PY) -m pip install -qq -e '.[test]'
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $(STAMP)

install: $(STAMP)

# Offline real data shipped by Debian (Fashion-MNIST). Skipped when present or not root.
data:
	@if [ ! -f $(FMNIST) ]; then \
	  if [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dataset-fashion-mnist) >/dev/null \
	      || echo "note: could not install dataset-fashion-mnist; notebooks will say which data they used"; \
	  else echo "note: Fashion-MNIST not found at $(FMNIST); see README (Data)"; fi; \
	fi

run: install data
	$(VENV)/bin/clkit run all --params default --out runs/default --figures figures

test: install data
	$(PY) -m pytest -q

clean:
	rm -rf $(VENV) runs .pytest_cache
