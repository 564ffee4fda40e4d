"""RestClusterClient (Flink's name): a session cluster's REST API as Python calls, for the RemoteExecutor, the
JobClient of a remote job and the `fluvial list | cancel | savepoint | stop | cluster stop` commands.

HTTP/1.1 over loopback or the network with the standard library (urllib): a request at a time, JSON in and out,
except the job submission (a cloudpickled JobGraph, sent to the cluster that will run it).

Trust runs one way. The client trusts the cluster with its code (it submits a pickled JobGraph); it never
unpickles what an answer says, since whatever listens at the address answers: the job details come as JSON, and
the collected records (pickled by the TaskManagers that run the job's code) are unpickled only from an answer
signed with the cluster's access token. Every request is signed with the token when the client has one
(`fluvial.common.request_signing`): the token itself never crosses the wire, and an answer to a signed request
that the cluster did not sign is refused (`UntrustedAnswer`).

The access token of the mutating routes comes from `~/.fluvial/cluster.json` when that file records the
cluster at the address asked for, else from the environment variable FLUVIAL_TOKEN; a 401 says which was tried
(`AccessTokenError`). An address nobody answers at is `ClusterUnreachable`; any other error answer is a
`ClusterRequestError` carrying the cluster's own message.
"""

from __future__ import annotations

import base64
import json
import os
import pickle
import socket
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any, cast

from fluvial.cluster.job_details import JobDetails
from fluvial.cluster.job_details_json import details_from_json
from fluvial.cluster.session.cluster_file import ClusterFileError, cluster_file_path, read_cluster_file
from fluvial.common.errors import FluvialError
from fluvial.common.request_signing import SIGNATURE_HEADER, answer_is_signed, sign_request

TOKEN_VARIABLE = "FLUVIAL_TOKEN"
REQUEST_TIMEOUT_SECONDS = 30.0
SAVEPOINT_POLL_SECONDS = 0.1

# The media type of POST /jobs (a cloudpickled JobGraph); the server (`fluvial.web.rest`) takes it from here.
JOB_GRAPH_MEDIA_TYPE = "application/x-fluvial-job-graph"


class ClusterUnreachable(FluvialError):
    """Nothing answers at the cluster's address."""


class ClusterRequestError(FluvialError):
    """The cluster answered with an error; `status` is the HTTP status, the message the cluster's."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class AccessTokenError(ClusterRequestError):
    """401: the request needed the cluster's access token, and had none or a wrong one."""


class UntrustedAnswer(ClusterRequestError):
    """An answer to a signed request that is not signed with the cluster's token: something other than the
    cluster answers at its address."""


@dataclass(frozen=True, slots=True)
class ClusterAddress:
    host: str
    port: int

    @staticmethod
    def parse(text: str) -> ClusterAddress:
        """`HOST:PORT` (Flink's `-m`), `[IPv6]:PORT`, or an http:// URL of the REST API."""
        value = text.strip().removeprefix("http://").rstrip("/")
        host, separator, port = value.rpartition(":")
        host = host.strip("[]")
        if not separator or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"'{text}' is not an address of a cluster's REST API: give HOST:PORT, e.g. localhost:8081")
        return ClusterAddress(host, int(port))

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def __str__(self) -> str:
        return self.url.removeprefix("http://")

    def same_as(self, other: ClusterAddress) -> bool:
        """Both name one endpoint: the same port, and hosts that resolve to a common address (localhost and
        127.0.0.1 are the same cluster)."""
        if self.port != other.port:
            return False
        return self.host == other.host or bool(_resolve(self.host) & _resolve(other.host))


def _resolve(host: str) -> set[str]:
    try:
        # a host name resolves to IP addresses (AF_INET, AF_INET6), whose sockaddr starts with the address text
        return {cast(str, info[4][0]) for info in socket.getaddrinfo(host, None)}
    except OSError:
        return set()


@dataclass(frozen=True, slots=True)
class AccessToken:
    value: str | None
    source: str  # what a 401 says about it: "<where it came from> was refused", or why there was none


