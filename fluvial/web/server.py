"""WebServer: an ASGI app served by uvicorn on a thread of this process, on a socket bound before it starts.

Binding first means `port 0` gives a free port the caller learns at once, a busy port fails `start()` with a
clear error instead of a log line on another thread, and a port the previous job of the same script still
holds for a moment is retried for a few seconds. Loopback (127.0.0.1) unless the caller names an address.
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


class WebServer:
    def __init__(self, app: Any, host: str = "127.0.0.1", ports: tuple[int, int] = (0, 0), name: str = "web") -> None:
        """`ports`: the first free port of the range [first, last] is taken (first == last: that port; 0: any)."""
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
        config = uvicorn.Config(self._app, log_level="warning", access_log=False, lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._serve, args=(sock,), name=f"fluvial-{self.name}-{self.port}",
                                        daemon=True)
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
                        raise ResourceError(f"the {self.name} server cannot listen on {self.host}:{port}: {error}; "
                                            "check the bind address") from None
            if time.monotonic() > deadline:
                wanted = str(first) if first == last else f"{first}-{last}"
                raise ResourceError(f"the {self.name} server cannot listen on {self.host}:{wanted}: the port is in "
                                    "use; choose another port (0 takes any free one)")
            time.sleep(0.1)

    def stop(self, timeout: float = 5.0) -> None:
        """Stop serving and wait for the thread (not when called from it)."""
        if self._server is None:
            return
        self._server.should_exit = True
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
