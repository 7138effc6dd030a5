# Two commands set the tool up and run it: `make demo` and `make test` (README.md, "Install").
# Each creates the virtual environment $(VENV) first when it is missing or older than
# pyproject.toml: the pinned CPU build of torch first (so that `torch>=2.4` in pyproject is
# already met and pip does not fetch a CUDA build), then the package with its test extra.
# .ci/run runs the same targets with VENV=.ci-venv.

PYTHON ?= python3
VENV ?= .venv
TORCH ?= torch==2.13.0
# e.g. TORCH_INDEX=https://download.pytorch.org/whl/cpu where the default index serves CUDA builds
TORCH_INDEX ?=
BIN := $(VENV)/bin

.PHONY: demo test test-slow venv

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX)) $(TORCH)
	$(BIN)/python -m pip install -q -e ".[test]"
	# mup, the oracle of the muP Adam rule (tests/trials/test_mup_oracle.py), without its declared
	# dependencies: they pull in torchvision and seaborn, and torchvision pins a torch of its own;
	# its shape and optimizer modules need only torch and pyyaml (in the test extra)
	$(BIN)/python -m pip install -q --no-deps mup==1.0.0
	touch $@

# the built-in sweep, its fit and its report (./results, ./report)
demo: venv
	$(BIN)/explorer demo

# the fast set, on two processes
test: venv
	$(BIN)/python -m pytest -q -n 2

# Ray sweeps, subprocesses, the browser, statistical checks; the slowest tests listed
test-slow: venv
	$(BIN)/python -m pytest -q -m slow -n 2 --durations=15
