"""A budget per client ("one address starves the class"): how many runs of the page a browser
session and a client address may ask for, and how many sessions one address may hold, sized so that a class of 60
phones behind ONE school NAT address never meets it.

32 sessions from one address rerunning the page as fast as they could took a victim's prediction from 0.11 s to
1.32 s and the projector's poll from 0.03 s to 1.02 s: nothing limited sessions or reruns per client. Now every run
spends a token of two token buckets, its session's and its client's (the one rule of llmviz/classroom/clients.py:
an IPv4 address, an IPv6 /64), of one of two kinds:

- PAGE: a run of the page (a click, a slider's change, the class's step followed), or of a fragment that does a
  page's work (the Decode page's step, its Play);
- POLL: a fragment that reads the class's state (the status line every 1-2 s, a student's request every 1 s).

A bucket holds up to `burst` tokens and gains `per_s` a second: a burst is served at once, then runs at the rate. A
run that finds a bucket empty may queue for a token to come (up to the caller's `queue_s`: the page waits a moment in
its session's thread, which costs no CPU) or is refused and spends nothing; the page then says how long to wait.
A session is live while seen within `live_s`; an address holds at most `live_sessions` live ones, and a new one past
that is refused the same way. An entry idle for `forget_s` is forgotten (its buckets would be full again by then, so
nothing is lost), and the registry holds at most `max_clients` and `max_sessions` (the least recently seen goes
first). The numbers, and why: `Limits` below. Every number is per app process: behind serve-class's round robin a
class is split between the replicas, so each of them sees a part of it.

No streamlit, no torch: the page hands in the client and the session (llmviz/ui/client_gate.py), and the clock is
injectable, so the rule is checked by hand with a fake one (tests/classroom/test_client_budget.py).
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from llmviz.errors import ConfigError

PAGE, POLL = "page", "poll"
KINDS = (PAGE, POLL)
SESSION, CLIENT, SESSIONS = "session", "client", "sessions"  # a refusal's reason: whose budget ran out
ENV = "LLMVIZ_CLIENT_BUDGET"

# The class the defaults are sized for: 60 phones behind one NAT address, two tabs each (the balancer's own figures,
# scripts/class_balancer.py). When the teacher moves a step, every phone's status poll (every 2 s) finds it and its
# page follows: one poll and then one run of the page each (counted over Streamlit's websocket, scripts/st_session.py:
# 2 script runs a phone a step, the poll's and the page's), all within about 2 s.
CLASS, TABS = 60, 2


@dataclass(frozen=True)
class Allowance:
    """A token bucket's size: `burst` runs at once, then `per_s` a second."""

    burst: int
    per_s: float

    def __post_init__(self):
        if isinstance(self.burst, bool) or not isinstance(self.burst, int) or self.burst < 1:
            raise ConfigError(f"an allowance's burst is a whole number of runs, at least 1, not {self.burst!r}")
        if not (isinstance(self.per_s, int | float) and math.isfinite(self.per_s) and self.per_s > 0):
            raise ConfigError(f"an allowance's rate is a positive number of runs a second, not {self.per_s!r}")

    @property
    def refill_s(self) -> float:
        """Seconds for an empty bucket to be full again."""
        return self.burst / self.per_s

    def times(self, k: float) -> Allowance:
        return Allowance(max(1, round(self.burst * k)), self.per_s * k)


