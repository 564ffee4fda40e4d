"""Who trusts whom over the REST API: the client never unpickles what answers at a cluster's address and never
sends its token; the REST server signs its answers, refuses replays and forged signatures, and answers only to
the Host names it serves."""

from __future__ import annotations

import http.server
import json
import pickle
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from fluvial.cluster.job_details import CheckpointDetails, JobDetails, SubtaskDetails, VertexDetails
from fluvial.cluster.session.rest_client import AccessToken, ClusterAddress, RestClusterClient, UntrustedAnswer
from fluvial.common.job_status import JobStatus
from fluvial.common.request_signing import RequestVerifier, SignatureError, sign_request
from fluvial.common.wire import dumps_records
from fluvial.runtime.execution_state import ExecutionState
from fluvial.web.rest import create_app
from fluvial.web.server import WebServer

pytestmark = pytest.mark.timeout(30)

TOKEN = "t0ken" * 6
JOB = "ab" * 16


class _Planted:
    """Unpickling it writes a file: the proof that a client ran a server's bytes."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self):
        return (Path.write_text, (self.path, "ran"))


@pytest.fixture
def impostor(tmp_path):
    """A process answering at a cluster's address: pickles that run code, for every route; it keeps the headers
    it was sent."""
    planted = tmp_path / "planted"
    seen: list[dict] = []
    payload = pickle.dumps(_Planted(planted))

    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self) -> None:
            seen.append(dict(self.headers))
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            if "coordinators" in self.path:
                body = json.dumps(
                    {"buffers": [__import__("base64").b64encode(payload).decode()], "ended": False}
                ).encode()
            else:
                body = payload
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _answer

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield ClusterAddress("127.0.0.1", server.server_address[1]), planted, seen
    server.shutdown()
    server.server_close()


def test_a_client_never_runs_the_bytes_an_impostor_answers_and_never_sends_it_the_token(impostor):
    address, planted, seen = impostor
    client = RestClusterClient(address, AccessToken(TOKEN, "test"))
    with pytest.raises(UntrustedAnswer, match="not signed with the cluster's access token"):
        client.details(JOB)
    with pytest.raises(UntrustedAnswer):
        client.take_results(JOB, "c" * 32, 0)
    anonymous = RestClusterClient(address, AccessToken(None, "none"))
    with pytest.raises(Exception, match="do not read as fluvial's|not JSON|Expecting value"):
        anonymous.details(JOB)
    assert not planted.exists()
    assert seen and not any(TOKEN in value for headers in seen for value in headers.values())


class _Dispatcher:
    """The DispatcherView of one running job with two collected buffers."""

    def __init__(self) -> None:
        self.buffers = [dumps_records([1, 2]), dumps_records([{"k": (3, 4.5)}])]

    def job(self, job_id: str):
        from types import SimpleNamespace

        subtask = SubtaskDetails(0, 0, ExecutionState.RUNNING, 0, 0, 10)
        vertex = VertexDetails(1, "Source: s", ["o"], ["s"], 1, 128, "default", None, True, [subtask])
        return SimpleNamespace(
            details=JobDetails(
                job_id, "job", JobStatus.RUNNING, {"CREATED": 1}, [vertex], [], CheckpointDetails(True, 2, 1), [], 0, 5
            )
        )

    def take_results(self, job_id, collect_id, timeout, close):
        taken, self.buffers = self.buffers, []
        return taken, True


@pytest.fixture
def served():
    server = WebServer(create_app(_Dispatcher(), TOKEN, bind_host="127.0.0.1"), "127.0.0.1").start()
    yield server
    server.stop()


def test_details_and_collected_records_arrive_from_the_cluster_with_its_signature(served):
    client = RestClusterClient(ClusterAddress("127.0.0.1", served.port), AccessToken(TOKEN, "test"))
    details = client.details(JOB)
    assert isinstance(details, JobDetails) and details.job_id == JOB
    assert details.vertices[0].subtasks[0].state is ExecutionState.RUNNING
    assert client.take_results(JOB, "c" * 32, 0) == ([[1, 2], [{"k": (3, 4.5)}]], True)
    wrong = RestClusterClient(ClusterAddress("127.0.0.1", served.port), AccessToken("other", "the test's"))
    with pytest.raises(Exception, match="refused"):
        wrong.take_results(JOB, "c" * 32, 0)


def _get(url: str, headers: dict) -> int:
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 - loopback test server
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def test_a_foreign_host_header_is_refused(served):
    url = f"http://127.0.0.1:{served.port}/jobs/{JOB}/details"
    assert _get(url, {}) == 200
    assert _get(url, {"Host": f"localhost:{served.port}"}) == 200
    assert _get(url, {"Host": f"rebound.example.com:{served.port}"}) == 421


def test_a_replayed_or_forged_signature_is_refused():
    verifier = RequestVerifier(TOKEN)
    signed = sign_request(TOKEN, "POST", "/jobs", b"graph")
    verifier.verify(signed.header(), "POST", "/jobs", b"graph")
    with pytest.raises(SignatureError, match="replay"):
        verifier.verify(signed.header(), "POST", "/jobs", b"graph")
    other = sign_request(TOKEN, "POST", "/jobs", b"graph")
    with pytest.raises(SignatureError, match="not signed with this cluster's access token"):
        verifier.verify(other.header(), "POST", "/jobs", b"another graph")
    with pytest.raises(SignatureError, match="not signed"):
        verifier.verify(sign_request("guess", "DELETE", "/cluster", b"").header(), "DELETE", "/cluster", b"")


def test_a_peer_that_sends_half_a_request_is_disconnected():
    import socket

    server = WebServer(create_app(_Dispatcher(), TOKEN), "127.0.0.1", request_deadline=0.3).start()
    try:
        slow = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        slow.sendall(b"GET /jobs/" + JOB.encode() + b"/details HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # never ends
        assert slow.recv(1024) == b""  # closed by the server, not by this test's timeout
        slow.close()
        assert _get(f"http://127.0.0.1:{server.port}/jobs/{JOB}/details", {}) == 200  # whole requests still work
    finally:
        server.stop()
