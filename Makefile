# The two commands of the README: `make biosses` and `make test`. Both install into .venv first if needed.
PYTHON ?= python3
VENV := .venv
DATA_DIR ?= $(or $(SPECRUN_DATA_DIR),../shared/data)
# the local mirror when it is there, else the hub at the spec's pinned revision
DATA_FLAG := $(if $(wildcard $(DATA_DIR)/biosses/all.tsv),--data-dir $(DATA_DIR),)

.PHONY: biosses data-note test quick lint schema clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	# torch first, pinned: this version's CPU build is on disk here; a bare `torch` would pull a multi-GB CUDA build
	$(VENV)/bin/pip install --quiet torch==2.13.0
	$(VENV)/bin/pip install --quiet -e '.[test]'
	touch $@

biosses: data-note $(VENV)/.installed
	$(VENV)/bin/specrun specs/biosses.yaml $(DATA_FLAG)

# said before the (long) first install, not after it: where the data will come from
data-note:
	@$(if $(DATA_FLAG),true,echo "no data mirror at $(DATA_DIR)/biosses/all.tsv: reading BIOSSES from the hub at \
	the spec's pinned revision; offline, point to a mirror: SPECRUN_DATA_DIR=/path/to/data make biosses" >&2)

# the whole suite in two parts: the quick tests on two workers (as `make quick`), then the slow ones (real model,
# real data, Ray, subprocesses) on two workers too, the real-model and Ray tests on one (one session cache:
# one encode per dataset; tests/conftest.py); the two parts are every test once (-m slow and -m "not slow")
test: $(VENV)/.installed
	$(VENV)/bin/ruff check src tests
	SPECRUN_DATA_DIR=$(DATA_DIR) $(VENV)/bin/python -m pytest -m "not slow" -n 2 --dist loadgroup -q -p no:cacheprovider
	SPECRUN_DATA_DIR=$(DATA_DIR) $(VENV)/bin/python -m pytest -m slow -n 2 --dist loadgroup -p no:cacheprovider

# the quick loop (fixtures, the hashing adapter, every kind's example) on two workers; writes nothing here
quick: $(VENV)/.installed
	$(VENV)/bin/ruff check src tests
	SPECRUN_DATA_DIR=$(DATA_DIR) $(VENV)/bin/python -m pytest -m "not slow" -n 2 --dist loadgroup -q -p no:cacheprovider

schema: $(VENV)/.installed
	$(VENV)/bin/python -m specrun.spec > schema/spec.schema.json

# the test process's bytecode (tests/conftest.py) lives outside the checkout: removed here too
clean:
	rm -rf $(VENV) results "$${XDG_CACHE_HOME:-$$HOME/.cache}/specrun-tests"
