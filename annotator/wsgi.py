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
