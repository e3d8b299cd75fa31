# The two commands of the README. Each makes a local virtual environment
# (.venv) on first use and installs what it needs into it.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# Where the full MNIST lives, if anywhere (the bundled sample is used otherwise).
export TINYNET_DATA ?= $(if $(wildcard ../shared/data/mnist),$(abspath ../shared/data),)

.PHONY: demo test lint venv bench docs clean

$(VENV)/.installed: setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test,plot,mpi,viz]'
	touch $@

venv: $(VENV)/.installed

demo: venv
	$(PY) examples/batch_size_sweep.py --preset quick --out runs/quick

# The tests run in parallel, one worker per core (pytest-xdist).
test: venv
	$(PY) -m pytest -q -n auto

# The documentation site, into site/ (needs KaTeX: apt-get install libjs-katex).
$(VENV)/.docs-installed: $(VENV)/.installed setup.cfg
	$(PY) -m pip install -q -e '.[docs]'
	touch $@

docs: $(VENV)/.docs-installed
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

lint: venv
	$(VENV)/bin/ruff check .

bench: venv
	$(PY) benchmarks/overhead.py
	$(PY) benchmarks/train_step.py
	$(PY) benchmarks/threads.py
	$(PY) benchmarks/first_use.py
	$(PY) benchmarks/kernel_ladder.py --cpu-only
	$(PY) benchmarks/allreduce.py
	$(PY) benchmarks/host_profile.py

clean:
	rm -rf $(VENV) runs build site *.egg-info .pytest_cache
