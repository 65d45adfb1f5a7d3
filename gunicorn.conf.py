"""gunicorn's settings for every start of the web server: `dev.py run`, the Dockerfile, the benches and
the fault-test stacks. gunicorn reads `./gunicorn.conf.py` from its working directory (the repository,
or /app in the image), so each command line adds only the address and the logging.

`ROOTLINE_WEB_WORKERS` worker processes (default 1), each with `ROOTLINE_WEB_THREADS` threads (default
8) for the requests that wait on the database or Redis. Python runs one thread at a time per process,
so one process uses one core. A second process raised the storm bench's intake rate (bench/bench_storm.py
--rate, 2 cores shared with other work, load average 8-20): on PostgreSQL 482 alerts/s against 257-341
with one, and on SQLite too, where writers take turns on one file lock but hold it briefly, 141 against
86-111 (earlier runs, which said a second process added nothing on SQLite, had the stalls below). Every
process shares the rate limits (Redis).

The application is loaded once, in the master, before the worker processes are forked
(`preload_app`), views included (rca/wsgi.py), so a worker serves its first request at full speed. A
worker used to import the views on its first request: about 3 s of CPU, which on a busy machine, with
the other worker taking the storm, stalled the first requests it had accepted for 30-40 s (the storm
bench's "1 in 200 deliveries wait 30 s" with two processes: each was a sender's first request, all on
the worker that the bench's warm-up request had not reached). Loading in the master opens nothing that
the workers would share: no database or Redis connection, no thread, no file.
"""

import os

from rca import env as read

workers = read.whole_number(os.environ, "ROOTLINE_WEB_WORKERS", 1)
threads = read.whole_number(os.environ, "ROOTLINE_WEB_THREADS", 8)
preload_app = True
