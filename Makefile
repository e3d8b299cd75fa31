# The two commands of the README. Each makes a local virtual environment
# (.venv) on first use and installs what it needs into it.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# Where the full MNIST lives, if anywhere (the bundled sample is used otherwise).
export TINYNET_DATA ?= $(if $(wildcard ../shared/data/mnist),$(abspath ../shared/data),)
# Where the experiments keep their results (gitignored).
RUNS ?= runs
EXPERIMENTS := experiments-sweep experiments-lstm experiments-adding experiments-convnet \
	experiments-distributed experiments-gpt experiments-transformers experiments-xiong

.PHONY: demo test lint venv bench docs clean pages experiments $(EXPERIMENTS)

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

# The experiment pages (docs/experiments.md, distributed.md, transformers.md): each
# target reruns one section and rewrites its tables and figures from the results; the
# prose around them is hand-written. `make pages` rewrites the pages from the results
# already in $(RUNS)/ and reruns nothing. On shared cores: nice -n 19 make experiments.
experiments: $(EXPERIMENTS)

experiments-sweep: venv
	$(PY) examples/batch_size_sweep.py --preset paper --out $(RUNS)/paper
	$(PY) examples/experiments_report.py --runs $(RUNS) --section sweep

experiments-lstm: venv
	$(PY) examples/ln_lstm.py --norm all --steps 2000 --eval-every 100 --out $(RUNS)/lstm --no-progress
	$(PY) examples/experiments_report.py --runs $(RUNS) --section lstm

experiments-adding: venv
	$(PY) examples/ln_lstm.py --task adding --norm all --length 30 --steps 2000 --eval-every 100 --out $(RUNS)/adding --no-progress
	$(PY) examples/experiments_report.py --runs $(RUNS) --section adding

experiments-convnet: venv
	$(PY) examples/batch_size_sweep.py --preset convnet --out $(RUNS)/convnet
	$(PY) examples/experiments_report.py --runs $(RUNS) --section convnet

experiments-distributed: venv
	$(PY) examples/data_parallel_sweep.py --out $(RUNS)/dp
	$(PY) examples/data_parallel_report.py $(RUNS)/dp --page docs/distributed.md --plot docs/figures/data_parallel.png

# tinynet's GPT against nanoGPT (three seeds, about four minutes), and the gradient norms.
experiments-gpt: venv
	$(PY) examples/char_lm.py --seed 1337 --out $(RUNS)/gpt-seed1337 --no-progress
	$(PY) examples/char_lm.py --seed 1338 --out $(RUNS)/gpt-seed1338 --no-progress
	$(PY) examples/char_lm.py --seed 1339 --out $(RUNS)/gpt-seed1339 --no-progress
	$(PY) examples/gpt_report.py --runs $(RUNS) --page docs/transformers.md

# The four grids take some 50 minutes; each is resumable, and a finished one is not rerun.
experiments-transformers: venv
	$(PY) examples/char_lm_sweep.py --preset placement --out $(RUNS)/exp-placement
	$(PY) examples/char_lm_sweep.py --preset norm --out $(RUNS)/exp-norm
	$(PY) examples/char_lm_sweep.py --preset time-axis --out $(RUNS)/exp-time-axis
	$(PY) examples/char_lm_sweep.py --preset lstm --out $(RUNS)/exp-lstm
	$(PY) examples/char_lm_report.py --runs $(RUNS) --page docs/transformers.md

# Xiong et al.'s gradients at initialisation and warm-up, in their encoder-decoder; resumable.
experiments-xiong: venv
	$(PY) examples/xiong.py --out $(RUNS)/xiong
	$(PY) examples/xiong_report.py --runs $(RUNS) --page docs/transformers.md

pages: venv
	$(PY) examples/experiments_report.py --runs $(RUNS)
	$(PY) examples/data_parallel_report.py $(RUNS)/dp --page docs/distributed.md --plot docs/figures/data_parallel.png
	$(PY) examples/char_lm_report.py --runs $(RUNS) --page docs/transformers.md
	$(PY) examples/gpt_report.py --runs $(RUNS) --page docs/transformers.md
	$(PY) examples/xiong_report.py --runs $(RUNS) --page docs/transformers.md

clean:
	rm -rf $(VENV) runs build site *.egg-info .pytest_cache
