"""Signed REST requests and answers: a session cluster's client proves it holds the cluster's access token
without sending it, and the cluster proves it holds the token in every answer to a signed request.

Why not a bearer token alone: a bearer token goes to whoever listens at the address. A process bound to the
cluster's port after the cluster stopped (or before it started) would learn the token and could answer the
client anything. With signatures the token never crosses the wire, and a client believes only answers signed
with it — the answer to the request it sent, not a replayed one.

- A request carries `Authorization: Fluvial-HMAC ts=<ms>, nonce=<32 hex>, sig=<hex>`, where `sig` is the
  HMAC-SHA256, keyed by the token, of the method, the path with its query, the timestamp, the nonce and the
  SHA-256 of the body. The server refuses a timestamp more than `MAX_SKEW_MS` away from its clock and a nonce it
  has seen within that window (a replay).
- The answer carries `X-Fluvial-Signature: <hex>`: the HMAC-SHA256 of the request's nonce, the status and the
  SHA-256 of the answer's body.

Browsers and curl keep `Authorization: Bearer <token>` (Flink's REST API has no signing scheme); the Python
client of fluvial never sends it.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

SCHEME = "Fluvial-HMAC"
SIGNATURE_HEADER = "X-Fluvial-Signature"
MAX_SKEW_MS = 300_000  # five minutes, as HTTP signature schemes commonly allow between two clocks
_NONCE_HEX = 32


class SignatureError(ValueError):
    """A signature that does not verify: the message says what was wrong."""


@dataclass(frozen=True, slots=True)
class SignedRequest:
    timestamp_ms: int
    nonce: str
    signature: str

    @staticmethod
    def parse(header: str) -> SignedRequest:
        scheme, _, rest = header.partition(" ")
        if scheme != SCHEME:
            raise SignatureError(f"the Authorization header is not a {SCHEME} signature")
        fields = dict(part.strip().partition("=")[::2] for part in rest.split(","))
        try:
            timestamp, nonce, signature = int(fields["ts"]), fields["nonce"], fields["sig"]
        except (KeyError, ValueError):
            raise SignatureError(f"a {SCHEME} header needs ts=<ms>, nonce=<hex>, sig=<hex>") from None
        if len(nonce) != _NONCE_HEX or not _is_hex(nonce) or not _is_hex(signature):
            raise SignatureError(f"a {SCHEME} nonce is {_NONCE_HEX} hex digits and its sig is hex")
        return SignedRequest(timestamp, nonce, signature)

    def header(self) -> str:
        return f"{SCHEME} ts={self.timestamp_ms}, nonce={self.nonce}, sig={self.signature}"


def sign_request(token: str, method: str, target: str, body: bytes) -> SignedRequest:
    """The signature of a request to `target` (the path and its query)."""
    timestamp, nonce = int(time.time() * 1000), os.urandom(_NONCE_HEX // 2).hex()
    return SignedRequest(timestamp, nonce, _request_mac(token, method, target, timestamp, nonce, body))


def answer_signature(token: str, nonce: str, status: int, body: bytes) -> str:
    """The signature of the answer to the request that carried `nonce`."""
    message = b"\n".join([b"answer", nonce.encode(), str(status).encode(), hashlib.sha256(body).hexdigest().encode()])
    return hmac.new(token.encode(), message, hashlib.sha256).hexdigest()


def answer_is_signed(token: str, nonce: str, status: int, body: bytes, signature: str | None) -> bool:
    return signature is not None and hmac.compare_digest(answer_signature(token, nonce, status, body), signature)


class RequestVerifier:
    """The server's side: checks a signature, its timestamp and that its nonce is new."""

    def __init__(self, token: str, max_skew_ms: int = MAX_SKEW_MS) -> None:
        self._token = token
        self._max_skew_ms = max_skew_ms
        self._seen: OrderedDict[str, int] = OrderedDict()  # nonce -> its timestamp, oldest first
        self._lock = threading.Lock()

    def verify(self, header: str, method: str, target: str, body: bytes) -> SignedRequest:
        """The request's signature, or SignatureError saying why it is refused."""
        request = SignedRequest.parse(header)
        expected = _request_mac(self._token, method, target, request.timestamp_ms, request.nonce, body)
        if not hmac.compare_digest(expected, request.signature):
            raise SignatureError("the request is not signed with this cluster's access token")
        now = int(time.time() * 1000)
        if abs(now - request.timestamp_ms) > self._max_skew_ms:
            raise SignatureError(
                f"the request was signed {abs(now - request.timestamp_ms) // 1000} s away from the "
                "cluster's clock: check both machines' clocks"
            )
        with self._lock:
            while self._seen and next(iter(self._seen.values())) < now - self._max_skew_ms:
                self._seen.popitem(last=False)
            if request.nonce in self._seen:
                raise SignatureError("the request repeats one already served (a replay)")
            self._seen[request.nonce] = request.timestamp_ms
        return request


def _request_mac(token: str, method: str, target: str, timestamp_ms: int, nonce: str, body: bytes) -> str:
    message = b"\n".join(
        [
            b"request",
            method.upper().encode(),
            target.encode(),
            str(timestamp_ms).encode(),
            nonce.encode(),
            hashlib.sha256(body).hexdigest().encode(),
        ]
    )
    return hmac.new(token.encode(), message, hashlib.sha256).hexdigest()


def _is_hex(text: str) -> bool:
    return bool(text) and all(c in "0123456789abcdef" for c in text)
