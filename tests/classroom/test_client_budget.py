"""The budget per client (llmviz/classroom/client_budget.py) on hand cases with a fake clock:
a burst allowed and the next run refused, the refill after exactly 1/rate seconds; a class of 60 phones behind one
address, each doing what an honest phone does, never refused; 32 sessions hammering from one address held to the
address's burst plus its rate; a session's own cap; the live sessions' cap; memory bounded by forgetting and caps.
The expected counts are worked out by hand from the allowances, not read back from the code's own arithmetic."""

from __future__ import annotations

import heapq
import random

import pytest

from llmviz.classroom.client_budget import (
    CLIENT,
    PAGE,
    POLL,
    SESSION,
    SESSIONS,
    Allowance,
    Budget,
    Limits,
    Verdict,
    from_env,
)
from llmviz.errors import ConfigError

NAT = "203.0.113.7"  # a school's one address


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def budget(**limits) -> tuple[Budget, Clock]:
    clock = Clock()
    return Budget(Limits(**limits), clock=clock), clock


def test_a_burst_is_allowed_the_next_refused_and_one_comes_back_after_exactly_one_over_the_rate():
    b, clock = budget(session_pages=Allowance(3, 2.0))
    assert [b.spend(NAT, "s", PAGE).allowed for _ in range(4)] == [True, True, True, False]
    refused = b.spend(NAT, "s", PAGE)
    assert (refused.allowed, refused.reason, refused.wait_s) == (False, SESSION, 0.5)  # 1 token at 2 a second
    clock.now += 0.25
    assert not b.spend(NAT, "s", PAGE).allowed  # half a token: still no
    clock.now += 0.25  # 0.5 s after the burst, exactly
    assert b.spend(NAT, "s", PAGE).allowed
    assert not b.spend(NAT, "s", PAGE).allowed
    clock.now += 10  # a long pause fills the bucket to its burst, never past it
    assert [b.spend(NAT, "s", PAGE).allowed for _ in range(4)] == [True, True, True, False]


def test_a_run_near_its_token_queues_for_it_and_the_rate_holds():
    """With queue_s, a run whose token comes within it is allowed now and told to wait for it (the tokens are taken
    at once, so the next run queues behind it); one further out is refused and takes nothing."""
    b, clock = budget(session_pages=Allowance(3, 2.0))
    assert [b.spend(NAT, "s", PAGE, queue_s=1.0).wait_s for _ in range(5)] == [0, 0, 0, 0.5, 1.0]
    refused = b.spend(NAT, "s", PAGE, queue_s=1.0)
    assert (refused.allowed, refused.reason, refused.wait_s) == (False, SESSION, 1.5)
    clock.now += 0.5
    assert b.spend(NAT, "s", PAGE, queue_s=1.0) == Verdict(True, "", 1.0)  # the refusal took nothing
    with pytest.raises(ValueError):
        b.spend(NAT, "s", PAGE, queue_s=-1.0)


def test_refused_runs_spend_nothing():
    """A session hammering while refused gets its next run at the same moment as one that waited quietly, and its
    refusals never take its address's tokens."""
    b, clock = budget(session_pages=Allowance(2, 1.0), client_pages=Allowance(3, 1.0))
    assert [b.spend(NAT, "a", PAGE).allowed for _ in range(50)] == [True, True] + [False] * 48
    assert b.spend(NAT, "b", PAGE).allowed  # the address had 3: "a" took 2, its 48 refusals took none
    assert b.spend(NAT, "b", PAGE).reason == CLIENT
    clock.now += 1.0
    assert b.spend(NAT, "a", PAGE).allowed


def test_pages_and_polls_have_their_own_allowances():
    b, _ = budget(session_pages=Allowance(1, 1.0), session_polls=Allowance(2, 1.0))
    assert b.spend(NAT, "s", PAGE).allowed and not b.spend(NAT, "s", PAGE).allowed
    assert b.spend(NAT, "s", POLL).allowed and b.spend(NAT, "s", POLL).allowed  # the page's refusal is not the poll's
    assert not b.spend(NAT, "s", POLL).allowed
    with pytest.raises(ValueError):
        b.spend(NAT, "s", "anything")


