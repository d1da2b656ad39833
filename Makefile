# annotator: `make run` serves the app with a demo study; `make test` runs every test.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
export UV_PYTHON_DOWNLOADS := never
export UV_PROJECT_ENVIRONMENT := $(VENV)
# Tests always run against PostgreSQL and Redis on this machine unless told otherwise.
TEST_DATABASE_URL ?= postgres://root@127.0.0.1:5432/annotator
TEST_REDIS_URL ?= redis://127.0.0.1:6379/15

.PHONY: venv run worker test lint check bench clean

# axe-core, pinned in package-lock.json, is injected into pages by the accessibility browser test
# (tests/test_accessibility_browser.py). npm keeps the tarball's dates on the files it unpacks,
# so the rule touches its target: it runs again only when the lock file changes.
AXE := node_modules/axe-core/axe.min.js

$(AXE): package-lock.json
	npm ci --no-audit --no-fund
	touch $@

UV := .tools/bin/uv

# uv lives in its own small environment: `uv sync` makes .venv exactly the lock file.
$(UV):
	$(PY) -m venv .tools
	.tools/bin/pip install --quiet --disable-pip-version-check "uv==0.13.9"

venv: $(UV)
	$(UV) sync --frozen --python $(PY)

run: venv
	@mkdir -p var
	$(BIN)/python manage.py migrate --noinput -v 0
	$(BIN)/python manage.py seed_demo
	@if [ -n "$$REDIS_URL" ]; then \
	  echo "Starting a Celery worker with beat (REDIS_URL=$$REDIS_URL)"; \
	  $(BIN)/celery -A annotator worker --beat --schedule var/celerybeat-schedule \
	    --loglevel=INFO --concurrency=2 & \
	  trap 'kill %1' EXIT; \
	  DJANGO_DEBUG=1 $(BIN)/python manage.py runserver 127.0.0.1:8000; \
	else \
	  echo "No REDIS_URL: jobs run in-process"; \
	  DJANGO_DEBUG=1 $(BIN)/python manage.py runserver 127.0.0.1:8000; \
	fi

# In parallel (pytest-xdist): each worker has its own test database (test_annotator_gw0, …),
# Redis database, Celery worker and browser (tests/conftest.py). More workers than cores pay:
# much of the suite waits on a browser, a worker process or a server. PYTEST_ARGS="-n 0" runs
# it in one process. Bytecode is kept even where PYTHONDONTWRITEBYTECODE is set: a run starts
# dozens of Python processes (workers, servers, commands) that would each compile the same
# modules again, and pytest would rewrite every test module's asserts in each worker.
TEST_WORKERS ?= 3

test: venv $(AXE)
	env -u PYTHONDONTWRITEBYTECODE DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) \
	  $(BIN)/pytest -n $(TEST_WORKERS) $(PYTEST_ARGS)

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python manage.py makemigrations --check --dry-run
	$(BIN)/python manage.py spectacular --validate --fail-on-warn --file /dev/null
	$(BIN)/mypy annotator taxonomy_app

# Scale checks (benchmarks/README.md); each drops and recreates its own *_bench* database.
BENCHES := import_issues agreement_stats agreement_run export_writers export_run labeling_load \
  study_load sql_vs_orm hostile_files upload_parsing screening_ranking screening_retrain \
  near_duplicates page_scale

bench: venv
	@for bench in $(BENCHES); do \
	  echo "== benchmarks/$$bench.py"; \
	  env -u DATABASE_URL $(BIN)/python benchmarks/$$bench.py || exit 1; \
	done

bench-%: venv
	env -u DATABASE_URL $(BIN)/python benchmarks/$*.py

clean:
	rm -rf $(VENV) var .pytest_cache node_modules
