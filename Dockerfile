# One image for the web app and the Celery worker (see docker-compose.yml).
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 UV_PROJECT_ENVIRONMENT=/venv \
    UV_PYTHON_DOWNLOADS=never PATH="/venv/bin:$PATH"
WORKDIR /app
RUN pip install --no-cache-dir "uv==0.13.9"
COPY pyproject.toml uv.lock ./
RUN uv sync --frozen --no-dev --python python3
COPY . .
RUN DJANGO_SECRET_KEY=build python manage.py collectstatic --noinput
EXPOSE 8000
CMD ["gunicorn", "annotator.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3", "--preload"]
