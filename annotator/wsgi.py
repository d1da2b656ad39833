import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotator.settings")

application = get_wsgi_application()

# Load the task modules now, while the server starts, rather than on the first job a user
# starts: that import (pandas, pyarrow) took the first "Start" click 1.4 s.
from annotator.celery import app as _celery  # noqa: E402

_celery.loader.import_default_modules()
_celery.finalize()
