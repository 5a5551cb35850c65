"""Continuous batching over the paged KV cache, as a serving engine schedules it (C9, C15; claim K7).

A policy over the one driver (serving/driver.py); each step reads as plan -> run -> settle:

    plan         arrivals join the waiting queue; running requests that decode take one token each of the
                 step's token budget first, then requests still prefilling take chunks of their prompt
                 (chunked prefill), then waiting requests are admitted while a slot is free and budget is
                 left; if the pool cannot hold the step's new tokens, the most recently admitted request is
                 preempted: its blocks are freed at once and it waits again, to be recomputed (its prompt
                 and the tokens it has drawn prefilled anew), keeping its random stream
    run          one forward pass over every scheduled row, packed (each row its own length, no padding
                 outside attention)
    settle       a row that has fed all its pending tokens draws its next one with its own generator; a
                 request with all its tokens is retired and its blocks freed at once

Every request draws what it draws alone with its seed: its tokens and its random stream never depend on
who shares the batch (the same-tokens rule of the engine's batches).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import torch

from llmviz.engine.kv import make_kv_cache
from llmviz.engine.loading.model import LoadedModel
from llmviz.engine.recording import Recorder
from llmviz.engine.sampling import sample_rows
from llmviz.engine.sequence import Sequence
from llmviz.engine.serving.driver import Clock, Planned, Policy, Recording, drive, step_once
from llmviz.engine.serving.requests import Request, RequestTrace
from llmviz.engine.step_batch import layer_windows
from llmviz.engine.step_loop import NOT_DRAWN, Feed
from llmviz.errors import ConfigError
from llmviz.trace.config import CAPTURE_LEVELS, KV_LAYOUTS, default_max_seq
from llmviz.trace.progress import Progress
from llmviz.trace.schedule import SlotRow, StepRecord

PAGED = "paged"  # the layout continuous batching runs on


@dataclass(frozen=True)
class ServeConfig:
    slots: int = 8  # requests running at once (the batch's rows)
    block_size: int = 16
    pool_blocks: int | None = None  # None: enough for every slot to reach max_seq
    token_budget: int = 256  # tokens fed per step, decode tokens first (chunked prefill takes the rest)
    max_seq: int | None = None  # per request; None: the model's context, capped
    device: str = "auto"
    backend: str = "sdpa"
    layout: str = "contiguous"  # static batching's KV layout; continuous batching always runs on the paged one
    prefix_sharing: bool = False  # requests reuse full blocks another request filled with the same tokens (C22)
    capture: str = "off"  # on: every step padded and recorded as a StepTrace (its hooks at this level)
    capture_steps: tuple = ()  # with capture on: only these steps recorded (the others packed); () = every one

    def __post_init__(self):
        for name in ("slots", "block_size", "token_budget"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be a whole number >= 1, got {value!r}")
        if self.token_budget < self.slots:
            raise ConfigError(f"token_budget ({self.token_budget}) must cover one decode token per slot "
                              f"({self.slots})")
        KV_LAYOUTS.check(self.layout, "layout")
        if self.capture not in CAPTURE_LEVELS:
            raise ConfigError(f"capture must be one of {', '.join(CAPTURE_LEVELS)}, got {self.capture!r}")
        if not isinstance(self.capture_steps, tuple) or not all(isinstance(i, int) and i >= 0
                                                                  for i in self.capture_steps):
            raise ConfigError(f"capture_steps is a tuple of step indices, got {self.capture_steps!r}")
        if self.pool_blocks is not None and (not isinstance(self.pool_blocks, int) or self.pool_blocks < 1):
            raise ConfigError(f"pool_blocks must be >= 1, got {self.pool_blocks}")


@dataclass
class Running:
    request: Request
    seq: Sequence
    slot: int
    admitted_step: int
    first_token_step: int | None = None
    recomputing: bool = False  # preempted: its prompt and drawn tokens are prefilled again before it draws
    token_steps: list = field(default_factory=list)  # the step index of each drawn token

    @property
    def drawn(self) -> int:
        return len(self.seq.ids) - self.seq.prompt_len


class Batching(Policy):
    """A policy that serves a request trace with a ServeConfig (static and continuous batching, and their variants):
    the trace checked against the model's vocabulary, the steps recorded that the config asks for."""

    def __init__(self, lm: LoadedModel, trace: RequestTrace, config: ServeConfig | None = None):
        self.config = config or ServeConfig()
        super().__init__(lm, self.config.capture, self.config.capture_steps)
        self.trace = trace
        trace.check_vocab(lm.cfg.vocab_size)
        self._total, self._drawn = sum(r.output_len for r in trace.requests), 0  # tokens to draw, drawn so far


