"""Failure reports keep the user's frames and drop fluvial's and the launcher's, in every linked exception."""

from __future__ import annotations

import os
import runpy

import fluvial
from fluvial.cli.failure_report import format_script_error, is_internal_frame, user_traceback
from fluvial.common.configuration import Configuration
from fluvial.common.errors import ConfigurationError


def ask_for_an_unknown_key() -> None:
    Configuration().get("no.such.key")  # raises inside fluvial.common.configuration


def test_frames_inside_fluvial_are_hidden_and_counted():
    try:
        ask_for_an_unknown_key()
    except ConfigurationError as error:
        text = user_traceback(error)
    assert "in ask_for_an_unknown_key" in text
    assert "configuration.py" not in text
    assert text.endswith("(1 frames of fluvial, its launcher and installed libraries hidden; --verbose shows them)")
    assert "ConfigurationError: unknown configuration key 'no.such.key'" in text


def test_causes_and_contexts_are_filtered_too():
    try:
        try:
            ask_for_an_unknown_key()
        except ConfigurationError as cause:
            try:
                raise RuntimeError("while handling") from cause
            except RuntimeError:
                raise KeyError("the last straw")  # noqa: B904 - the implicit context is what is tested
    except KeyError as error:
        text = user_traceback(error)
    assert "The above exception was the direct cause" in text
    assert "During handling of the above exception" in text
    assert "configuration.py" not in text
    assert "(1 frames of fluvial" in text


def test_a_report_without_hidden_frames_has_no_hint():
    try:
        raise ValueError("plain")
    except ValueError as error:
        text = user_traceback(error)
    assert text.endswith("ValueError: plain")


def test_verbose_keeps_every_frame():
    try:
        ask_for_an_unknown_key()
    except ConfigurationError as error:
        text = format_script_error(error, verbose=True)
    assert "fluvial/common/configuration.py" in text


def test_internal_frames_are_fluvials_and_runpys():
    assert is_internal_frame(os.path.join(os.path.dirname(fluvial.__file__), "runtime", "task.py"))
    assert is_internal_frame(runpy.__file__)
    assert is_internal_frame("<frozen runpy>")
    assert not is_internal_frame(__file__)
    assert not is_internal_frame(os.__file__)