def find_token(address: ClusterAddress) -> AccessToken:
    """The token for the cluster at `address` (see the module docstring)."""
    path = cluster_file_path()
    try:
        record = read_cluster_file(path)
    except ClusterFileError as error:
        record, unreadable = None, str(error)
    else:
        unreadable = ""
    if record is not None and ClusterAddress.parse(record.address).same_as(address):
        return AccessToken(record.token, f"the token in {path} (which records this cluster) was refused")
    environment = os.environ.get(TOKEN_VARIABLE)
    if unreadable:
        file_note = unreadable
    elif record is None:
        file_note = f"{path} does not exist (it records a cluster this machine started)"
    else:
        file_note = f"{path} records the cluster at {record.address}, not this one"
    if environment:
        return AccessToken(environment, f"the token in {TOKEN_VARIABLE} was refused ({file_note})")
    return AccessToken(None, f"none was found: {file_note}, and {TOKEN_VARIABLE} is not set")


class RestClusterClient:
    def __init__(self, address: ClusterAddress, token: AccessToken | None = None) -> None:
        self.address = address
        self.token = token if token is not None else find_token(address)

    # -- reading -----------------------------------------------------------------------------------------------

    def overview(self) -> dict[str, Any]:
        return self._object("GET", "/overview")

    def jobs_overview(self) -> list[dict[str, Any]]:
        jobs: list[dict[str, Any]] = self._object("GET", "/jobs/overview")["jobs"]
        return jobs

    def job(self, job_id: str) -> dict[str, Any]:
        return self._object("GET", f"/jobs/{job_id}")

    def checkpoints(self, job_id: str) -> dict[str, Any]:
        return self._object("GET", f"/jobs/{job_id}/checkpoints")

    def exceptions(self, job_id: str) -> dict[str, Any]:
        return self._object("GET", f"/jobs/{job_id}/exceptions")

    def details(self, job_id: str) -> JobDetails:
        """The job's JobDetails (fluvial's GET /jobs/:jobid/details, JSON)."""
        try:
            return details_from_json(self._json("GET", f"/jobs/{job_id}/details"))
        except ValueError as error:
            raise ClusterRequestError(
                f"the cluster at {self.address} answered job details that do not read as "
                f"fluvial's ({error}): is the client's fluvial version the cluster's?",
                502,
            ) from None

    # -- changing (token-guarded) --------------------------------------------------------------------------------

    def submit(self, job_graph: bytes) -> str:
        """POST /jobs with a cloudpickled JobGraph; the job's id."""
        answer = self._request("POST", "/jobs", job_graph, JOB_GRAPH_MEDIA_TYPE)
        job_id: str = json.loads(answer)["jobid"]
        return job_id

    def cancel(self, job_id: str) -> None:
        self._json("PATCH", f"/jobs/{job_id}?mode=cancel")

    def trigger_savepoint(self, job_id: str, target_directory: str | None, cancel_job: bool = False) -> str:
        """The trigger id of a savepoint into `target_directory` (None: the job's state.savepoints.dir)."""
        body = {"target-directory": target_directory, "cancel-job": cancel_job}
        trigger_id: str = self._object("POST", f"/jobs/{job_id}/savepoints", body)["request-id"]
        return trigger_id

    def stop_with_savepoint(self, job_id: str, target_directory: str | None, drain: bool = False) -> str:
        body = {"targetDirectory": target_directory, "drain": drain}
        trigger_id: str = self._object("POST", f"/jobs/{job_id}/stop", body)["request-id"]
        return trigger_id

    def savepoint_path(self, job_id: str, trigger_id: str, timeout: float | None = None) -> str:
        """Wait for the savepoint operation `trigger_id`; its path, or ClusterRequestError with its failure."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            status = self._object("GET", f"/jobs/{job_id}/savepoints/{trigger_id}")
            if status["status"]["id"] == "COMPLETED":
                operation = status.get("operation", {})
                if "location" in operation:
                    location: str = operation["location"]
                    return location
                cause = operation.get("failure-cause", {})
                raise ClusterRequestError(f"the savepoint of job {job_id} failed: {cause.get('message')}", 409)
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"the savepoint of job {job_id} did not complete within {timeout:.0f} s")
            time.sleep(SAVEPOINT_POLL_SECONDS)

    def take_results(self, job_id: str, collect_id: str, wait_ms: int, close: bool = False) -> tuple[list[Any], bool]:
        """The next collected buffers, each a list of records, and whether the end came: the collect route of
        `fluvial.web.rest`. The buffers are unpickled only from an answer signed with the cluster's token."""
        if not self.token.value:
            raise AccessTokenError(
                f"reading collected records from the cluster at {self.address} needs its access "
                f"token, and {self.token.source}",
                401,
            )
        body = json.dumps({"timeout-ms": wait_ms, "close": close}).encode()
        answer = json.loads(
            self._request(
                "POST",
                f"/jobs/{job_id}/coordinators/{collect_id}",
                body,
                "application/json",
                timeout=wait_ms / 1000 + REQUEST_TIMEOUT_SECONDS,
            )
        )
        # The answer's signature was checked in _request: these bytes come from the cluster's TaskManagers.
        buffers = [pickle.loads(base64.b64decode(buffer)) for buffer in answer["buffers"]]  # noqa: S301
        return buffers, bool(answer["ended"])

    def shutdown(self) -> None:
        self._json("DELETE", "/cluster")

    # -- HTTP ------------------------------------------------------------------------------------------------------

    def _json(self, method: str, path: str, body: Any = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        answer = self._request(method, path, data, "application/json")
        return json.loads(answer) if answer else None

    def _object(self, method: str, path: str, body: Any = None) -> dict[str, Any]:
        """The answer of a route that answers a JSON object (every one but cancel's, which may answer nothing)."""
        answer: dict[str, Any] = self._json(method, path, body)
        return answer

    def _request(
        self, method: str, path: str, data: bytes | None, content_type: str, timeout: float = REQUEST_TIMEOUT_SECONDS
    ) -> bytes:
        request = urllib.request.Request(self.address.url + path, data=data, method=method)
        if data is not None:
            request.add_header("Content-Type", content_type)
        signed = sign_request(self.token.value, method, path, data or b"") if self.token.value else None
        if signed is not None:
            request.add_header("Authorization", signed.header())
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - http:// only
                answer: bytes = response.read()
                status, signature = response.status, response.headers.get(SIGNATURE_HEADER)
        except urllib.error.HTTPError as error:
            raise self._error(method, path, error) from None
        except (TimeoutError, urllib.error.URLError, ConnectionError) as error:
            reason = getattr(error, "reason", error)
            raise ClusterUnreachable(
                f"no session cluster answers at {self.address.url} ({reason}): start one "
                "(fluvial cluster start), or check the address (-m HOST:PORT)"
            ) from None
        # signed only with a token: its value is a str here
        if signed is not None and not answer_is_signed(
            cast(str, self.token.value), signed.nonce, status, answer, signature
        ):
            raise UntrustedAnswer(
                f"the answer to {method} {path.split('?')[0]} from {self.address} is not signed with "
                "the cluster's access token: something other than the cluster answers at this "
                "address (a stopped cluster's port taken by another process?); check the address",
                502,
            )
        return answer

    def _error(self, method: str, path: str, error: urllib.error.HTTPError) -> ClusterRequestError:
        try:
            messages = json.loads(error.read()).get("errors") or []
        except (ValueError, AttributeError):
            messages = []
        message = "; ".join(str(m) for m in messages) or f"HTTP {error.code} {error.reason}"
        if error.code == 401:
            return AccessTokenError(
                f"the cluster at {self.address} refused {method} {path.split('?')[0]}: it needs the cluster's access "
                f"token, and {self.token.source}. The token is in ~/.fluvial/cluster.json on the machine that runs "
                f"the cluster: run there, or set {TOKEN_VARIABLE} to it",
                401,
            )
        return ClusterRequestError(message, error.code)
