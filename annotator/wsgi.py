import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotator.settings")

application = get_wsgi_application()

# Load the task modules now, while the server starts, rather than on the first job a user
# starts: that import (pandas, pyarrow) took the first "Start" click 1.4 s.
from annotator.celery import app as _celery  # noqa: E402

_celery.loader.import_default_modules()
_celery.finalize()

# Import every view now too (the URLconf imports them): otherwise each server process pays for
# those imports on its first request, whichever page that is (seconds on a busy machine).
from django.urls import get_resolver  # noqa: E402

get_resolver().url_patterns  # noqa: B018 -- evaluated for its imports

# The OpenAPI document depends only on the code: rendered now, not on someone's first request to
# it in each process (386 ms at p95, a second on a busy machine). Under `gunicorn --preload` this
# runs once, in the process the workers are forked from.
from annotator.api_schema import render_ahead  # noqa: E402

render_ahead()

# Nothing above needs the database; should any of it have connected, the connection is not
# handed down to forked workers.
from django.db import connections  # noqa: E402

connections.close_all()

# Everything loaded so far lives as long as the process: moved out of the collector's sight, so a
# full collection does not walk its ~300,000 objects. Before, one request in a few paid for that
# walk: 300-400 ms on a page that otherwise takes 80 ms (the dashboard at 100,000 items). Under
# `gunicorn --preload` the forked workers also keep sharing these pages of memory.
import gc  # noqa: E402

gc.freeze()