@dataclass(frozen=True)
class Limits:
    """Per app process. A session's allowances hold one person; a client's hold the whole class behind one address,
    and bound what one address (an attacker's 32 sessions, or 240) may cost: no more than a class at its busiest."""

    # One person: a burst of 30 is 6 s of the fastest honest clicking (a slider's keyboard arrows send a run per
    # press, five a second) or 30 steps followed; 2.5 a second is Decode's fastest Play (a step every 0.4 s) for as
    # long as it plays, and more than a person reading a page asks for.
    session_pages: Allowance = Allowance(30, 2.5)
    # The class: three page runs from every tab at once (60 x 2 x 3 = 360: all of them opening the lesson and
    # following two quick steps, or a step and a prediction); then 20 a second for as long as it lasts: 60 phones
    # each following a step every 10 s and moving a slider 5 times every 30 s need 16 (tests/classroom/
    # test_client_budget.py plays such a class for 10 minutes). 20 a second is about 60% of what one process serves
    # of the lesson on this project's 2-core machine (33 runs a second at ~30 ms of CPU each, bench/rerun_flood.py):
    # the most one address may take, in a class or not.
    client_pages: Allowance = Allowance(CLASS * TABS * 3, 20.0)
    # The status fragment polls every 1 s on the projector and 2 s on a phone, a student's request every 1 s on
    # the workload step: 1.5 a second at most on one page, twice over (and its buttons, Rejoin, Take the lead).
    session_polls: Allowance = Allowance(10, 3.0)
    # 60 phones x 1.5 polls a second (90) and the projector's, half again and rounded up: 150; a burst of three
    # polls of every tab (their timers are not in step, so a burst is rare).
    client_polls: Allowance = Allowance(CLASS * TABS * 3, 150.0)
    # Sessions an address holds: 60 phones x 2 tabs, twice over (a reload's new session counts beside the old one
    # until the old one has been unseen for live_s). A phone in a class polls every 2 s, so it stays live.
    live_sessions: int = CLASS * TABS * 2
    live_s: float = 60.0
    forget_s: float = 300.0  # an idle session or client forgotten after 5 min (its buckets long full again)
    max_clients: int = 10_000  # HAProxy's maxconn: no more addresses than that can be connected at once
    max_sessions: int = 20_000

    def __post_init__(self):
        for name in ("live_sessions", "max_clients", "max_sessions"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"client budget: {name} is a whole number, at least 1, not {value!r}")
        if not (0 < self.live_s <= self.forget_s and math.isfinite(self.forget_s)):
            raise ConfigError(f"client budget: need 0 < live_s <= forget_s, got {self.live_s}, {self.forget_s}")
        slowest = max(a.refill_s for a in self.allowances().values())
        if self.forget_s < slowest:  # forgetting an entry whose bucket is not yet full would hand it a fresh one
            raise ConfigError(f"client budget: forget_s ({self.forget_s} s) must be at least the slowest refill "
                              f"({slowest:g} s)")
        if self.max_sessions < self.live_sessions:
            raise ConfigError("client budget: max_sessions must hold one address's live sessions at least")

    def allowances(self) -> dict[tuple[str, str], Allowance]:
        """{(SESSION or CLIENT, kind): its allowance}."""
        return {(SESSION, PAGE): self.session_pages, (CLIENT, PAGE): self.client_pages,
                (SESSION, POLL): self.session_polls, (CLIENT, POLL): self.client_polls}

    def classes(self, k: float) -> Limits:
        """The limits for k classes behind one address (2: two teachers of one school on one server; 0.25: a public
        server whose visitors come 15 to an address at most): each address allowance and its live sessions times k;
        a session's own allowance stays one person's."""
        live = max(1, round(self.live_sessions * k))
        return replace(self, client_pages=self.client_pages.times(k), client_polls=self.client_polls.times(k),
                       live_sessions=live, max_sessions=max(self.max_sessions, live))


def from_env(text: str | None = None) -> Limits | None:
    """The limits LLMVIZ_CLIENT_BUDGET asks for (`text` if given): unset or empty, the defaults; a number k from
    0.01 to 100, the defaults for k classes behind one address (Limits.classes); `off`, None (no budget: a lab's own
    machine, a bench's "before"). Anything else is a ConfigError, never a silent default."""
    text = (os.environ.get(ENV, "") if text is None else text).strip()
    if not text:
        return Limits()
    if text.lower() == "off":
        return None
    try:
        k = float(text)
    except ValueError:
        k = math.nan
    if not 0.01 <= k <= 100:  # NaN and infinities too
        raise ConfigError(f"{ENV}: {text!r} is neither a number of classes behind one address (0.01-100) nor 'off'")
    return Limits().classes(k)


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    reason: str = ""  # SESSION, CLIENT or SESSIONS when refused
    # allowed: how long the run waits for its tokens first (0 unless queued); refused: when it would have been
    # allowed (for SESSIONS: when the address's oldest live session lapses)
    wait_s: float = 0.0


@dataclass
class _Bucket:
    tokens: float
    stamp: float

    def level(self, a: Allowance, now: float) -> float:
        """The tokens now (below 0 while runs are queued on tokens to come)."""
        return min(float(a.burst), self.tokens + max(0.0, now - self.stamp) * a.per_s)

    def wait(self, a: Allowance, now: float) -> float:
        """0 when a token is there; else the seconds until one is."""
        return max(0.0, (1.0 - self.level(a, now)) / a.per_s)

    def take(self, a: Allowance, now: float) -> None:
        self.tokens, self.stamp = self.level(a, now) - 1.0, now


@dataclass
class _Session:
    client: str
    seen: float
    buckets: dict[str, _Bucket] = field(default_factory=dict)


@dataclass
class _Client:
    seen: float
    buckets: dict[str, _Bucket] = field(default_factory=dict)
    live: OrderedDict[str, float] = field(default_factory=OrderedDict)  # session -> last seen, oldest first


