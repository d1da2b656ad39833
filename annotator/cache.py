"""The Redis cache (settings CACHES), tolerant of Redis being down or hung.

Sessions (`cached_db`) are the cache's reader on every request. Django's cached_db falls back to
the database when a cache read fails, but not when the write-back after that read fails, nor on
the cache delete at logout: with Redis down every logged-in page would fail, though labeling and
adjudication need only PostgreSQL. Here a Redis that cannot be reached behaves as an empty cache
that keeps nothing, and after a failure it is not asked again for RETRY_AFTER seconds, so a hung
Redis costs one socket timeout (CACHES OPTIONS) per process now and then, not one per request.

A write that failed may leave an old value in Redis: a session deleted at logout, or changed while
Redis was unreachable but kept its data. Those keys are deleted first when Redis answers again, so
a stale session cannot come back.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from django.core.cache.backends.redis import RedisCache, RedisCacheClient
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

logger = logging.getLogger(__name__)
T = TypeVar("T")

UNREACHABLE = (RedisConnectionError, RedisTimeoutError)
RETRY_AFTER = 5.0
# Keys to delete once Redis is back; past this many only a log line remains to say so.
MAX_STALE_KEYS = 100_000


class _Health:
    """This process's view of Redis: when to try again, and the keys a failed write left stale."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.down_until = 0.0
        self.stale: set[Any] = set()

    def is_down(self) -> bool:
        return time.monotonic() < self.down_until

    def trip(self, error: Exception) -> None:
        if not self.is_down():
            logger.warning("Redis cache unreachable, skipped for %ss: %s", RETRY_AFTER, error)
        self.down_until = time.monotonic() + RETRY_AFTER

    def remember(self, keys: Iterable[Any]) -> None:
        with self.lock:
            room = MAX_STALE_KEYS - len(self.stale)
            keys = list(keys)
            if len(keys) > room:
                logger.error("Redis cache: %s stale keys not tracked", len(keys) - room)
            self.stale.update(keys[: max(room, 0)])


_health = _Health()


class TolerantRedisCacheClient(RedisCacheClient):
    def get_client(self, key: Any = None, *, write: bool = False) -> Any:
        """One Redis client per connection pool, kept: Django's builds a new client object on
        every call, which cost about a third of a cache read (sessions are read on every
        request). A client is thread-safe; its pool hands out the connections."""
        django_client: Any = self  # its pools and client class are private (not in the stubs)
        pool = django_client._get_connection_pool(write)
        clients: dict[int, Any] = self.__dict__.setdefault("_clients", {})
        client = clients.get(id(pool))
        if client is None:
            client = clients[id(pool)] = django_client._client(connection_pool=pool)
        return client

    def _run(self, call: Callable[[], T], fallback: T, written: Iterable[Any] = ()) -> T:
        if _health.is_down():
            _health.remember(written)
            return fallback
        try:
            self._delete_stale()
            return call()
        except UNREACHABLE as error:
            _health.trip(error)
            _health.remember(written)
            return fallback

    def _delete_stale(self) -> None:
        if not _health.stale:
            return
        with _health.lock:
            keys = list(_health.stale)
        for start in range(0, len(keys), 1000):
            RedisCacheClient.delete_many(self, keys[start : start + 1000])
        with _health.lock:
            _health.stale.difference_update(keys)

    def add(self, key: Any, value: Any, timeout: Any) -> bool:
        return self._run(lambda: RedisCacheClient.add(self, key, value, timeout), False, [key])

    def get(self, key: Any, default: Any) -> Any:
        return self._run(lambda: RedisCacheClient.get(self, key, default), default)

    def set(self, key: Any, value: Any, timeout: Any) -> None:
        self._run(lambda: RedisCacheClient.set(self, key, value, timeout), None, [key])

    def touch(self, key: Any, timeout: Any) -> bool:
        return self._run(lambda: RedisCacheClient.touch(self, key, timeout), False)

    def delete(self, key: Any) -> bool:
        return self._run(lambda: RedisCacheClient.delete(self, key), False, [key])

    def get_many(self, keys: Iterable[Any]) -> dict[Any, Any]:
        keys = list(keys)
        return self._run(lambda: RedisCacheClient.get_many(self, keys), {})

    def has_key(self, key: Any) -> bool:
        return self._run(lambda: RedisCacheClient.has_key(self, key), False)

    def set_many(self, data: Mapping[Any, Any], timeout: Any) -> None:
        self._run(lambda: RedisCacheClient.set_many(self, data, timeout), None, list(data))

    def delete_many(self, keys: Iterable[Any]) -> None:
        keys = list(keys)
        self._run(lambda: RedisCacheClient.delete_many(self, keys), None, keys)

    # incr() and clear() still raise: a counter or a flush cannot be faked.


class TolerantRedisCache(RedisCache):
    def __init__(self, server: str, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = TolerantRedisCacheClient
