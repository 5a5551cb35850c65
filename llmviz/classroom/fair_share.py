"""Turns by fair share when the page is busy: a client that has used the server more waits behind one that has used it
less ("one address starves the class").

The budget (client_budget.py) bounds what one address may spend, sized so that a class of 60 phones behind one NAT
address never meets it; on this project's 2-core machine that bound is itself most of what a process serves. So the
budget alone cannot keep 32 sessions of one address from slowing every other student: when runs wait for the
server, the next one to go is the one whose client has used it least. A run of the page takes one of SLOTS turns;
a run that finds every turn taken waits, and when a turn frees the waiter whose client's recent use is lowest goes
first (its use: the seconds its runs held a turn, decaying with a half-life). A run that finds a turn free and no one
waiting goes at once; with one turn a process, runs that arrive together (a class's, after the teacher's step) go one
after another, as the GIL would run them anyway, so no class waits longer for the turns than for the core; an
attacker's runs still go, each behind every student's.

Long runs (a Reveal's measurement) hold a turn only for LONG_S: after that they no longer count as taking one, so
that a measurement never blocks the page for others; their use counts up to LONG_S too. A waiter gives up waiting
after MOST_WAIT_S and goes anyway (a net under a bug: no run waits forever). Streamlit-free and torch-free; the clock
is injectable (tests/classroom/test_fair_share.py); llmviz/ui/client_gate.py calls it around each run of the page and
of a fragment.

Waiting costs each waiter nothing while it waits (240 sessions of one address may wait at once): each sleeps on an
Event of its own, and only the one admitted is woken. Who goes next is decided in one place, `_dispatch`, on an
arrival, a release, and a waiter's timer (a long run aging out of its turn, or MOST_WAIT_S). Every client's use decays
by the same factor, so the order of clients by use changes only when one's use grows (its release): the waiting
clients sit in a heap keyed by their use expressed at one fixed time (`_rank`), each with its waiters in the order they
came, and picking the next costs O(log clients), not a look at every waiter.
"""

from __future__ import annotations

import heapq
import itertools
import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

SLOTS = 1  # page runs at once in one process: one Python core (the GIL), and a run's waits on the store beside it
HALF_LIFE_S = 10.0  # a client's use halves in this long: a burst of a minute ago no longer counts against it
LONG_S = 2.0  # a run older than this no longer takes a turn, and its use counts this much at most
MOST_WAIT_S = 30.0
LEAST_WAIT_S = 0.001  # a waiter's timer is never shorter (a clock's rounding never makes it spin)


@dataclass
class Turn:
    client: str
    started: float
    seq: int


@dataclass(eq=False)  # one waiter is itself: found in its queue by identity
class _Waiter:
    client: str
    seq: int
    since: float
    admitted: threading.Event = field(default_factory=threading.Event)  # set once, when `turn` is given
    turn: Turn | None = None


