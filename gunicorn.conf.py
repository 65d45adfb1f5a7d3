"""gunicorn's settings for every start of the web server: `dev.py run`, the Dockerfile, the benches and
the fault-test stacks. gunicorn reads `./gunicorn.conf.py` from its working directory (the repository,
or /app in the image), so each command line adds only the address and the logging.

Python runs one thread at a time per process, so a single process uses one core however many threads
it has: intake under a storm is CPU-bound in Django and the ORM, and on 2 cores one process took
about half of what two take. Hence a worker process per core (`ROOTLINE_WEB_WORKERS`, default the
machine's core count), each with threads (`ROOTLINE_WEB_THREADS`, default 8) for the requests that
wait on the database or Redis. Every process shares the rate limits (Redis) and, on SQLite, the
database file (WAL, IMMEDIATE transactions and a busy timeout: rca.settings).
"""

import os

from rca import env as read

workers = read.whole_number(os.environ, "ROOTLINE_WEB_WORKERS", os.cpu_count() or 1)
threads = read.whole_number(os.environ, "ROOTLINE_WEB_THREADS", 8)
