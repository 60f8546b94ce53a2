"""A worker's start is not cut in half by Ctrl-C: SIGINT and SIGTERM that come while it
starts take effect when the start is done (``serve.workers._signals_deferred``)."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from attentive_reader.serve.workers import _signals_deferred


def test_a_ctrl_c_during_the_body_is_raised_when_it_ends():
    # Ctrl-C as in a terminal, whatever this test run inherited ("pytest &" ignores SIGINT).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    done = []
    try:
        with pytest.raises(KeyboardInterrupt):
            with _signals_deferred():
                os.kill(os.getpid(), signal.SIGINT)
                done.append("the body ran to its end")
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # put back
    finally:
        signal.signal(signal.SIGINT, previous)
    assert done == ["the body ran to its end"]


def test_sigterm_goes_to_the_handler_it_was_meant_for_and_nothing_without_a_signal():
    seen = []
    previous = signal.signal(signal.SIGTERM, lambda number, frame: seen.append(number))
    try:
        with _signals_deferred():
            os.kill(os.getpid(), signal.SIGTERM)
            assert seen == []
        assert seen == [signal.SIGTERM]
        with _signals_deferred():
            pass
        assert seen == [signal.SIGTERM]
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_outside_the_main_thread_it_changes_nothing():
    errors = []

    def body():
        try:
            with _signals_deferred():
                pass
        except Exception as error:  # signal.signal would raise ValueError here
            errors.append(error)

    thread = threading.Thread(target=body)
    thread.start()
    thread.join()
    assert errors == []
