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

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from llmviz.errors import LlmvizError, ServerBusyError
from llmviz.ui.public import LatestClaims

AHEAD = "ahead"  # who measures a claim that a step opened (issue 48: while the class thinks), not a session
LOG = logging.getLogger(__name__)


class ClaimFlights:
    """Which session is measuring which claim now, beside the server's store of latest measurements (passed to each
    call: the one ui/server.latest_claims keeps; every put goes through here, so a waiter wakes to find it)."""

    def __init__(self):
        self._lock = threading.Condition()
        self._measuring: dict[str, str] = {}  # claim id -> the session measuring it (or AHEAD)
        self._so_far: dict[str, dict] = {}  # claim id -> {"since", "rounds", "claim"}: an AHEAD run's progress
        self._one_queue = threading.Lock()  # runs ahead one after another: timings never share the cores

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
            # wait for whoever measures it now (a step's run ahead refreshes an older entry: wait for the new one)
            while claim_id in self._measuring and (self._measuring[claim_id] == AHEAD or
                                                   latest.get(claim_id) is None):
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
            entry = latest.get(claim_id)
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

    def ahead(self, latest: LatestClaims, claim_id: str, run: Callable[[Callable[[dict], None]], dict | None],
              fresh_s: float) -> bool:
        """Measure `claim_id` now, on a thread of its own, because its step opened (issue 48: the projector measures
        while the phones vote): unless the server holds an entry of it newer than fresh_s seconds or someone
        measures it now, so a hundred visitors opening the step cause one run. run(report) measures, calling
        report(the judged claim so far) after each batch, and returns the entry to keep (None: nothing). Whether it
        started."""
        with self._lock:
            entry = latest.get(claim_id)
            if claim_id in self._measuring or (entry is not None and time.time() - entry.get("at", 0) < fresh_s):
                return False
            self._measuring[claim_id] = AHEAD
            self._so_far[claim_id] = {"since": time.time(), "rounds": 0, "claim": None}
        threading.Thread(target=self._run_ahead, args=(latest, claim_id, run), name=f"llmviz-ahead-{claim_id}",
                         daemon=True).start()
        return True

    def _run_ahead(self, latest: LatestClaims, claim_id: str, run) -> None:
        entry = None
        try:
            with self._one_queue:  # a student who opens three claim steps in a row queues three runs
                entry = run(lambda claim: self._note(claim_id, claim))
        except (LlmvizError, MemoryError) as exc:  # the Reveal measures again and says what went wrong
            LOG.warning("measuring %s ahead of its Reveal failed: %s", claim_id, exc)
        finally:
            with self._lock:
                if entry is not None:
                    latest.put(claim_id, entry)
                self._measuring.pop(claim_id, None)
                self._so_far.pop(claim_id, None)
                self._lock.notify_all()

    def _note(self, claim_id: str, claim: dict) -> None:
        """An AHEAD run's claim judged on the rounds so far."""
        with self._lock:
            if claim_id in self._so_far:
                rounds = max((e.get("rounds") or 0 for e in claim.get("effects", [])), default=0)
                self._so_far[claim_id] |= {"rounds": rounds, "claim": claim}

    def wait_ahead(self, claim_id: str, timeout_s: float) -> dict | None:
        """Wait up to timeout_s for a step's run ahead of `claim_id` to end (woken by its end, not polled): None
        when none goes on (any more), else its state now (so_far's)."""
        deadline = time.monotonic() + timeout_s
        with self._lock:
            while claim_id in self._so_far and (left := deadline - time.monotonic()) > 0:
                self._lock.wait(left)
            state = self._so_far.get(claim_id)
            return dict(state) if state is not None else None

    def so_far(self, claim_id: str) -> dict | None:
        """{"since": epoch seconds, "rounds", "claim": judged so far or None} while a step's run ahead measures the
        claim; None otherwise."""
        with self._lock:
            state = self._so_far.get(claim_id)
            return dict(state) if state is not None else None
