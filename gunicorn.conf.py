"""gunicorn's settings for every start of the web server: `dev.py run`, the Dockerfile, the benches and
the fault-test stacks. gunicorn reads `./gunicorn.conf.py` from its working directory (the repository,
or /app in the image), so each command line adds only the address and the logging.

`ROOTLINE_WEB_WORKERS` worker processes (default 2), each with `ROOTLINE_WEB_THREADS` threads (default
8) for the requests that wait on the database or Redis. Python runs one thread at a time per process,
so one process uses one core, and intake costs about 4.5 ms of CPU per delivery in the server: one
process saturates near 200 deliveries a second. Measured with bench/bench_storm.py --rate on this
project's 2-core machines (shared with other work): on the embedded default (SQLite) at 200 alerts/s
for 60 s, one process achieved 191/s with p50 236 ms and p95 402 ms, two 199/s with p50 13 ms and p95
168 ms (writers take turns on one file lock but hold it briefly; no 5xx and nothing lost either way); on
PostgreSQL in deliveries of 10, two processes achieved 993/s of 1,000/s offered (p95 340 ms) and
1,141/s and 1,057/s of 1,200/s offered in two runs (p95 412 and 459 ms), with nothing else running;
868/s of 1,000/s with other benchmarks running (earlier runs: 482/s with two, 257-341 with one). Every
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

workers = read.whole_number(os.environ, "ROOTLINE_WEB_WORKERS", 2)
threads = read.whole_number(os.environ, "ROOTLINE_WEB_THREADS", 8)
preload_app = True
