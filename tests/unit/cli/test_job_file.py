"""SubmittedJobs: cancelling what a job file started, including a job whose client arrives after the cancel, and
never a detached job."""

from __future__ import annotations

from fluvial.cli.job_file import SubmittedJobs
from fluvial.common.future import CompletableFuture


class FakeClient:
    def __init__(self, name: str, done: bool = False, detached: bool = False) -> None:
        self.name = name
        self.detached = detached
        self.cancelled = 0
        self.result = CompletableFuture()
        if done:
            self.result.set_result(None)

    def get_job_id(self) -> str:
        return self.name

    def get_job_execution_result(self) -> CompletableFuture:
        return self.result

    def cancel(self) -> None:
        self.cancelled += 1
        if not self.result.done():
            self.result.set_exception(RuntimeError("cancelled"))


def test_cancel_running_cancels_only_jobs_that_have_not_ended():
    jobs = SubmittedJobs()
    running, finished = jobs.add(FakeClient("running")), jobs.add(FakeClient("finished", done=True))
    jobs.cancel_running()
    assert (running.cancelled, finished.cancelled) == (1, 0)
    assert len(jobs) == 2


def test_a_job_added_after_the_cancel_is_cancelled_as_it_arrives():
    """The pipe can close on a job's first line, before `submit` has handed its client back."""
    jobs = SubmittedJobs()
    jobs.cancel_running()
    late = jobs.add(FakeClient("late"))
    assert late.cancelled == 1


def test_wait_returns_once_the_jobs_ended_and_gives_up_on_a_stuck_one(caplog):
    jobs = SubmittedJobs()
    jobs.add(FakeClient("ends", done=True))
    jobs.add(FakeClient("stuck"))
    jobs.wait(timeout=0.05)
    assert "job stuck has not ended" in caplog.text


def test_detached_jobs_are_never_cancelled():
    jobs = SubmittedJobs()
    detached = jobs.add(FakeClient("runs-on", detached=True))
    attached = jobs.add(FakeClient("attached"))
    jobs.cancel_running()
    late = jobs.add(FakeClient("late-detached", detached=True))
    assert (detached.cancelled, attached.cancelled, late.cancelled) == (0, 1, 0)
    assert len(jobs) == 3  # counted: the file did submit jobs
