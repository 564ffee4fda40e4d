"""WebServer: an ASGI app served by uvicorn on a thread of this process, on a socket bound before it starts.

Binding first means `port 0` gives a free port the caller learns at once, a busy port fails `start()` with a
clear error instead of a log line on another thread, and a port the previous job of the same script still
holds for a moment is retried for a few seconds. Loopback (127.0.0.1) unless the caller names an address.

A request must arrive whole within `request_deadline` seconds of its connection (or of the previous answer on
a kept-alive one): a peer that sends half a request and waits is disconnected, so slow peers cannot hold the
server's connections (uvicorn's own keep-alive timeout only starts once an answer went out). The handler's own
time — a long poll — is not limited.
"""

from __future__ import annotations

import errno
import logging
import socket
import threading
import time
from typing import Any

from fluvial.common.errors import ResourceError

logger = logging.getLogger(__name__)

BIND_RETRY_SECONDS = 5.0
REQUEST_DEADLINE_SECONDS = 10.0


def _deadline_protocol(deadline: float) -> Any:
    """uvicorn's HTTP/1.1 protocol, closing a connection whose request is not complete within `deadline`."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class DeadlineH11Protocol(H11Protocol):
        def connection_made(self, transport: Any) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._request_deadline = self.loop.call_later(deadline, self._request_late)

        def on_response_complete(self) -> None:
            self._request_deadline.cancel()
            self._request_deadline = self.loop.call_later(deadline, self._request_late)
            super().on_response_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            self._request_deadline.cancel()
            super().connection_lost(exc)

        def _request_late(self) -> None:
            cycle = self.cycle
            waiting = cycle is None or cycle.response_complete or cycle.more_body  # no whole request to answer
            if waiting and not self.transport.is_closing():
                self.transport.close()

    return DeadlineH11Protocol


class WebServer:
    def __init__(
        self,
        app: Any,
        host: str = "127.0.0.1",
        ports: tuple[int, int] = (0, 0),
        name: str = "web",
        request_deadline: float = REQUEST_DEADLINE_SECONDS,
    ) -> None:
        """`ports`: the first free port of the range [first, last] is taken (first == last: that port; 0: any)."""
        self._request_deadline = request_deadline
        self._app = app
        self.host = host
        self._ports = ports
        self.name = name
        self.port = 0
        self._server: Any = None
        self._thread: threading.Thread | None = None

    @property
    def address(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def start(self, timeout: float = 10.0) -> WebServer:
        import uvicorn

        sock = self._bind()
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            self._app,
            log_level="warning",
            access_log=False,
            lifespan="off",
            http=_deadline_protocol(self._request_deadline),
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._serve, args=(sock,), name=f"fluvial-{self.name}-{self.port}", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                sock.close()
                raise ResourceError(f"the {self.name} server on {self.address} did not start; see the log")
            time.sleep(0.01)
        logger.info("%s server listening on %s", self.name, self.address)
        return self

    def _serve(self, sock: socket.socket) -> None:
        try:
            self._server.run(sockets=[sock])
        finally:
            sock.close()

    def _bind(self) -> socket.socket:
        first, last = self._ports
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        deadline = time.monotonic() + BIND_RETRY_SECONDS
        while True:
            for port in range(first, last + 1):
                try:
                    return socket.create_server((self.host, port), family=family, backlog=128)
                except OSError as error:
                    if error.errno != errno.EADDRINUSE:
                        raise ResourceError(
                            f"the {self.name} server cannot listen on {self.host}:{port}: {error}; "
                            "check the bind address"
                        ) from None
            if time.monotonic() > deadline:
                wanted = str(first) if first == last else f"{first}-{last}"
                raise ResourceError(
                    f"the {self.name} server cannot listen on {self.host}:{wanted}: the port is in "
                    "use; choose another port (0 takes any free one)"
                )
            time.sleep(0.1)

    def stop(self, timeout: float = 5.0) -> None:
        """Stop serving and wait for the thread (not when called from it)."""
        if self._server is None:
            return
        self._server.should_exit = True
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
