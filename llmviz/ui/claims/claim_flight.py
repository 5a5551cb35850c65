"""One measurement of a claim at a time on a public server: a class pressing Reveal together
on a claim nobody has measured yet gets one measurement, and everyone reads it.

Before, each session looked the claim up in the server's latest measurements (ui/public.LatestClaims) before it
queued for the heavy slot and never again: three sessions pressing Reveal at once each said "Measured now" and ran
one after another (K8: 1.8, 3.5, 5.1 s), the last replacing the others' result. ClaimFlights puts a per-claim
in-flight marker beside that store, under one Condition: the first session to ask for an unmeasured claim measures
it; the others wait for its entry and read it; a measurer that fails (an error, its tab closed) leaves no entry,
and the next waiter measures instead. Different claims never wait on each other.

Beside them, the runs ahead: a lesson's claim step measures its claim, and those its workload serves, as
it opens, and the lesson's next claim when the queue is free; they take turns one at a time (timings never share
the cores), the step opened last first, and a run gives its turn between batches to one that goes before it. One
per server process (st.cache_resource in ui/lesson/lesson_measure.py), guarded by its own lock: no module state.
No streamlit here.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager

from llmviz.analysis.claim_effects import rounds_judged
from llmviz.errors import LlmvizError, ServerBusyError
from llmviz.ui.public import LatestClaims

AHEAD = "ahead"  # who measures a claim that a step opened (while the class thinks), not a session
LOG = logging.getLogger(__name__)
Runner = Callable[[Callable[[str, dict], None]], dict | None]  # run(report) -> {claim id: entry}: a run ahead


class ClaimFlights:
    """Which session is measuring which claim now, beside the server's store of latest measurements (passed to each
    call: the one ui/server.latest_claims keeps; every put goes through here, so a waiter wakes to find it)."""

    def __init__(self):
        self._lock = threading.Condition()
        self._measuring: dict[str, str] = {}  # claim id -> the session measuring it (or AHEAD)
        self._so_far: dict[str, dict] = {}  # claim id -> {"since", "rounds", "claim"}: an AHEAD run's progress
        # runs ahead, one at a time (timings never share the cores): each keyed by its first claim
        self._run_of: dict[str, str] = {}  # claim id -> the run ahead measuring it
        self._rank: dict[str, tuple[int, int]] = {}  # run -> its place (lower first: _rank_of)
        self._queued: set[str] = set()  # runs waiting for their turn
        self._turn: str | None = None  # the run measuring now
        self._asked = itertools.count()

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
            latest.keep(claim_id, entry)  # unless the server holds a finer run (ui/public.finer)
            self._lock.notify_all()

    def ahead(self, latest: LatestClaims, claim_ids: str | tuple[str, ...], run: Runner, fresh_s: float,
              opened: bool = True, slot: Callable[[], AbstractContextManager] | None = None) -> bool:
        """Measure `claim_ids` (one claim, or the claims one workload serves: claim_spec.sharing) now, on a thread
        of its own, because a step opened (the projector measures while the phones vote) or, not
        `opened`, because it is the lesson's next claim (measured when the queue is free): unless the server holds
        an entry of each newer than fresh_s seconds or someone measures one now, so a hundred visitors opening the
        step cause one run. run(report) measures, calling report(claim id, the judged claim so far) after each
        batch, and returns {claim id: the entry to keep} (None: nothing). Runs ahead take turns, one at a time,
        holding `slot()` (the heavy gate) while measuring: the step opened last goes first, the next claims after
        every opened one, and a run gives its turn between batches to one that goes before it. Whether it
        started (a step opened on a claim already queued moves it up)."""
        ids = (claim_ids,) if isinstance(claim_ids, str) else tuple(claim_ids)
        with self._lock:
            busy = [c for c in ids if c in self._measuring]
            if busy:
                if opened and (key := self._run_of.get(busy[0])) is not None:
                    self._rank[key] = self._rank_of(True)  # the class is on it now: it goes first
                    self._lock.notify_all()
                return False
            entries = [latest.get(c) for c in ids]
            if all(e is not None and time.time() - e.get("at", 0) < fresh_s for e in entries):
                return False
            key = ids[0]
            self._rank[key] = self._rank_of(opened)
            for c in ids:
                self._measuring[c], self._run_of[c] = AHEAD, key
                self._so_far[c] = {"since": time.time(), "rounds": 0, "claim": None}
        threading.Thread(target=self._run_ahead, args=(latest, ids, run, slot), name=f"llmviz-ahead-{key}",
                         daemon=True).start()
        return True

    def promote(self, claim_id: str) -> None:
        """Someone waits on `claim_id` (a Reveal pressed): its run ahead, queued or paused, goes first."""
        with self._lock:
            if (key := self._run_of.get(claim_id)) is not None:
                self._rank[key] = self._rank_of(True)
                self._lock.notify_all()

    def _rank_of(self, opened: bool) -> tuple[int, int]:
        """Lower goes first: steps opened, the last one first; then the next claims, the first asked first."""
        n = next(self._asked)
        return (0, -n) if opened else (1, n)

    def _run_ahead(self, latest: LatestClaims, ids: tuple[str, ...], run: Runner, slot) -> None:
        key, entries, held = ids[0], None, ExitStack()
        try:
            self._take_turn(key)
            if slot is not None:
                held.enter_context(slot())
            entries = run(lambda cid, claim: self._note(key, cid, claim, slot, held))
        except (LlmvizError, MemoryError) as exc:  # the Reveal measures again and says what went wrong
            LOG.warning("measuring %s ahead of its Reveal failed: %s", ",".join(ids), exc)
        finally:
            held.close()
            with self._lock:
                for cid, entry in (entries or {}).items():
                    latest.keep(cid, entry)
                for cid in ids:
                    for kept in (self._measuring, self._so_far, self._run_of):
                        kept.pop(cid, None)
                self._rank.pop(key, None)
                self._queued.discard(key)
                if self._turn == key:
                    self._turn = None
                self._lock.notify_all()

    def _take_turn(self, key: str) -> None:
        """Wait until no run ahead measures and `key` goes first of those waiting."""
        with self._lock:
            self._queued.add(key)
            while self._turn is not None or min(self._queued, key=self._rank.__getitem__) != key:
                self._lock.wait()
            self._queued.discard(key)
            self._turn = key

    def _note(self, key: str, claim_id: str, claim: dict, slot, held: ExitStack) -> None:
        """A run ahead's claim judged on the rounds so far; then, between its batches, the turn goes to a run
        waiting before it (a step opened since), the heavy slot with it, and this run waits for its turn again."""
        with self._lock:
            if claim_id in self._so_far:
                self._so_far[claim_id] |= {"rounds": rounds_judged(claim), "claim": claim}
            yields = any(self._rank[k] < self._rank[key] for k in self._queued)
            if yields:
                self._turn = None
                self._lock.notify_all()
        if yields:
            held.close()
            self._take_turn(key)
            if slot is not None:
                held.enter_context(slot())

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
