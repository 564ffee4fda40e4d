"""CollectBuffer, the client end of execute_and_collect: a closed client gives every credit back, so a collect
sink in a TaskManager process never waits for credit that cannot come (and its task can be cancelled)."""

from __future__ import annotations

import threading

from fluvial.cluster.collect import CollectBuffer


class Origin:
    """A TaskManager's gateway as the buffer sees it: counts the credits given back."""

    def __init__(self) -> None:
        self.credits = 0
        self._lock = threading.Lock()

    def grant_collect_credit(self, count: int) -> None:
        with self._lock:
            self.credits += count


def test_taking_a_remote_buffer_gives_its_credit_back():
    buffer, origin = CollectBuffer(), Origin()
    buffer.put_remote([1, 2], origin)
    buffer.send([3])
    assert buffer.take() == [1, 2] and origin.credits == 1
    assert buffer.take() == [3]


def test_closing_gives_back_the_credits_of_buffers_nobody_will_take():
    buffer, first, second = CollectBuffer(), Origin(), Origin()
    for value in range(8):  # a full credit window, waiting in the buffer
        buffer.put_remote([value], first)
    buffer.put_remote([99], second)
    buffer.close()
    assert (first.credits, second.credits) == (8, 1)
    buffer.put_remote([100], first)  # arriving after the close: dropped, credit back at once
    assert first.credits == 9


def test_closing_keeps_the_end_of_a_job_that_already_ended():
    buffer, origin = CollectBuffer(), Origin()
    buffer.put_remote([1], origin)
    buffer.finish()
    buffer.close()
    assert origin.credits == 1
    assert buffer.take() is CollectBuffer.END


def test_no_credit_is_lost_to_a_close_racing_the_arrivals():
    buffer, origin = CollectBuffer(), Origin()
    arrivals = 20_000

    def arrive() -> None:
        for value in range(arrivals):
            buffer.put_remote([value], origin)

    sender = threading.Thread(target=arrive)
    sender.start()
    while origin.credits == 0 and sender.is_alive() and buffer._items.qsize() < 100:
        pass
    buffer.close()
    sender.join(30)
    assert origin.credits == arrivals  # every buffer was dropped, before or after the close, and credited
