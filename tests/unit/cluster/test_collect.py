"""CollectBuffer, the client end of execute_and_collect: a closed client gives every credit back, so a collect
sink in a TaskManager process never waits for credit that cannot come (and its task can be cancelled); credits go
back to the collect sink they came from; remote buffers stay pickled until the client takes them."""

from __future__ import annotations

import threading

from fluvial.cluster.collect import CollectBuffer
from fluvial.common.wire import dumps_records


class Origin:
    """A TaskManager's gateway as the buffer sees it: counts the credits given back (all of collect sink 'c')."""

    def __init__(self) -> None:
        self.credits = 0
        self._lock = threading.Lock()

    def grant_collect_credit(self, count: int, collect_id: str) -> None:
        assert collect_id == "c"
        with self._lock:
            self.credits += count


def pickled(values: list) -> bytes:
    return dumps_records(values)  # the wire format of records


def test_taking_a_remote_buffer_gives_its_credit_back():
    buffer, origin = CollectBuffer("c"), Origin()
    buffer.put_remote(pickled([1, 2]), origin)
    buffer.send(range(3, 5))  # a collect sink in this process sends any sequence
    assert buffer.take() == [1, 2] and origin.credits == 1
    assert buffer.take() == range(3, 5)


def test_a_session_jobmanager_passes_buffers_on_pickled_without_unpickling_a_record():
    buffer, origin = CollectBuffer("c"), Origin()
    buffer.put_remote(b"not even a pickle", origin)  # the JobManager never looks inside
    buffer.send([7])
    buffer.finish()
    taken, ended = buffer.take_serialized(timeout=0)
    assert taken == [b"not even a pickle", pickled([7])] and ended and origin.credits == 1
    assert buffer.take_serialized(timeout=0) == ([], True)


def test_a_long_poll_returns_what_came_or_nothing_when_its_time_is_up():
    buffer, origin = CollectBuffer("c"), Origin()
    assert buffer.take_serialized(timeout=0.05) == ([], False)
    threading.Timer(0.05, lambda: buffer.put_remote(pickled([1]), origin)).start()
    assert buffer.take_serialized(timeout=10) == ([pickled([1])], False)


def test_a_local_collect_sink_may_send_while_the_buffer_has_room_or_the_client_is_gone():
    buffer = CollectBuffer("c")
    for value in range(CollectBuffer.CAPACITY):
        assert buffer.writable()
        buffer.send([value])
    assert not buffer.writable()
    buffer.close()
    assert buffer.writable()  # what it sends now is dropped


def test_closing_gives_back_the_credits_of_buffers_nobody_will_take():
    buffer, first, second = CollectBuffer("c"), Origin(), Origin()
    for value in range(8):  # a full credit window, waiting in the buffer
        buffer.put_remote(pickled([value]), first)
    buffer.put_remote(pickled([99]), second)
    buffer.close()
    assert (first.credits, second.credits) == (8, 1)
    buffer.put_remote(pickled([100]), first)  # arriving after the close: dropped, credit back at once
    assert first.credits == 9


def test_closing_keeps_the_end_of_a_job_that_already_ended():
    buffer, origin = CollectBuffer("c"), Origin()
    buffer.put_remote(pickled([1]), origin)
    buffer.finish()
    buffer.close()
    assert origin.credits == 1
    assert buffer.take() is CollectBuffer.END


def test_no_credit_is_lost_to_a_close_racing_the_arrivals():
    buffer, origin = CollectBuffer("c"), Origin()
    arrivals = 20_000

    def arrive() -> None:
        for _ in range(arrivals):
            buffer.put_remote(b"records", origin)

    sender = threading.Thread(target=arrive)
    sender.start()
    while origin.credits == 0 and sender.is_alive() and buffer._items.qsize() < 100:
        pass
    buffer.close()
    sender.join(30)
    assert origin.credits == arrivals  # every buffer was dropped, before or after the close, and credited
