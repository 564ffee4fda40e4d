"""One nats-py connection on an asyncio loop of its own thread, for the NATS source reader and sink writer,
which run on a task's thread and must never run (or block) an event loop there.

Contract:
1. `NatsConnection.open(options, what)` connects within `options.connect_timeout` seconds or raises
   NatsConnectError naming the servers and the last reason (refused, authorization violation, ...): an
   unreachable server or wrong credentials fail the job within the timeout instead of retrying forever.
2. Once connected, the client reconnects by itself for as long as the job runs (a server restarted mid-job):
   `call` waits at most its timeout for each operation, and the caller decides whether that fails the task.
3. `close()` drains nothing: what a checkpoint did not cover is replayed after a restore anyway.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, TypeVar

from fluvial.common.errors import ConfigurationError, ResourceError

logger = logging.getLogger(__name__)

T = TypeVar("T")


class NatsConnectError(ResourceError, ConnectionError):
    """A NATS server could not be reached or refused the credentials within the connect timeout."""


@dataclass(frozen=True, slots=True)
class NatsConnectionOptions:
    """Where and how to connect. `servers`: nats:// URLs tried in turn; `user`/`password` or `token` or a
    `credentials` file (NATS decentralized auth); timeouts in seconds."""

    servers: tuple[str, ...] = ("nats://127.0.0.1:4222",)
    user: str | None = None
    password: str | None = None
    token: str | None = None
    credentials: str | None = None
    connect_timeout: float = 10.0
    request_timeout: float = 10.0

    def __post_init__(self) -> None:
        if not self.servers:
            raise ConfigurationError("no NATS server given: set_servers('nats://host:4222')")
        for url in self.servers:
            if not isinstance(url, str) or "://" not in url:
                raise ConfigurationError(f"NATS server {url!r} is not a URL; write it as 'nats://host:4222'")
        for name in ("connect_timeout", "request_timeout"):
            if not getattr(self, name) > 0:
                raise ConfigurationError(f"NATS {name.replace('_', ' ')} must be > 0 s, got {getattr(self, name)}")

    @property
    def address(self) -> str:
        return ", ".join(self.servers)


class NatsConnection:
    """A connected nats-py client and the loop thread it lives on."""

    def __init__(self, options: NatsConnectionOptions, what: str) -> None:
        self.options = options
        self._what = what
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=f"nats-{what}", daemon=True)
        self._thread.start()
        self.client: Any = None
        self.jetstream: Any = None
        self._errors: list[BaseException] = []
        self._closing = False
        self._stopped = False  # close() stopped the loop: nothing submitted runs any more

    @classmethod
    def open(cls, options: NatsConnectionOptions, what: str) -> NatsConnection:
        connection = cls(options, what)
        try:
            connection._connect()
        except BaseException:
            connection.close()
            raise
        return connection

    def _connect(self) -> None:
        import nats

        options = self.options

        async def on_error(error: BaseException) -> None:
            self._errors.append(error)
            del self._errors[:-5]

        async def on_disconnect() -> None:
            if self._closing:
                return
            logger.warning("%s: disconnected from NATS at %s; reconnecting", self._what, options.address)

        async def on_reconnect() -> None:
            logger.info("%s: reconnected to NATS at %s", self._what, options.address)

        async def connect() -> Any:
            return await nats.connect(
                list(options.servers),
                user=options.user,
                password=options.password,
                token=options.token,
                user_credentials=options.credentials,
                connect_timeout=max(1, int(options.connect_timeout)),
                allow_reconnect=True,
                max_reconnect_attempts=-1,
                reconnect_time_wait=0.25,
                error_cb=on_error,
                disconnected_cb=on_disconnect,
                reconnected_cb=on_reconnect,
            )

        timeout = options.connect_timeout
        future = asyncio.run_coroutine_threadsafe(asyncio.wait_for(connect(), timeout), self._loop)
        try:
            self.client = future.result(timeout + 5)
        except BaseException as error:  # noqa: BLE001 - reported with the reason the client saw
            # the server says why before it closes; the client may then see the reset first: the reason is the
            # refusal if any attempt heard one, else what the last attempt saw
            refusals = [seen for seen in self._errors if _is_refusal(seen)]
            reason = refusals[-1] if refusals else self._errors[-1] if self._errors else error
            raise NatsConnectError(
                f"{self._what} cannot connect to NATS at {options.address} within {timeout:g} s: "
                f"{_describe(reason)}; check that the server runs there and that the credentials are right "
                f"(set_servers, set_credentials)"
            ) from None
        self.jetstream = self.client.jetstream(timeout=options.request_timeout)

    def submit(self, factory: Callable[[], Awaitable[T]]) -> Future:
        """Run `factory()` on the loop; returns a concurrent Future. After close() the loop runs nothing more: the
        Future fails at once (a coroutine handed to a stopped loop would never run, nor be awaited)."""
        if self._stopped:
            failed: Future = Future()
            failed.set_exception(NatsConnectError(f"{self._what}: the NATS connection is closed"))
            return failed
        coroutine = _call(factory)
        try:
            return asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        except RuntimeError:  # the loop closed in between
            coroutine.close()
            raise

    def call(self, factory: Callable[[], Awaitable[T]], timeout: float | None = None) -> T:
        """Run `factory()` on the loop and wait for its result (at most `timeout`, default the request timeout)."""
        return self.submit(factory).result(self.options.request_timeout if timeout is None else timeout)

    def call_soon(self, callback: Callable[[], Any]) -> None:
        self._loop.call_soon_threadsafe(callback)

    @property
    def closing(self) -> bool:
        """close() was called: errors from now on are the shutdown's, not the server's."""
        return self._closing

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    def close(self) -> None:
        self._closing = True
        client = self.client
        if client is not None and not client.is_closed:
            try:
                self.submit(client.close).result(5)
            except BaseException as error:  # noqa: BLE001 - closing is best effort
                logger.debug("%s: closing the NATS connection failed: %r", self._what, error)
        if self._thread.is_alive():
            try:
                asyncio.run_coroutine_threadsafe(_cancel_pending(), self._loop).result(5)
            except BaseException as error:  # noqa: BLE001 - closing is best effort
                logger.debug("%s: cancelling what still ran on the NATS loop failed: %r", self._what, error)
        self._stopped = True
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        if not self._thread.is_alive():
            self._loop.close()


async def _call(factory: Callable[[], Awaitable[T]]) -> T:
    return await factory()


async def _cancel_pending() -> None:
    """Cancel every task still on the loop (a call whose caller stopped waiting, as a sink's wait for acks that
    timed out) and let each run its cleanup now, while the loop runs. Left pending, the garbage collector would
    close it later on the closed loop, where its cleanup fails ("Event loop is closed")."""
    current = asyncio.current_task()
    pending = [task for task in asyncio.all_tasks() if task is not current]
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)


def _is_refusal(error: BaseException) -> bool:
    return "Authorization Violation" in str(error)


def _describe(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    if _is_refusal(error):
        return "the server refused the credentials (Authorization Violation)"
    if isinstance(error, (TimeoutError, asyncio.TimeoutError)):
        return "no answer (timed out)"
    return text
