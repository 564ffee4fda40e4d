"""A failure loop logs the first few of each kind of message, then one line saying how many were left out."""

from __future__ import annotations

import logging

from fluvial.common.repeated_logs import RepeatedMessages, limit_repeats


def test_repeats_are_logged_a_few_times_then_counted(caplog):
    now = [0.0]
    logger = logging.getLogger("fluvial.test.repeated")
    logger.addFilter(RepeatedMessages(first=2, window_s=10, clock=lambda: now[0]))
    with caplog.at_level(logging.WARNING, logger="fluvial.test.repeated"):
        for checkpoint in range(1, 41):  # a read-only checkpoint directory: every checkpoint fails alike
            logger.warning("checkpoint %d of job ab12 failed: [Errno 30] Read-only file system", checkpoint)
            now[0] += 0.025
        logger.warning("another message")
        now[0] += 10
        logger.warning("checkpoint %d of job ab12 failed: [Errno 30] Read-only file system", 41)
    messages = [record.getMessage() for record in caplog.records]
    assert messages == [
        "checkpoint 1 of job ab12 failed: [Errno 30] Read-only file system",
        "checkpoint 2 of job ab12 failed: [Errno 30] Read-only file system",
        "another message",
        "checkpoint 41 of job ab12 failed: [Errno 30] Read-only file system (and 38 more like it in the last 10 s)",
    ]


def test_info_lines_of_a_healthy_job_are_never_limited(caplog):
    """Every checkpoint's INFO line (its duration and size) is what an operator reads: none is held back."""
    logger = logging.getLogger("fluvial.test.repeated.info")
    limit_repeats(logger)
    with caplog.at_level(logging.INFO, logger="fluvial.test.repeated.info"):
        for checkpoint in range(10):
            logger.info("completed checkpoint %d of job ab12 in 5 ms (100 bytes)", checkpoint)
    assert len([r for r in caplog.records if r.name == "fluvial.test.repeated.info"]) == 10
