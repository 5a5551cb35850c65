"""What every hostile-input test checks: a typed error with a one-line message, within a time limit."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections import Counter

import llmviz.errors as errors

TRIED: Counter = Counter()  # cases run, per interface ("library", "cli"), printed by each module's last test


class Hang(BaseException):
    """A case took longer than its limit (a BaseException: no `except Exception`, nor the CLI, swallows it)."""


@contextlib.contextmanager
def time_limit(seconds: float):
    """Fail a case that takes longer than `seconds` (SIGALRM, main thread; elsewhere no limit)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def alarm(signum, frame):
        raise Hang(f"no answer within {seconds} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def check_typed(exc: BaseException, expected: str = "LlmvizError") -> str:
    """exc is the typed error `expected` (a class name of llmviz.errors) with a non-empty one-line message."""
    assert isinstance(exc, errors.LlmvizError), f"untyped {type(exc).__name__}: {exc}"
    assert isinstance(exc, getattr(errors, expected)), f"{type(exc).__name__} is not a {expected}: {exc}"
    message = str(exc)
    assert message.strip() and "\n" not in message and "Traceback" not in message, repr(message)
    return message


def outcome(fn, expected: str, seconds: float = 20):
    """Run fn under a time limit; for an expected error, check it is typed and return it; else return fn()."""
    TRIED["library"] += 1
    with time_limit(seconds):
        if expected == "ok":
            return fn()
        try:
            result = fn()
        except errors.LlmvizError as exc:
            return exc
        raise AssertionError(f"expected a typed error, got a result: {result!r}"[:300])
