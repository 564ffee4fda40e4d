"""Fakes shared by the cluster tests."""

from __future__ import annotations


def _recording(kind: str):
    def record(self, message) -> None:
        self.sent.append((kind, message))

    return record


class TaskManagerGateway:
    """A TaskManagerGateway that records every message the JobMaster sends it, by kind, and does nothing."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, object]] = []

    submit_task = _recording("deploy")
    cancel_task = _recording("cancel")
    trigger_checkpoint = _recording("trigger")
    notify_checkpoint_complete = _recording("complete")
    notify_checkpoint_aborted = _recording("aborted")
    release_job = _recording("release")

    def of(self, kind: str) -> list:
        return [message for sent_kind, message in self.sent if sent_kind == kind]

    def take(self, kind: str) -> list:
        taken = self.of(kind)
        self.sent = [(k, m) for k, m in self.sent if k != kind]
        return taken