class ContinuousScheduler(Batching):
    """Continuous batching as a policy over the one driver (serving/driver.py). A subclass that admits waiting
    requests in another order overrides `admission_order` (a shortest-prompt-first toy is one method)."""

    name = "continuous"

    def __init__(self, lm: LoadedModel, trace: RequestTrace, config: ServeConfig | None = None):
        super().__init__(lm, trace, config)
        c = self.config
        context = lm.cfg.max_position_embeddings
        self.max_seq = min(context, c.max_seq) if c.max_seq else default_max_seq(context)
        pool_blocks = c.pool_blocks or c.slots * math.ceil(self.max_seq / c.block_size)
        for r in trace.requests:
            total = len(r.prompt_ids) + r.output_len
            if total > self.max_seq:
                raise ConfigError(f"request {r.id} needs {total} tokens (prompt + output) but a sequence holds "
                                  f"{self.max_seq}")
            if math.ceil(total / c.block_size) > pool_blocks:
                raise ConfigError(f"request {r.id} needs {math.ceil(total / c.block_size)} blocks but the whole "
                                  f"pool has {pool_blocks}: raise pool_blocks or shorten the request")
        # Always the paged layout, whatever layout a page chose: admitting, preempting and retiring requests step
        # by step is block-table work (ServeConfig.layout is static batching's; serving_layout says so).
        self.cache = make_kv_cache(PAGED, lm.cfg, self.max_seq, capacity=c.slots, model_dtype=lm.dtype,
                                   device=lm.device, block_size=c.block_size, pool_blocks=pool_blocks)
        if c.prefix_sharing:
            self.cache.enable_prefix_sharing()
        self.pending = sorted(trace.requests, key=lambda r: (r.arrival_step, r.id))  # not yet arrived
        self.waiting: list[Running] = []
        self.running: list[Running] = []
        self.done: dict[int, Running] = {}
        self.windows = layer_windows(lm.cfg)
        self._recorder = Recorder(lm, self.cache, c.capture, c.backend, 0, self.tokens)

    @property
    def recorder(self) -> Recorder:
        return self._recorder

    @property
    def finished(self) -> bool:
        return not (self.pending or self.waiting or self.running)

    def _arrivals(self, step: int) -> None:
        while self.pending and self.pending[0].arrival_step <= step:
            r = self.pending.pop(0)
            seq = Sequence.start(r.id, list(r.prompt_ids), r.sampling, r.seed, self.lm.device)
            self.waiting.append(Running(r, seq, -1, -1))

    def _pending_tokens(self, run: Running) -> int:
        return len(run.seq.ids) - self.cache.length(run.seq.seq_id)

    def _blocks_needed(self, plan: list[tuple[Running, int]]) -> int:
        bs, need = self.config.block_size, 0
        for run, take in plan:
            sid = run.seq.seq_id
            have = len(self.cache.tables[sid]) if sid in self.cache.tables else 0
            need += max(0, math.ceil((self.cache_len(run) + take) / bs) - have)
        return need

    def cache_len(self, run: Running) -> int:
        return self.cache.length(run.seq.seq_id) if self.cache.holds(run.seq.seq_id) else 0

    def _preempt(self, run: Running) -> None:
        """Free its blocks now; it waits at the front of the queue and is recomputed when readmitted."""
        self.running.remove(run)
        self.cache.free(run.seq.seq_id)
        run.slot = -1
        run.recomputing = True
        self.waiting.insert(0, run)

    def admission_order(self, waiting: list[Running]) -> list[Running]:
        """The order waiting requests are admitted in: first come, first served (a preempted request waits at the
        front). The one method another admission policy overrides."""
        return waiting

    def _schedule(self, step: int) -> tuple[list[tuple[Running, int]], list[int]]:
        budget, plan = self.config.token_budget, []
        ordered = sorted(self.running, key=lambda r: self._pending_tokens(r) > 1)  # decoding rows first
        for run in ordered:
            take = min(self._pending_tokens(run), budget)
            if take:
                plan.append((run, take))
                budget -= take
        self.waiting = list(self.admission_order(self.waiting))
        while budget > 0 and self.waiting and len(self.running) < self.config.slots:
            run = self.waiting[0]
            first = min(len(run.seq.ids), budget)  # what it would feed without a shared prefix
            if self._blocks_needed([*plan, (run, first)]) > self.cache.pool.free_count:
                break  # admitted only when blocks are free (prefix sharing may need fewer; never more)
            self.waiting.pop(0)
            self.cache.add(run.seq.seq_id)
            cached = self.cache.share_prefix(run.seq.seq_id, run.seq.ids)  # 0 unless prefix sharing finds blocks
            run.slot = min(set(range(self.config.slots)) - {r.slot for r in self.running})
            run.admitted_step = step
            self.running.append(run)
            take = min(len(run.seq.ids) - cached, budget)
            plan.append((run, take))
            budget -= take
        preempted = []
        while plan and self._blocks_needed(plan) > self.cache.pool.free_count:
            victim = max(self.running, key=lambda r: (r.admitted_step, r.request.id))
            plan = [(r, k) for r, k in plan if r is not victim]
            self._preempt(victim)
            preempted.append(victim.request.id)
        return plan, preempted

    def plan(self, index: int) -> Planned | None:
        """Arrivals join the queue, the step's rows are scheduled; one forward pass over them, packed: decode tokens
        and prefill chunks end to end, so a chunk beside one-token rows costs its own tokens and no padding (only
        attention sees the rows). A recorded step is padded instead, as a Session's rows are, so its hooks hold one
        row per request."""
        self._arrivals(index)
        plan, self._preempted = self._schedule(index)
        self._plan = plan
        self._kinds = ["decode" if run.drawn and self._pending_tokens(run) == 1 and not run.recomputing else "prefill"
                       for run, _ in plan]
        if not plan:
            return None
        rows = [run.seq.ids[self.cache_len(run):self.cache_len(run) + take] for run, take in plan]
        picked = [i for i, (run, take) in enumerate(plan) if take == self._pending_tokens(run)]  # fed all it had
        self._picked = picked

        def draw(logits: torch.Tensor) -> torch.Tensor:  # [b, V] -> [b], NOT_DRAWN for a row still prefilling
            if len(picked) == len(plan):  # every row draws (a step of decode rows): no copy of the logits
                return sample_rows(logits, [run.seq for run, _ in plan])
            ids = torch.full((len(plan),), NOT_DRAWN, dtype=torch.long, device=logits.device)
            if picked:
                ids[picked] = sample_rows(logits[picked], [plan[i][0].seq for i in picked])
            return ids

        feed = Feed(rows, [run.seq.seq_id for run, _ in plan], self.config.backend, self.windows, self.lm.device,
                    packed=not self.records_step(index))
        return Planned(self.cache, feed, self.lm.model, draw)

    def settle(self, index: int, planned: Planned | None, ran) -> tuple[list[int], list[int]]:
        """The rows that fed all their pending tokens keep what they drew; a request with all its tokens is retired
        and its blocks go back to the pool at once. (drawn, finished) request ids."""
        drawn, finished = [], []
        if ran is None:
            return drawn, finished
        for run, _ in self._plan:
            self.cache.register_prefix(run.seq.seq_id, run.seq.ids)
        tokens = ran.next_ids.tolist()
        for i in self._picked:
            run = self._plan[i][0]
            run.seq.ids.append(int(tokens[i]))
            run.recomputing = False
            run.token_steps.append(index)
            if run.first_token_step is None:
                run.first_token_step = index
            drawn.append(run.request.id)
            if run.drawn >= run.request.output_len:
                self.running.remove(run)
                self.cache.free(run.seq.seq_id)
                self.done[run.request.id] = run
                finished.append(run.request.id)
        return drawn, finished

    def log(self, index: int, planned, settled, clock: Clock) -> StepRecord:
        drawn, finished = settled
        pool = self.cache.pool
        return StepRecord(index, clock.ms, tuple(SlotRow(run.request.id, run.slot, take, kind)
                                                 for (run, take), kind in zip(self._plan, self._kinds, strict=True)),
                          pool.used_count, pool.num_blocks, len(self.waiting), self.cache.shared_blocks,
                          tuple(self._preempted), tuple(finished), tuple(drawn),
                          tuple((run.request.id, tuple(self.cache.tables[run.seq.seq_id])) for run in self.running))

    def recording(self, index: int, ran, settled) -> Recording:
        """Row i is the request `self.records[index].rows[i]` names, as a Session's rows are its sequences."""
        first = self._plan[0][0]
        done = ["max_new_tokens" if run.drawn >= run.request.output_len else "" for run, _ in self._plan]
        return Recording("decode" if set(self._kinds) == {"decode"} else "prefill", ran.logits, ran.next_ids,
                         {**asdict(first.request.sampling), "seed": first.seq.seed}, done)

    def step(self) -> StepRecord:
        """The next step through the driver (a look at the schedule one step at a time)."""
        return step_once(self)

    def idle_steps(self) -> list:
        """When no request runs or waits, the steps until the next arrival as idle records (0 ms, no rows, as static
        batching logs its idle steps) without an engine step each: 1,024 one-token requests spread over 10,000
        steps stepped 10,000 times."""
        if self.waiting or self.running or not self.pending:
            return []
        first, until = len(self.records), self.pending[0].arrival_step
        pool = self.cache.pool
        return [StepRecord(index, 0.0, (), pool.used_count, pool.num_blocks, 0, self.cache.shared_blocks)
                for index in range(first, until)]

    def progress(self, record: StepRecord) -> tuple[float, dict] | None:
        """After a step that drew: the tokens drawn so far (counted as they are drawn: summing every request's tokens
        at every step cost requests x steps) and the token each request drew in it (a request's tokens as they
        come)."""
        self._drawn += len(record.drawn)
        if not record.drawn:
            return None
        runs = {run.request.id: run for run in self.running}
        tokens = {rid: (runs.get(rid) or self.done[rid]).seq.ids[-1] for rid in record.drawn}
        return self._drawn / self._total, {"step": len(self.records), "tokens": tokens}

    def run(self, progress: Progress | None = None, max_steps: int = 100_000, until: int | None = None) -> dict:
        """Steps until every request is done (or step `until` has run: a look inside that step): the driver's."""
        return drive(self, progress, until, max_steps)

    def result(self) -> dict:
        return {"scheduler": self.name, "slots": self.config.slots, "records": self.records,
                "layout": PAGED, "backend": self.config.backend,
                "outputs": {rid: run.seq.ids[run.seq.prompt_len:] for rid, run in sorted(self.done.items())},
                "token_steps": {rid: run.token_steps for rid, run in sorted(self.done.items())},
                "arrival_steps": {r.id: r.arrival_step for r in self.trace.requests},
                "blocks_total": self.cache.pool.num_blocks, "block_size": self.config.block_size,
                "bytes_per_block": self.cache.bytes_per_token() * self.config.block_size,
                **({"steps": self.steps, "tokens": self.tokens} if self.steps else {})}
