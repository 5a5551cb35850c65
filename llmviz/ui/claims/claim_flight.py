"""One measurement of a claim at a time on a public server (issue 35, finding 7): a class pressing Reveal together
on a claim nobody has measured yet gets one measurement, and everyone reads it.

Before, each session looked the claim up in the server's latest measurements (ui/public.LatestClaims) before it
queued for the heavy slot and never again: three sessions pressing Reveal at once each said "Measured now" and ran
one after another (K8: 1.8, 3.5, 5.1 s), the last replacing the others' result. ClaimFlights puts a per-claim
in-flight marker beside that store, under one Condition: the first session to ask for an unmeasured claim measures
it; the others wait for its entry and read it; a measurer that fails (an error, its tab closed) leaves no entry,
and the next waiter measures instead. Different claims never wait on each other. One per server process
(st.cache_resource in ui/lesson/lesson_reveal.py), guarded by its own lock: no module state. No streamlit here.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from llmviz.errors import ServerBusyError
from llmviz.ui.public import LatestClaims


class ClaimFlights:
    """Which session is measuring which claim now, beside the server's store of latest measurements (passed to each
    call: the one ui/server.latest_claims keeps; every put goes through here, so a waiter wakes to find it)."""

    def __init__(self):
        self._lock = threading.Condition()
        self._measuring: dict[str, str] = {}  # claim id -> the session measuring it

    def measuring(self, claim_id: str) -> str | None:
        with self._lock:
            return self._measuring.get(claim_id)

    @contextmanager
    def turn(self, latest: LatestClaims, claim_id: str, session: str, wait_s: float,
             on_wait: Callable[[], None] | None = None) -> Iterator[dict | None]:
        """The claim's shared entry, or None: this session measures it now, and `put`s its entry before the block
        ends (an error, or no entry put, lets the next waiter measure). While another session measures the claim,
        wait for it (on_wait() about twice a second), up to wait_s seconds: then ServerBusyError."""
        deadline = time.monotonic() + wait_s
        with self._lock:
            while (entry := latest.get(claim_id)) is None and claim_id in self._measuring:
                if self._measuring[claim_id] == session:
                    raise ServerBusyError("this session is already running a measurement: wait for it to finish",
                                          code="busy_session")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ServerBusyError(f"the server is running other people's measurements; try again in a "
                                          f"minute (waited {wait_s:.0f} s)", code="busy_server")
                if on_wait is not None:
                    on_wait()
                self._lock.wait(min(0.5, left))
            if entry is None:
                self._measuring[claim_id] = session
        if entry is not None:
            yield entry
            return
        try:
            yield None
        finally:
            with self._lock:
                self._measuring.pop(claim_id, None)
                self._lock.notify_all()

    def put(self, latest: LatestClaims, claim_id: str, entry: dict) -> None:
        """Keep a new measurement of the claim in `latest` and wake the sessions waiting for it."""
        with self._lock:
            latest.put(claim_id, entry)
            self._lock.notify_all()
