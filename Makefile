# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
DEMO_INPUT  := tests/fixtures/warc/demo.warc.gz
DEMO_OUTPUT := demo-output

.PHONY: install demo chromium test test-slow lint bench bench-all models clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Re-install when the pinned stack changes. Every model file the pipeline needs
# (lid.176.ftz included) ships inside the package, so this is a plain install.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet --upgrade 'pip>=24'
	$(BIN)/pip install --quiet -e '.[dev,rewrite]'
	# pip byte-compiles what it installs, but not an editable install's own sources:
	# where PYTHONDONTWRITEBYTECODE is set (as container images often do), every run
	# would compile mmcurate's ~110 modules again (~0.3 CPU s of each run's start-up).
	$(BIN)/python -c "import compileall, tomllib; dirs = tomllib.load(open('pyproject.toml', 'rb'))['tool']['setuptools']['package-dir'].values(); raise SystemExit(not all([compileall.compile_dir(d, quiet=1) for d in sorted(set(dirs))]))"
	touch $(STAMP)

install: $(STAMP)

# The demo runs every stage that works offline: images come from the WARC's own
# captures (images.http is off by default), quality from the shipped models.
DEMO_STAGES := heuristics,dedup,quality,images

demo: install
	$(BIN)/mmcurate run $(DEMO_INPUT) --output $(DEMO_OUTPUT) --stages $(DEMO_STAGES)

# tests/pipeline/test_report.py renders the run report in headless Chromium (Debian's
# `chromium`); as root on a machine without it, install it, otherwise say what to install.
chromium:
	@if [ -x /usr/bin/chromium ]; then :; \
	elif [ "$$(id -u)" = 0 ]; then apt-get update && apt-get install -y --no-install-recommends chromium; \
	else echo "tests/pipeline/test_report.py needs headless Chromium: sudo apt-get install --no-install-recommends chromium (or set MMCURATE_CHROMIUM=/path/to/chromium)"; fi

test: install chromium
	$(BIN)/python -m pytest

test-slow: install
	$(BIN)/python -m pytest -m slow

# The side-by-side benchmarks install their peers (datatrove, img2dataset) into their
# own virtualenvs under /tmp/mmcurate-bench (from PyPI, once).
# bench_vs_datatrove's text path at issue 16's size: 5,000 pages, three rounds with
# the tools' order alternating, their median printed (about 15 minutes on 2 cores).
bench: install
	$(BIN)/python benchmarks/bench_read_extract.py
	$(BIN)/python benchmarks/bench_vs_datatrove.py --pages 5000 --rounds 3
	$(BIN)/python benchmarks/bench_vs_img2dataset.py

# Every benchmark, each stage's own included (several minutes; dedup's 100k run is
# `benchmarks/bench_dedup.py --large`).
bench-all: bench
	$(BIN)/python benchmarks/bench_heuristics.py
	$(BIN)/python benchmarks/bench_dedup.py
	HF_HUB_OFFLINE=1 $(BIN)/python benchmarks/bench_quality.py
	$(BIN)/python benchmarks/bench_images.py
	$(BIN)/python benchmarks/bench_clip.py
	$(BIN)/python benchmarks/bench_runners.py
	$(BIN)/python benchmarks/bench_safety.py

lint: install
	$(BIN)/ruff check pipeline stages filters schemas runners tests benchmarks

# Rebuild the quality stage's shipped models (stages/quality_models/) from ../shared/data:
# fastText quality.bin and llm.bin, and one MT model per WMT target language
# (mt/<lang>.npz, logistic regression). A rebuild is the shipped files byte for byte:
# seeded, single-threaded fastText in a fresh process whose saved file is copied as it
# is (a second save of a loaded quantized model reorders its n-gram index).
models: install
	$(BIN)/python -m mmcurate.pipeline.build_models

clean:
	rm -rf $(VENV) $(DEMO_OUTPUT) build *.egg-info
