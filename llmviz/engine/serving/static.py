"""Static batching, the baseline continuous batching is measured against (C13, C15; claim K7).

Requests are taken in arrival order in batches of `slots`; a batch starts once its last request has
arrived and runs as one padded batch (the engine's Session: the prompts padded to the longest, one
forward pass per step) until its longest request has all its tokens. A request that already has its
tokens keeps its row, computed and thrown away, until the batch ends: the waste continuous batching
removes. Rows draw with their requests' own seeds and settings, so every request's tokens are its own.

At ServeConfig.capture meta or full a batch's steps are recorded as the Session records them, the StepTrace every
page reads, its KV snapshot naming the requests (`seq_ids`) as continuous batching's does; `until` stops
after that step (a look inside it).
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import asdict

from llmviz.engine.kv import make_kv_cache
from llmviz.engine.loading.model import LoadedModel
from llmviz.engine.recording import Recorder
from llmviz.engine.sampling import sample_rows
from llmviz.engine.sequence import Sequence
from llmviz.engine.serving.continuous import Batching, ServeConfig
from llmviz.engine.serving.driver import Clock, Planned, Recording, drive
from llmviz.engine.serving.requests import RequestTrace
from llmviz.engine.step_batch import layer_windows
from llmviz.engine.step_loop import Feed
from llmviz.errors import ConfigError
from llmviz.trace.progress import Progress
from llmviz.trace.schedule import SlotRow, StepRecord


class StaticBatching(Batching):
    """Static batching as a policy over the one driver: every row of the running batch each step, the batch's
    cache of the chosen layout (ServeConfig.layout) made when the batch starts and let go when it ends."""

    name = "static"

    def __init__(self, lm: LoadedModel, trace: RequestTrace, config: ServeConfig | None = None):
        super().__init__(lm, trace, config)
        c = self.config
        for r in trace.requests:
            if len(r.prompt_ids) + r.output_len > lm.cfg.max_position_embeddings:
                raise ConfigError(f"request {r.id} needs {len(r.prompt_ids) + r.output_len} tokens (prompt + "
                                  f"output) but {lm.name} holds {lm.cfg.max_position_embeddings}")
        ordered = sorted(trace.requests, key=lambda r: (r.arrival_step, r.id))
        self.batches = [ordered[i:i + c.slots] for i in range(0, len(ordered), c.slots)]
        self.arrivals = [r.arrival_step for r in ordered]
        self.windows = layer_windows(lm.cfg)
        self.outputs, self.token_steps = {}, {}
        self.started = 0  # requests whose batch has begun
        self.k = 0  # the running batch's step (0: its prefill)
        self.seqs: list[Sequence] = []
        self.cache = None
        self._recorder = None

    @property
    def batch(self) -> list:
        return self.batches[0]

    @property
    def finished(self) -> bool:
        return not self.batches

    @property
    def recorder(self) -> Recorder:
        return self._recorder

    def _waiting(self, index: int) -> int:
        """Arrived, but their batch has not begun: found by bisection, not by counting them all at every idle step."""
        return max(0, bisect_right(self.arrivals, index) - self.started)

    def _begin(self, index: int) -> None:
        """The batch's sequences (each request's own seed and sampling) and its cache, rows named by request id."""
        batch, c, lm = self.batch, self.config, self.lm
        self.started += len(batch)
        self.batch_steps = max(r.output_len for r in batch)
        self.first = index
        max_seq = min(lm.cfg.max_position_embeddings, max(len(r.prompt_ids) for r in batch) + self.batch_steps)
        self._recorder = None  # it held the last batch's cache (for recording that batch's last step)
        self.cache = make_kv_cache(c.layout, lm.cfg, max_seq, capacity=len(batch), model_dtype=lm.dtype,
                                   device=lm.device, block_size=c.block_size)
        self.seqs = [Sequence.start(r.id, list(r.prompt_ids), r.sampling, r.seed, lm.device) for r in batch]
        for seq in self.seqs:
            self.cache.add(seq.seq_id)
        self._recorder = Recorder(lm, self.cache, c.capture, c.backend, 0, self.tokens)

    def prepare(self, index: int) -> None:
        """The batch's cache and sequences when it begins (its last request has arrived), before the step's clock."""
        if self.k == 0 and self.cache is None and index >= max(r.arrival_step for r in self.batch):
            self._begin(index)

    def plan(self, index: int) -> Planned | None:
        """Idle until the batch's last request has arrived; then every row, its prompt first, then one token each
        (a request that has all its tokens keeps computing: the padding continuous batching removes)."""
        if self.cache is None:
            return None
        rows = [s.ids[self.cache.length(s.seq_id):] for s in self.seqs]
        feed = Feed(rows, [s.seq_id for s in self.seqs], self.config.backend, self.windows, self.lm.device)
        return Planned(self.cache, feed, self.lm.model, lambda logits: sample_rows(logits, self.seqs))

    def settle(self, index: int, planned: Planned | None, ran) -> tuple[int, list] | None:
        """Each row keeps its draw; after the batch's last step its outputs are read and its cache let go. (the
        batch's step that ran, the batch), or None for an idle step."""
        if ran is None:
            return None
        for seq, token in zip(self.seqs, ran.next_ids.tolist(), strict=True):
            seq.ids.append(int(token))
        k, batch = self.k, self.batch
        self.k += 1
        if self.k == self.batch_steps:
            self._end()
        return k, batch

    def _read_batch(self, ran: int) -> None:
        """The running batch's outputs and the steps that drew them, after `ran` of its steps."""
        for seq, r in zip(self.seqs, self.batch, strict=True):
            self.outputs[r.id] = seq.ids[seq.prompt_len:][:r.output_len]
            self.token_steps[r.id] = list(range(self.first, self.first + min(r.output_len, ran)))

    def _end(self) -> None:
        self._read_batch(self.k)
        self.batches.pop(0)
        self.k = 0
        self.cache = None  # let go before the next batch's is allocated (one batch's cache at a time)

    def log(self, index: int, planned, settled: tuple[int, list] | None, clock: Clock) -> StepRecord:
        if settled is None:
            return StepRecord(index, 0.0, (), 0, 0, self._waiting(index))
        k, batch = settled
        rows = tuple(SlotRow(r.id, slot, len(r.prompt_ids) if k == 0 else 1,
                             ("prefill" if k == 0 else "decode") if k < r.output_len else "idle")
                     for slot, r in enumerate(batch))
        drawn = tuple(r.id for r in batch if k < r.output_len)
        done = tuple(r.id for r in batch if k == r.output_len - 1)
        return StepRecord(index, clock.ms, rows, 0, 0, self._waiting(index), 0, (), done, drawn)

    def recording(self, index: int, ran, settled: tuple[int, list]) -> Recording:
        """The step as a Session records it, its snapshot naming the requests (the cache's rows are their ids)."""
        k, batch = settled
        seq = self.seqs[0]
        return Recording("prefill" if k == 0 else "decode", ran.logits, ran.next_ids,
                         {**asdict(seq.sampling), "seed": seq.seed},
                         ["max_new_tokens" if k >= r.output_len - 1 else "" for r in batch])

    def progress(self, record: StepRecord) -> tuple[float, dict] | None:
        self._drawn += len(record.drawn)
        return (self._drawn / self._total, {"step": len(self.records)}) if record.drawn else None

    def result(self) -> dict:
        """Every request's tokens and the steps that drew them (fewer where `until` stopped the run mid-batch)."""
        if self.k:  # stopped inside a batch: what it drew so far
            self._read_batch(self.k)
        return {"scheduler": self.name, "slots": self.config.slots, "records": self.records,
                "layout": self.config.layout, "backend": self.config.backend,
                "outputs": dict(sorted(self.outputs.items())), "token_steps": dict(sorted(self.token_steps.items())),
                "arrival_steps": {r.id: r.arrival_step for r in self.trace.requests},
                **({"steps": self.steps, "tokens": self.tokens} if self.config.capture != "off" else {})}


def run_static(lm: LoadedModel, trace: RequestTrace, config: ServeConfig | None = None,
               progress: Progress | None = None, until: int | None = None) -> dict:
    """Static batching through the driver; `until`: stop after that step (a look inside it)."""
    return drive(StaticBatching(lm, trace, config), progress, until)

