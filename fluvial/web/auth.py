"""RequestGuard: the ASGI middleware in front of the REST API — who may change the cluster, which Host names it
answers to, and the signature on every answer to a signed request.

- A request with a method other than GET, HEAD or OPTIONS needs the cluster's access token: either signed with
  it (`Authorization: Fluvial-HMAC ...`, what fluvial's own client sends: `fluvial.common.request_signing`) or
  as `Authorization: Bearer <token>` (browsers, curl). Without either it is answered 401 before it is looked at.
- A signed request of any method is verified (a bad signature is a 401 even on a GET: the client asked to be
  told the truth by this cluster), and its answer is signed, so the client can tell the cluster from whatever
  else answers at its address.
- The `Host` header must be an IP address, a loopback name, the machine's own name, the bind address or a name
  listed in `rest.allowed-hosts`: a page on another site whose DNS name was re-bound to 127.0.0.1 sends its
  own name, and is refused 421 instead of reading the API. (An IP address cannot be re-bound.)
"""

from __future__ import annotations

import hmac
import ipaddress
import socket
from collections.abc import Callable, Iterable
from typing import Any

from starlette.responses import JSONResponse

from fluvial.common.request_signing import (
    SCHEME,
    SIGNATURE_HEADER,
    RequestVerifier,
    SignatureError,
    answer_signature,
)

READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "ip6-localhost"})
ANY_HOST = "*"


def allowed_hosts(bind_host: str, extra: Iterable[str] = ()) -> frozenset[str]:
    """The Host names a server bound to `bind_host` answers to besides IP addresses: the loopback names, the
    machine's own name, its bind address, and `extra` (`rest.allowed-hosts`; "*" allows any)."""
    names = {name.strip().lower().strip("[]") for name in extra if name.strip()}
    names |= LOOPBACK_NAMES
    names |= {socket.gethostname().lower(), socket.getfqdn().lower()}
    if bind_host not in ("", "0.0.0.0", "::"):  # noqa: S104 - compared, not bound
        names.add(bind_host.lower().strip("[]"))
    return frozenset(names)


class RequestGuard:
    def __init__(self, app: Any, token: str, hosts: frozenset[str] = frozenset({ANY_HOST})) -> None:
        self._app = app
        self._token = token
        self._bearer = f"Bearer {token}".encode()
        self._verifier = RequestVerifier(token)
        self._hosts = hosts

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        headers = dict(scope.get("headers", ()))
        if not self._host_allowed(headers.get(b"host", b"").decode("latin-1")):
            await _refuse(
                scope,
                receive,
                send,
                421,
                f"this server does not answer to the Host "
                f"'{headers.get(b'host', b'').decode('latin-1')}': use its address, or add the name to "
                "rest.allowed-hosts",
            )
            return
        given = headers.get(b"authorization", b"")
        if given.startswith(SCHEME.encode() + b" "):
            await self._signed(scope, receive, send, given.decode("latin-1"))
            return
        if scope["method"] not in READ_METHODS and not hmac.compare_digest(given, self._bearer):
            await _refuse(
                scope,
                receive,
                send,
                401,
                f"{scope['method']} {scope['path']} changes the cluster and needs its access token: send "
                "the header 'Authorization: Bearer <token>'",
            )
            return
        await self._app(scope, receive, send)

    def _host_allowed(self, host: str) -> bool:
        """`host` is the header's `name[:port]` or `[v6]:port`; none at all (HTTP/1.0) is no browser's."""
        if ANY_HOST in self._hosts or not host:
            return True
        name = host[1:].partition("]")[0] if host.startswith("[") else host.rpartition(":")[0] or host
        if host.count(":") > 1 and not host.startswith("["):
            name = host  # a bare IPv6 address
        return name.lower() in self._hosts or _is_ip_address(name)

    async def _signed(self, scope: dict, receive: Callable, send: Callable, header: str) -> None:
        body = await _read_body(receive)
        target = scope.get("raw_path") or scope["path"].encode()
        if scope.get("query_string"):
            target += b"?" + scope["query_string"]
        try:
            request = self._verifier.verify(header, scope["method"], target.decode("latin-1"), body)
        except SignatureError as error:
            await _refuse(scope, receive, send, 401, f"{scope['method']} {scope['path']} was refused: {error}")
            return
        delivered = False

        async def replay() -> dict:
            nonlocal delivered
            if delivered:
                return await receive()  # the disconnect, when it comes
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}

        start: dict = {}
        chunks: list[bytes] = []

        async def signing_send(message: dict) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
                return
            if message["type"] != "http.response.body":
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            answer = b"".join(chunks)
            signature = answer_signature(self._token, request.nonce, start["status"], answer)
            headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
            headers += [
                (SIGNATURE_HEADER.lower().encode(), signature.encode()),
                (b"content-length", str(len(answer)).encode()),
            ]
            await send({**start, "headers": headers})
            await send({"type": "http.response.body", "body": answer, "more_body": False})

        await self._app(scope, replay, signing_send)


def _is_ip_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


async def _read_body(receive: Callable) -> bytes:
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


async def _refuse(scope: dict, receive: Callable, send: Callable, status: int, message: str) -> None:
    headers = {"WWW-Authenticate": 'Bearer realm="fluvial"'} if status == 401 else None
    await JSONResponse({"errors": [message]}, status_code=status, headers=headers)(scope, receive, send)