def honest_class(seconds: float, tabs: int, step_s: int) -> list[tuple[float, str, str]]:
    """(time, session, kind) of a busy class of 60 phones (`tabs` tabs each) and the projector, for `seconds`:
    - all open the lesson within the first 3 s (a page run each);
    - the teacher moves a step every `step_s` (10 s: 40 steps in under 7 minutes, a fast lesson): the projector's
      page runs, and every tab finds the step at its next poll (every 2 s, each on its own phase) and its page runs
      once;
    - each phone polls every 2 s, the projector every 1 s;
    - each phone's student, once every 30 s at a moment of their own, moves the prediction slider by 5 arrow presses
      within a second (a page run each), or presses a button 5 times: 5 page runs in 1 s."""
    rng = random.Random(47)
    events: list[tuple[float, str, str]] = [(0.0, "projector", PAGE)]
    events += [(t, "projector", POLL) for t in range(1, int(seconds))]
    for phone in range(60):
        for tab in range(tabs):
            name, phase = f"p{phone}t{tab}", rng.uniform(0, 2)
            events.append((rng.uniform(0, 3), name, PAGE))
            polls = [phase + 2 * k for k in range(1, int(seconds / 2))]
            events += [(t, name, POLL) for t in polls]
            for step in range(step_s, int(seconds), step_s):
                events.append((next(t for t in polls if t >= step), name, PAGE))  # the first poll after the step
        start = rng.uniform(0, 30)
        for burst in range(int((seconds - start) // 30)):
            events += [(start + 30 * burst + 0.2 * k, f"p{phone}t0", PAGE) for k in range(5)]
    events += [(float(step), "projector", PAGE) for step in range(step_s, int(seconds), step_s)]
    return sorted(events)


@pytest.mark.parametrize("tabs, step_s", [(1, 10), (2, 20)])
def test_a_class_of_60_behind_one_address_is_never_refused(tabs, step_s):
    """60 phones following a step every 10 s, or each with a second tab (which follows too) and a step every 20 s;
    the slider's bursts, the polls: 16 page runs a second on average, never refused."""
    b, clock = budget()
    events = honest_class(600, tabs, step_s)
    pages = sum(kind == PAGE for _, _, kind in events)
    assert pages / 600 > 15  # a busy class: over 15 page runs a second on average from the one address
    refused = []
    for t, name, kind in events:
        clock.now = 1000.0 + t
        if not (v := b.spend(NAT, name, kind)).allowed:
            refused.append((t, name, kind, v.reason))
    assert refused == []
    assert b.live(NAT) == 60 * tabs + 1


def test_a_class_opening_together_and_following_two_quick_steps_is_never_refused():
    """Every tab of 60 phones x 2 opens within 1 s, and the teacher then moves two steps 2 s apart: 3 page runs a
    tab within 5 s, 360 in all, the whole burst (and 20 a second more)."""
    b, clock = budget()
    rng = random.Random(5)
    events = sorted((t + rng.uniform(0, 1), f"t{i}") for i in range(120) for t in (0.0, 2.0, 4.0))
    refused = []
    for t, name in events:
        clock.now = 1000.0 + t
        if not b.spend(NAT, name, PAGE).allowed:
            refused.append((t, name))
    assert refused == []


def hammer(b: Budget, clock: Clock, sessions: int, seconds: float, every_s: float = 0.01,
           queue_s: float = 0.0) -> dict[str, int]:
    """Each of `sessions` asks for a page run every `every_s` (as fast as a refused run comes back), all from NAT, in
    turn; the runs each was allowed."""
    allowed = dict.fromkeys((f"x{i}" for i in range(sessions)), 0)
    heap = [(0, name) for name in allowed]  # (tick, session): times are tick x every_s, never summed
    while heap:
        tick, name = heapq.heappop(heap)
        clock.now = 1000.0 + tick * every_s
        allowed[name] += b.spend(NAT, name, PAGE, queue_s).allowed
        if (tick + 1) * every_s < seconds:
            heapq.heappush(heap, (tick + 1, name))
    return allowed


def test_32_sessions_hammering_from_one_address_get_the_address_s_rate_and_no_more():
    b, clock = budget()
    allowed = hammer(b, clock, 32, 60.0)
    # the address: its burst of 360 and 20 a second for 60 s (to within the last try's tick), 1,560 in all, where
    # 32 sessions at their own 2.5 a second would have had 32 x (30 + 150) = 5,760
    assert 360 + 20 * 59.9 <= sum(allowed.values()) <= 360 + 20 * 60 + 1
    assert max(allowed.values()) <= 30 + 2.5 * 60 + 1  # and each session within its own allowance
    b, clock = budget()
    queued = hammer(b, clock, 32, 60.0, queue_s=2.0)  # runs queued for tokens up to 2 s ahead: 40 more at most
    assert 360 + 20 * 61.9 <= sum(queued.values()) <= 360 + 20 * 62 + 1


def test_one_session_hammering_gets_its_own_burst_and_rate():
    b, clock = budget()
    runs = hammer(b, clock, 1, 20.0)["x0"]  # its last try at 19.99 s
    assert 30 + int(2.5 * 19.99) - 1 <= runs <= 30 + int(2.5 * 19.99)  # a burst of 30, then one more each 0.4 s
    assert b.spend(NAT, "another", PAGE).allowed  # the address still serves its other sessions


def test_another_address_is_untouched_by_one_that_is_over():
    b, clock = budget()
    hammer(b, clock, 32, 30.0)
    assert not b.spend(NAT, "x0", PAGE).allowed
    assert b.spend("198.51.100.9", "victim", PAGE).allowed


def test_live_sessions_are_capped_per_address_and_a_lapsed_one_makes_room():
    b, clock = budget(live_sessions=3, live_s=60.0)
    for name in "abc":
        assert b.spend(NAT, name, POLL).allowed
        clock.now += 1
    refused = b.spend(NAT, "d", PAGE)
    assert (refused.allowed, refused.reason, refused.wait_s) == (False, SESSIONS, 57.0)  # "a" seen at 1000, now 1003
    assert b.spend(NAT, "a", PAGE).allowed  # a live session goes on
    assert b.spend("198.51.100.9", "d", PAGE).allowed  # another address has its own sessions
    clock.now += 57  # 1060: "b" (seen at 1001) unseen for 59 s, still live
    assert b.spend(NAT, "e", PAGE).reason == SESSIONS
    clock.now += 1.5  # 1061.5: "b" unseen for 60.5 s, no longer live; "c" for 59.5 s
    assert b.spend(NAT, "e", PAGE).allowed
    assert b.live(NAT) == 3  # "c", "a" (seen again at 1003) and "e"


def test_idle_entries_are_forgotten_and_the_registry_is_capped():
    b, clock = budget(forget_s=300.0)
    for i in range(50):
        b.spend(f"198.51.100.{i}", f"s{i}", PAGE)
    assert b.sizes() == (50, 50)
    clock.now += 299
    b.spend(NAT, "late", PAGE)
    assert b.sizes() == (51, 51)
    clock.now += 2  # the first fifty idle for 301 s
    assert b.sizes() == (1, 1)

    b, clock = budget(max_clients=3, max_sessions=240)
    for i in range(5):
        b.spend(f"198.51.100.{i}", f"s{i}", PAGE)
        clock.now += 1
    assert b.sizes() == (3, 3)  # the two least recently seen went, with their sessions


def test_a_session_that_changes_address_counts_at_its_new_one():
    b, _ = budget(live_sessions=1)
    assert b.spend(NAT, "phone", PAGE).allowed
    assert b.spend("198.51.100.9", "phone", PAGE).allowed  # Wi-Fi to mobile data: the same session
    assert b.live(NAT) == 0 and b.live("198.51.100.9") == 1
    assert b.spend(NAT, "tablet", PAGE).allowed  # its old address has room again


def test_limits_are_validated_on_construction():
    for bad in (dict(burst=0, per_s=1.0), dict(burst=1.5, per_s=1.0), dict(burst=3, per_s=0.0),
                dict(burst=3, per_s=float("inf"))):
        with pytest.raises(ConfigError):
            Allowance(**bad)
    with pytest.raises(ConfigError, match="slowest refill"):
        Limits(forget_s=10.0, live_s=5.0)  # the address's 360 at 20 a second take 18 s to refill
    with pytest.raises(ConfigError):
        Limits(live_s=600.0)  # past forget_s
    with pytest.raises(ConfigError):
        Limits(max_sessions=10)  # cannot hold one address's live sessions


def test_the_setting_names_classes_behind_one_address_or_off():
    assert from_env("") == Limits() and from_env("off") is None and from_env(" OFF ") is None
    two = from_env("2")
    assert (two.client_pages, two.live_sessions) == (Allowance(720, 40.0), 480)
    assert two.session_pages == Limits().session_pages  # a person stays one person
    tenth = from_env("0.1")  # 6 phones an address
    assert (tenth.client_pages, tenth.client_polls, tenth.live_sessions) == (Allowance(36, 2.0), Allowance(36, 15.0),
                                                                            24)
    for bad in ("0", "-1", "lots", "nan", "inf", "101", "0.001"):
        with pytest.raises(ConfigError):
            from_env(bad)