class FairShare:
    def __init__(self, slots: int = SLOTS, half_life_s: float = HALF_LIFE_S, long_s: float = LONG_S,
                 most_wait_s: float = MOST_WAIT_S, clock: Callable[[], float] = time.monotonic):
        if not (isinstance(slots, int) and slots >= 1 and half_life_s > 0 and long_s > 0 and most_wait_s > 0):
            raise ValueError(f"fair share: slots >= 1 and positive times, got {slots}, {half_life_s}, {long_s}, "
                             f"{most_wait_s}")
        self.slots, self.half_life_s, self.long_s, self.most_wait_s = slots, half_life_s, long_s, most_wait_s
        self.clock = clock
        self._lock = threading.Lock()
        self._use: dict[str, tuple[float, float]] = {}  # client -> (use in seconds, when last updated)
        self._running: dict[int, Turn] = {}  # the turns taken and not yet long (older ones are dropped)
        self._queues: dict[str, deque[_Waiter]] = {}  # client -> its waiters, oldest first (none: no entry)
        self._heap: list[tuple[float, int, str]] = []  # (rank, seq of the client's oldest waiter, client); stale
        self._seq = itertools.count()  # entries are dropped when they come up (`_dispatch`)

    def use(self, client: str, now: float | None = None) -> float:
        """A client's recent use: the seconds its runs held a turn, halved every half_life_s."""
        now = self.clock() if now is None else now
        held, at = self._use.get(client, (0.0, now))
        return held * math.pow(0.5, max(0.0, now - at) / self.half_life_s)

    def _rank(self, client: str) -> float:
        """log2 of the client's use as it would be at time 0: the order of any two clients by use at any time (the
        decay is the same factor for all), changed only by the client's release. -inf for a client with no use."""
        held, at = self._use.get(client, (0.0, 0.0))
        return math.log2(held) + at / self.half_life_s if held > 0 else -math.inf

    def waiting(self) -> int:
        """How many runs wait for a turn now."""
        with self._lock:
            return sum(map(len, self._queues.values()))

    def acquire(self, client: str) -> Turn:
        """Wait for this run's turn (at once when one is free and no one waits); the turn, to release."""
        with self._lock:
            now = self.clock()
            waiter = _Waiter(client, next(self._seq), now)
            queue = self._queues.setdefault(client, deque())
            queue.append(waiter)
            if len(queue) == 1:  # the client's first waiter: it enters the heap
                self._push(client)
            self._dispatch(now)
        timed_out = False
        while True:
            with self._lock:
                now = self.clock()
                if timed_out and waiter.turn is None:  # its timer: a long run may have aged out of its turn
                    self._dispatch(now)
                if waiter.turn is None and now - waiter.since >= self.most_wait_s:  # the net: it goes anyway
                    self._leave(waiter)
                    self._admit(waiter, now)
                if waiter.turn is not None:
                    return waiter.turn
                timeout = self._timer(waiter, now)
            timed_out = not waiter.admitted.wait(timeout)

    def release(self, turn: Turn) -> None:
        """The run ended: its client's use grows by the time it held its turn (at most long_s), and the turn goes to
        the next waiter."""
        with self._lock:
            now = self.clock()
            self._running.pop(turn.seq, None)
            self._use[turn.client] = (self.use(turn.client, now) + min(self.long_s, max(0.0, now - turn.started)),
                                      now)
            if turn.client in self._queues:  # its rank grew: its waiters' place in the heap too
                self._push(turn.client)
            self._forget(now)
            self._dispatch(now)

    def _busy(self, now: float) -> int:
        """The turns taken now; a run held longer than long_s no longer takes one (and is dropped here)."""
        for seq in [seq for seq, t in self._running.items() if now - t.started >= self.long_s]:
            del self._running[seq]
        return len(self._running)

    def _dispatch(self, now: float) -> None:
        """While a turn is free and someone waits: the waiter whose client's use is lowest (then the one waiting
        longest) gets it, and only that waiter is woken."""
        while self._heap and self._busy(now) < self.slots:
            rank, seq, client = heapq.heappop(self._heap)
            queue = self._queues.get(client)
            if not queue or queue[0].seq != seq or self._rank(client) != rank:  # stale: a newer entry stands for it
                continue
            waiter = queue.popleft()
            if queue:
                self._push(client)
            else:
                del self._queues[client]
            self._admit(waiter, now)

    def _push(self, client: str) -> None:
        heapq.heappush(self._heap, (self._rank(client), self._queues[client][0].seq, client))

    def _admit(self, waiter: _Waiter, now: float) -> None:
        waiter.turn = self._running[waiter.seq] = Turn(waiter.client, now, waiter.seq)
        waiter.admitted.set()

    def _leave(self, waiter: _Waiter) -> None:
        """A waiter out of its queue before its turn (past most_wait_s): rare, so a plain removal."""
        queue = self._queues[waiter.client]
        first = queue[0] is waiter
        queue.remove(waiter)
        if not queue:
            del self._queues[waiter.client]
        elif first:
            self._push(waiter.client)

    def _timer(self, waiter: _Waiter, now: float) -> float:
        """How long a waiter sleeps unless admitted: until the first running turn turns long (it frees a turn with no
        release), or until its most_wait_s is up."""
        ages = min((t.started + self.long_s - now for t in self._running.values()), default=self.most_wait_s)
        return max(LEAST_WAIT_S, min(ages, waiter.since + self.most_wait_s - now))

    def _forget(self, now: float) -> None:
        """Drop the clients whose use has decayed to nothing (a millisecond), so the table holds the recent ones (not
        one that waits: its rank stands in the heap)."""
        if len(self._use) > 1000:
            for client in [c for c in self._use if c not in self._queues and self.use(c, now) < 1e-3]:
                del self._use[client]
