# Two commands from a fresh clone: `make demo` and `make test`.
# Both create .venv when it is missing (pinned CPU torch from pyproject.toml) and install srnet
# once; re-running them does not reinstall (the stamp is refreshed only when pyproject.toml changes).
# The onnx extra (onnx + onnxruntime wheels, ~40 MB, CPU only; the torch pin is untouched) is
# installed too, so CI runs the ONNX export and ONNX Runtime tests (they skip without it), and so is
# the attack extra (WordNet data, tagger, inflection tables: `srnet attack wordswap` works offline).
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.srnet-installed
OFFLINE := HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1
# the tests run in TEST_WORKERS pytest-xdist processes of one torch thread each (tiny models: two
# single-threaded workers beat one two-threaded process); a test module stays on one worker, so
# its module-scoped fixtures are built once.  TEST_WORKERS=0 runs them in this process.  The 25
# slowest tests are listed at the end; ARGS='-m "not slow"' skips the kill/resume, multi-process
# and Ray tests (marked slow).
TEST_WORKERS ?= 2

.PHONY: setup demo test lint

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --no-compile -e ".[dev,onnx,attack]"
	touch $(STAMP)

demo: $(STAMP)
	$(OFFLINE) $(VENV)/bin/srnet demo $(ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks

test: lint
	$(OFFLINE) OMP_NUM_THREADS=1 $(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadscope --durations=25 $(ARGS)
