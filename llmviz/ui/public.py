"""Public mode: what the app allows when it is put on a public address.

Turn it on with the environment variable LLMVIZ_PUBLIC=1 (or `LLMVIZ_PUBLIC = "1"` in
.streamlit/secrets.toml). Then:

- models: only the allow-list (LLMVIZ_ALLOWED_MODELS, names separated by commas; by default the embedded
  models and the built-in random shapes): no folder on the server and no other hub id can be named, from
  the model box or from `?model=`;
- uploads: at most LLMVIZ_MAX_UPLOAD_MB megabytes per file (default 8), Streamlit's own upload limit
  (server.maxUploadSize) included, so that a larger file is refused before the server takes it in;
- in every mode, what a session's run holds (its KV cache and its trace's arrays, from the prefill on) stays within
  LLMVIZ_TRACE_BUDGET_MB megabytes (default 64 on a public server, 1,024 in the local tool; llmviz/trace/budget.py):
  each step copies only the tensors that fit, older steps are shed, a cache larger than the budget is refused;
- heavy measurements (comparisons, sweeps, serving simulations): at most LLMVIZ_HEAVY_SLOTS at once on
  the whole server (default 1) and one at a time per browser session; a session waits its turn in order,
  up to LLMVIZ_HEAVY_WAIT_S seconds (default 120), and is then told the server is busy; each runs for at most
  LLMVIZ_HEAVY_LIMIT_S seconds (default 120) of wall-clock time, then stops at its next progress report
  (TimeLimitError) and frees its slot;
- models: the weights alive in the process fill at most LLMVIZ_MODEL_BUDGET_MB megabytes (default 2,500) before
  a new load is refused (llmviz/ui/model_cache.py); equivalent settings share one copy in every mode;
- links: a link opens a run, or the KV layouts page, at most LLMVIZ_LINK_STEPS steps in (default 32; the steps
  beyond are one Next away), and a comparison link waits for its Run button instead of running for every visitor;
- the Decode page leaves out the server's own memory figures (its RSS).

Without it the app is a local tool: any model name or folder, uploads up to Streamlit's own limit, no
queue. The state the queue needs lives in one HeavyGate, created once per server process by the caller
(st.cache_resource) and guarded by its own lock: never a module global.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from llmviz.analysis.claim_effects import rounds_judged
from llmviz.errors import NotAllowedError, ServerBusyError, TimeLimitError
from llmviz.trace.config import EMBEDDED_DRAFT, EMBEDDED_MODEL, RANDOM_MODELS

DEFAULT_MODELS = (EMBEDDED_MODEL, EMBEDDED_DRAFT, "llmviz-tiny-gqa4", "llmviz-tiny-gqa2", *RANDOM_MODELS)
LOCAL_UPLOAD_MB = 200  # Streamlit's own limit (server.maxUploadSize), the local tool's
MAX_LINK_STEPS = 512  # the UI's longest run (settings.MAX_UI_SEQ)
# What one browser session's run may hold, KV cache and trace together. Public: the GPT-2-124M shape's
# cache at the UI's 512 tokens (37.7 MB in fp32) and a prefill's queries, keys and probabilities at ~100 tokens fit;
# ~300 such sessions fill 23 GB. Local: one person's machine, where the KV layouts page's largest run (4 prompts x 512
# slots of the GPT-2 shape: 302 MB in its two preallocated layouts) and the prefill's every attention map at ~500
# tokens of that shape (12 layers x 12 heads x 503^2 x 4 B = 146 MB) fit.
PUBLIC_SESSION_MB, LOCAL_SESSION_MB = 64, 1024


def _number(env: dict, name: str, default: float, low: float, high: float, problems: list) -> float:
    """The setting, or its default (and a line in `problems`) when it is not a number in low..high: a public
    server with a typo in its settings stays strict rather than failing open or not starting."""
    raw = env.get(name)
    if raw is None or str(raw).strip() == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not low <= value <= high:  # also NaN
        problems.append(f"{name}={raw!r} is not a number in {low:g}..{high:g}; using {default:g}")
        return default
    return value


def _size(n: int) -> str:
    return f"{n:,} bytes" if n < 1_000_000 else f"{n / 1e6:,.1f} MB"


@dataclass(frozen=True)
class Policy:
    public: bool = False
    models: tuple = DEFAULT_MODELS
    max_upload_mb: float = LOCAL_UPLOAD_MB
    heavy_slots: int = 0  # 0: no limit (the local tool)
    heavy_wait_s: float = 120.0
    problems: tuple = ()  # settings that were not understood (their defaults apply)
    trace_budget_mb: float = 1024.0  # what one session's run holds, KV cache and trace (llmviz/trace/budget.py)
    heavy_limit_s: float = 0.0  # 0: no limit; else the wall-clock seconds one heavy measurement may run
    model_budget_mb: float = 0.0  # 0: no bound; else the model weights alive before a new load is refused
    link_steps: int = MAX_LINK_STEPS  # the steps a link replays when it opens (the local tool: all of them)

    @property
    def model_budget_bytes(self) -> int:
        return round(self.model_budget_mb * 1e6)

    @property
    def upload_limit_mb(self) -> int:
        """Streamlit's own limit (whole megabytes, at least 1) that lets the app's limit through."""
        return max(1, math.ceil(self.max_upload_mb))

    @property
    def trace_budget_bytes(self) -> int:
        return round(self.trace_budget_mb * 1e6)

    @classmethod
    def from_env(cls, env: dict | None = None) -> Policy:
        env = dict(os.environ if env is None else env)
        problems: list = []
        public = str(env.get("LLMVIZ_PUBLIC", "")).strip().lower() in ("1", "true", "yes", "on")
        default_budget = PUBLIC_SESSION_MB if public else LOCAL_SESSION_MB
        budget = _number(env, "LLMVIZ_TRACE_BUDGET_MB", default_budget, 0.01, 100_000, problems)
        if not public:
            return cls(trace_budget_mb=budget, problems=tuple(problems))
        names = tuple(n.strip() for n in env.get("LLMVIZ_ALLOWED_MODELS", "").split(",") if n.strip())
        return cls(public=True, models=names or DEFAULT_MODELS,
                   max_upload_mb=_number(env, "LLMVIZ_MAX_UPLOAD_MB", 8, 0.001, LOCAL_UPLOAD_MB, problems),
                   heavy_slots=int(_number(env, "LLMVIZ_HEAVY_SLOTS", 1, 1, 64, problems)),
                   heavy_wait_s=_number(env, "LLMVIZ_HEAVY_WAIT_S", 120, 0, 3600, problems),
                   heavy_limit_s=_number(env, "LLMVIZ_HEAVY_LIMIT_S", 120, 0.001, 86_400, problems),
                   model_budget_mb=_number(env, "LLMVIZ_MODEL_BUDGET_MB", 2500, 1, 1_000_000, problems),
                   link_steps=int(_number(env, "LLMVIZ_LINK_STEPS", 32, 0, MAX_LINK_STEPS, problems)),
                   problems=tuple(problems), trace_budget_mb=budget)

    def check_model(self, name: str) -> None:
        """A model name this server may load (public mode: the allow-list, compared exactly)."""
        if self.public and name.strip() not in self.models:
            raise NotAllowedError(f"this public server runs only these models: {', '.join(self.models)}",
                                  code="model_not_allowed", models=", ".join(self.models))

    @property
    def max_upload_bytes(self) -> int:
        return round(self.max_upload_mb * 1e6)

    def check_upload(self, size: int) -> None:
        if size > self.max_upload_bytes:
            held, limit = _size(size), _size(self.max_upload_bytes)
            raise NotAllowedError(f"the file holds {held}; this server takes at most {limit}", code="upload_too_big",
                                  size=held, limit=limit)


@dataclass(frozen=True)
class Deadline:
    """When a heavy measurement must stop (time.monotonic()), or never (None). Enforced cooperatively: each
    measurement reports progress after every step or round, and the watched callback raises TimeLimitError there,
    so the measurement unwinds through its own cleanup and the slot it holds is freed."""

    at: float | None = None
    limit_s: float = 0.0

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        return cls(time.monotonic() + seconds, seconds) if seconds > 0 else cls()

    def check(self) -> None:
        if self.at is not None and time.monotonic() > self.at:
            raise TimeLimitError(f"the measurement ran past this server's limit of {self.limit_s:g} s and was "
                                 "stopped: choose fewer steps, repeats or requests", code="time_limit",
                                 limit=self.limit_s)

    def watch(self, progress: Callable | None) -> Callable:
        """`progress` (any signature; None: report nothing) that first checks the deadline."""

        def watched(*args, **kwargs):
            self.check()
            return None if progress is None else progress(*args, **kwargs)

        return watched


@dataclass
class HeavyGate:
    """At most `slots` heavy measurements at once, granted in arrival order; one per session at a time."""

    slots: int
    lock: threading.Condition = field(default_factory=threading.Condition)
    queue: deque = field(default_factory=deque)  # session ids waiting, first in first out
    running: set = field(default_factory=set)  # session ids holding a slot

    def ahead(self, session: str) -> int:
        with self.lock:
            return list(self.queue).index(session) if session in self.queue else 0

    @contextmanager
    def slot(self, session: str, wait_s: float, on_wait: Callable[[int], None] | None = None) -> Iterator[None]:
        """Hold one slot while the block runs; on_wait(requests ahead) is called about twice a second while
        waiting. ServerBusyError after wait_s, or at once if this session already holds or awaits one."""
        deadline = time.monotonic() + wait_s
        with self.lock:
            if session in self.running or session in self.queue:
                raise ServerBusyError("this session is already running a measurement: wait for it to finish",
                                      code="busy_session")
            self.queue.append(session)
            try:
                while self.queue[0] != session or len(self.running) >= self.slots:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise ServerBusyError(f"the server is running other people's measurements; try again in a "
                                              f"minute (waited {wait_s:.0f} s)", code="busy_server")
                    if on_wait is not None:
                        on_wait(list(self.queue).index(session))
                    self.lock.wait(min(0.5, left))
            finally:
                if session in self.queue and session not in self.running:
                    self.queue.remove(session)
                    self.lock.notify_all()
            self.running.add(session)
        try:
            yield
        finally:
            with self.lock:
                self.running.discard(session)
                self.lock.notify_all()


FRESH_S = 600.0  # a run of a claim this recent is not measured again, and gives way only to a finer one


def finer(new: dict, old: dict | None, now: float | None = None) -> bool:
    """The one rule for which run of a claim's workload every surface shows (the newest, most precise;
    ui/claims/shared_runs.py): `new` rather than `old` (entries: {"claim": judged, "when", "at": epoch seconds,
    "source"}; None: none held). A run older than FRESH_S gives way to any newer one; between fresh ones the one
    judged on more rounds wins, and at equal rounds the newer."""
    if old is None:
        return True
    now = time.time() if now is None else now
    if now - old.get("at", 0.0) >= FRESH_S:
        return new.get("at", 0.0) >= old.get("at", 0.0)
    if now - new.get("at", 0.0) >= FRESH_S:
        return False
    a, b = rounds_judged(new["claim"]), rounds_judged(old["claim"])
    return a > b or (a == b and new.get("at", 0.0) >= old.get("at", 0.0))


class LatestClaims:
    """The server's latest real measurement of each claim: in public mode a class pressing Reveal is
    shown it, labelled with its time and settings, instead of each student queueing behind the one heavy slot.
    One per server process (ui/server.py), guarded by its own lock; it holds judged claims, small dicts."""

    def __init__(self):
        self._lock = threading.Lock()
        self._latest: dict[str, dict] = {}

    def put(self, claim_id: str, entry: dict) -> None:
        with self._lock:
            self._latest[claim_id] = dict(entry)

    def keep(self, claim_id: str, entry: dict) -> bool:
        """Put a run of the claim when it is finer than the one held (`finer`), in one step; whether it was put."""
        with self._lock:
            if not finer(entry, self._latest.get(claim_id)):
                return False
            self._latest[claim_id] = dict(entry)
            return True

    def get(self, claim_id: str) -> dict | None:
        with self._lock:
            entry = self._latest.get(claim_id)
            return dict(entry) if entry is not None else None
