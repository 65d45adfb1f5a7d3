"""Django's Redis cache with one Redis client per cache connection, and a counter in one round trip.

Django's `RedisCacheClient.get_client` builds a new `redis.Redis` object on every cache call (its
connection pool is kept, but each client rebuilds its table of ~170 response callbacks): three of them
per intake request for the rate limits, a measurable share of a request's CPU. A client is safe to
share between threads (each command borrows a connection from the pool), so one per pool is kept.

`count` adds one to a key that expires, in one atomic round trip; Django's `add` then `incr` take
three (`incr` first asks whether the key exists).
"""

from __future__ import annotations

from typing import Any, cast

import redis
from django.core.cache.backends.redis import RedisCache, RedisCacheClient


class SharedClient(RedisCacheClient):
    """`RedisCacheClient` keeping one `redis.Redis` per connection pool."""

    def __init__(self, servers: list[str], **options: Any) -> None:
        super().__init__(servers, **options)
        self._by_pool: dict[int, redis.Redis] = {}
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


class SharedClientRedisCache(RedisCache):
    """`CACHES` backend: Django's Redis cache on `SharedClient`."""

    def __init__(self, server: str, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = SharedClient

    def count(self, key: str, timeout: int) -> int:
        """Add one to `key`, which expires `timeout` seconds after it was created; the new count."""
        client = cast(SharedClient, self._cache)  # set in __init__
        return client.count(self.make_and_validate_key(key), timeout)
