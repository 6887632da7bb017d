# BERT Lab — set-up and everyday commands.  `make demo` and `make test` are the two README commands.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
TORCH_VERSION ?= 2.13.0

.PHONY: demo test quick venv venv-dev lab notebooks models browser web web-page lint-js serve-web clean

demo: $(VENV)/.installed-app       ## install the library + dashboard into .venv and start the dashboard
	$(PY) app.py

test: $(VENV)/.installed-dev       ## install everything (+ test extras) into .venv and run the whole suite
	$(PY) -m pytest -n 2 --dist loadgroup    # the notebooks beside the rest: tests/conftest.py

quick: $(VENV)/.installed-dev      ## the inner loop: every test but the slow ones (about 6 minutes)
	$(PY) -m pytest -m "not slow"

venv: $(VENV)/.installed           ## the library core only
venv-dev: $(VENV)/.installed-dev

lab: $(VENV)/.installed-notebooks  ## install the library + notebook packages and open JupyterLab on the notebooks
	$(VENV)/bin/jupyter lab notebooks/

# torch first: a CUDA build where an NVIDIA GPU is present, otherwise the small CPU build
# (PyTorch's CPU wheel index; pip's configured find-links/mirrors are used as well).
$(VENV)/.torch:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	@if $(PY) -c "import torch" 2>/dev/null; then echo "torch already installed"; \
	elif command -v nvidia-smi >/dev/null 2>&1 || [ "$$(uname -s)" != "Linux" ]; then \
		$(PIP) install "torch==$(TORCH_VERSION)"; \
	else \
		$(PIP) install --retries 0 --timeout 15 "torch==$(TORCH_VERSION)" \
			--index-url https://download.pytorch.org/whl/cpu \
		|| $(PIP) install "torch==$(TORCH_VERSION)"; \
	fi
	touch $@

$(VENV)/.installed: $(VENV)/.torch pyproject.toml
	$(PIP) install -q -e .
	touch $@

$(VENV)/.installed-app: $(VENV)/.installed
	$(PIP) install -q -e ".[app]"
	touch $@

$(VENV)/.installed-notebooks: $(VENV)/.installed
	$(PIP) install -q -e ".[notebooks]"
	touch $@

# [dev] includes [app] and [notebooks]: after `make test`, `make demo` and `make lab` install nothing
$(VENV)/.installed-dev: $(VENV)/.installed
	$(PIP) install -q -e ".[dev]"
	touch $@ $(VENV)/.installed-app $(VENV)/.installed-notebooks

browser:                           ## Debian's chromium for the real-browser test (needs root: apt-get)
	@command -v chromium >/dev/null 2>&1 || { apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium; }
	chromium --version

# The browser edition (docs/deploy.md): the page built by Node from web/ (npm packages through
# web/package-lock.json), then the site exported into site/ and served to a classroom.
web-page:                          ## build the browser page (web/dist) with npm
	cd web && npm ci --no-audit --no-fund && npm run build

lint-js:                           ## the page's JavaScript formatted and linted (web/biome.jsonc); writes nothing
	cd web && npx --no-install biome ci .

web: $(VENV)/.installed-dev web-page ## the static site in site/: the page and every bundled model as ONNX
	$(PY) -m lab export-web --out site

serve-web: $(VENV)/.installed-dev  ## serve site/ to a classroom (students type the printed address)
	$(PY) -m lab serve-web site --host 0.0.0.0

models: $(VENV)/.installed-dev     ## retrain the bundled models (hours on a laptop CPU)
	bash scripts/make_models.sh

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info web/dist web/node_modules