class Budget:
    """The registry of one process: every session's and client's buckets, under one lock (Streamlit runs each
    browser session in a thread of its own). `clock`: seconds, never going back (time.monotonic; a test's own)."""

    def __init__(self, limits: Limits | None = None, clock: Callable[[], float] = time.monotonic):
        self.limits = limits or Limits()
        self._clock = clock
        self._lock = threading.Lock()
        self._sessions: OrderedDict[str, _Session] = OrderedDict()  # least recently seen first
        self._clients: OrderedDict[str, _Client] = OrderedDict()

    def spend(self, client: str, session: str, kind: str = PAGE, queue_s: float = 0.0) -> Verdict:
        """One run of `kind` by `session` of `client`. Allowed when a token of each of its buckets is there, or will
        be within `queue_s`: the tokens are taken now (a bucket may go below empty by what it refills in queue_s),
        and the verdict's wait_s says how long the run must wait for them, so that runs queued one after another
        keep to the rate. Refused otherwise: nothing taken, the reason and the wait."""
        if kind not in KINDS:
            raise ValueError(f"a run's kind is one of {KINDS}, not {kind!r}")
        if not 0.0 <= queue_s < math.inf:
            raise ValueError(f"queue_s is a number of seconds, not {queue_s!r}")
        with self._lock:
            now = self._clock()
            self._forget(now)
            c, s = self._clients.get(client), self._sessions.get(session)
            if s is not None and s.client != client:  # the same session from another address: admitted afresh there
                self._drop_session(session)
                s = None
            if c is not None:
                self._lapse(c, now)
                # a new session (or one back after live_s unseen) joins the live ones only while there is room
                if session not in c.live and len(c.live) >= self.limits.live_sessions:
                    oldest = next(iter(c.live.values()))
                    return Verdict(False, SESSIONS, max(0.0, oldest + self.limits.live_s - now))
            c = c or self._new_client(client, now)
            s = s or self._new_session(session, client, now)
            self._touch(c, s, client, session, now)
            a_session, a_client = self.limits.allowances()[SESSION, kind], self.limits.allowances()[CLIENT, kind]
            mine = s.buckets.setdefault(kind, _Bucket(float(a_session.burst), now))
            theirs = c.buckets.setdefault(kind, _Bucket(float(a_client.burst), now))
            wait_mine, wait_theirs = mine.wait(a_session, now), theirs.wait(a_client, now)
            if wait_mine > queue_s:
                return Verdict(False, SESSION, wait_mine)
            if wait_theirs > queue_s:
                return Verdict(False, CLIENT, wait_theirs)
            mine.take(a_session, now)
            theirs.take(a_client, now)
            return Verdict(True, "", max(wait_mine, wait_theirs))

    def live(self, client: str) -> int:
        """The client's live sessions now."""
        with self._lock:
            c = self._clients.get(client)
            if c is None:
                return 0
            self._lapse(c, self._clock())
            return len(c.live)

    def sizes(self) -> tuple[int, int]:
        """(clients, sessions) held now."""
        with self._lock:
            self._forget(self._clock())
            return len(self._clients), len(self._sessions)

    # -- under the lock ---------------------------------------------------------------------------------------
    def _touch(self, c: _Client, s: _Session, client: str, session: str, now: float) -> None:
        c.seen = s.seen = c.live[session] = now
        self._clients.move_to_end(client)
        self._sessions.move_to_end(session)
        c.live.move_to_end(session)

    def _lapse(self, c: _Client, now: float) -> None:
        """Sessions unseen for live_s no longer count as the client's live ones (oldest first: amortised O(1))."""
        while c.live and next(iter(c.live.values())) < now - self.limits.live_s:
            c.live.popitem(last=False)

    def _forget(self, now: float) -> None:
        """Entries idle for forget_s, oldest first (a client is seen whenever one of its sessions is, so its
        sessions are forgotten before it)."""
        cutoff = now - self.limits.forget_s
        while self._sessions and next(iter(self._sessions.values())).seen < cutoff:
            self._drop_session(next(iter(self._sessions)))
        while self._clients and next(iter(self._clients.values())).seen < cutoff:
            self._drop_client(next(iter(self._clients)))

    def _new_session(self, session: str, client: str, now: float) -> _Session:
        while len(self._sessions) >= self.limits.max_sessions:
            self._drop_session(next(iter(self._sessions)))
        s = self._sessions[session] = _Session(client, now)
        return s

    def _new_client(self, client: str, now: float) -> _Client:
        while len(self._clients) >= self.limits.max_clients:
            self._drop_client(next(iter(self._clients)))
        c = self._clients[client] = _Client(now)
        return c

    def _drop_session(self, session: str) -> None:
        s = self._sessions.pop(session)
        c = self._clients.get(s.client)
        if c is not None:
            c.live.pop(session, None)

    def _drop_client(self, client: str) -> None:
        c = self._clients.pop(client)
        for session in c.live:
            self._sessions.pop(session, None)
