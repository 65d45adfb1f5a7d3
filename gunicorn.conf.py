"""gunicorn's settings for every start of the web server: `dev.py run`, the Dockerfile, the benches and
the fault-test stacks. gunicorn reads `./gunicorn.conf.py` from its working directory (the repository,
or /app in the image), so each command line adds only the address and the logging.

`ROOTLINE_WEB_WORKERS` worker processes (default 1), each with `ROOTLINE_WEB_THREADS` threads (default
8) for the requests that wait on the database or Redis. Python runs one thread at a time per process,
so one process uses one core: on PostgreSQL a second process raised the storm bench's intake rate
(bench/bench_storm.py, 2 cores shared with other work: 362 alerts/s against 295 with one), but in
every two-process run a few deliveries (about 1 in 200) waited about 30 s, which one process never
showed; on SQLite, where writers take turns on one file lock, a second process added no throughput and
the same waits. Hence one process by default; several are for a PostgreSQL installation with cores
to spare, after checking its latency tail. Every process shares the rate limits (Redis).
"""

import os

from rca import env as read

workers = read.whole_number(os.environ, "ROOTLINE_WEB_WORKERS", 1)
threads = read.whole_number(os.environ, "ROOTLINE_WEB_THREADS", 8)
