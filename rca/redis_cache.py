"""Django's Redis cache with one Redis client per cache connection, and a counter in one round trip.

Django's `RedisCacheClient.get_client` builds a new `redis.Redis` object on every cache call (its
connection pool is kept, but each client rebuilds its table of ~170 response callbacks): three of them
per intake request for the rate limits, a measurable share of a request's CPU. A client is safe to
share between threads (each command borrows a connection from the pool), so one per pool is kept.

`count` adds one to a key that expires, in one atomic round trip; Django's `add` then `incr` take
three (`incr` first asks whether the key exists). `count_below` is a sliding-window rate limit's whole
check in one round trip (a script Redis runs atomically): read this window's and the previous window's
counts, and (when asked to) add one to this window's only when the estimate is under the limit.
"""

from __future__ import annotations

from typing import Any, cast

import redis
from django.core.cache.backends.redis import RedisCache, RedisCacheClient
from redis.commands.core import Script

# KEYS: this window's count, the previous window's. ARGV: the previous window's weight (the share of
# it still inside the sliding window), the limit, this window's expiry in seconds, 1 to count. Counts
# are stored as Django's Redis serializer stores integers (their digits), so `cache.get` reads them too.
_COUNT_BELOW = """
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
local previous = tonumber(redis.call('GET', KEYS[2]) or '0')
if previous * tonumber(ARGV[1]) + current >= tonumber(ARGV[2]) then
  return {0, current, previous}
end
if ARGV[4] == '1' then
  redis.call('SET', KEYS[1], 0, 'EX', ARGV[3], 'NX')
  redis.call('INCR', KEYS[1])
end
return {1, current, previous}
"""


class SharedClient(RedisCacheClient):
    """`RedisCacheClient` keeping one `redis.Redis` per connection pool."""

    def __init__(self, servers: list[str], **options: Any) -> None:
        super().__init__(servers, **options)
        self._by_pool: dict[int, redis.Redis] = {}
        self._count_below: Script | None = None  # registered on the first call's client
        # Django's `get_client` calls this with the pool of each call (where it built a new client).
        self._client = self._client_of

    def _client_of(self, connection_pool: redis.ConnectionPool) -> redis.Redis:
        client = self._by_pool.get(id(connection_pool))  # the pools live as long as this object
        if client is None:
            # `setdefault`: two threads that both got here share whichever client was stored first.
            client = self._by_pool.setdefault(
                id(connection_pool), redis.Redis(connection_pool=connection_pool)
            )
        return client

    def count(self, key: str, timeout: int) -> int:
        """Add one to `key` (created at 0 expiring in `timeout` seconds when absent); the new count."""
        with self.get_client(key, write=True).pipeline(transaction=True) as pipe:
            pipe.set(key, 0, ex=timeout, nx=True)
            pipe.incr(key)
            return int(pipe.execute()[1])

    def count_below(
        self, current: str, previous: str, weight: float, limit: int, timeout: int, *, count: bool = True
    ) -> tuple[bool, int, int]:
        """Whether `previous` x `weight` + `current` is under `limit`, and if so (and `count`) add one to
        `current` (expiring in `timeout` seconds); with `current` and `previous` as they were. Atomic."""
        client = self.get_client(current, write=True)
        if self._count_below is None:  # a Script only holds its text and hash: any client may register it
            self._count_below = client.register_script(_COUNT_BELOW)
        counted, was, before = self._count_below(
            keys=[current, previous], args=[weight, limit, timeout, int(count)], client=client
        )
        return bool(counted), int(was), int(before)


class SharedClientRedisCache(RedisCache):
    """`CACHES` backend: Django's Redis cache on `SharedClient`."""

    def __init__(self, server: str, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = SharedClient

    def count(self, key: str, timeout: int) -> int:
        """Add one to `key`, which expires `timeout` seconds after it was created; the new count."""
        client = cast(SharedClient, self._cache)  # set in __init__
        return client.count(self.make_and_validate_key(key), timeout)

    def count_below(
        self, current: str, previous: str, weight: float, limit: int, timeout: int, *, count: bool = True
    ) -> tuple[bool, int, int]:
        """`SharedClient.count_below` on this cache's keys."""
        client = cast(SharedClient, self._cache)
        key = self.make_and_validate_key
        return client.count_below(key(current), key(previous), weight, limit, timeout, count=count)
