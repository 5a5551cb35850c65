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

import time
from bisect import bisect_right

from llmviz.engine.lean_steps import lean_step
from llmviz.engine.loading.model import LoadedModel
from llmviz.engine.serving.continuous import ServeConfig
from llmviz.engine.serving.requests import RequestTrace
from llmviz.engine.session import Session
from llmviz.errors import ConfigError
from llmviz.trace.config import EngineConfig
from llmviz.trace.progress import Progress
from llmviz.trace.schedule import SlotRow, StepRecord


def run_static(lm: LoadedModel, trace: RequestTrace, config: ServeConfig | None = None,
               progress: Progress | None = None, until: int | None = None) -> dict:
    config = config or ServeConfig()
    trace.check_vocab(lm.cfg.vocab_size)
    for r in trace.requests:
        if len(r.prompt_ids) + r.output_len > lm.cfg.max_position_embeddings:
            raise ConfigError(f"request {r.id} needs {len(r.prompt_ids) + r.output_len} tokens (prompt + output) "
                              f"but {lm.name} holds {lm.cfg.max_position_embeddings}")
    ordered = sorted(trace.requests, key=lambda r: (r.arrival_step, r.id))
    batches = [ordered[i:i + config.slots] for i in range(0, len(ordered), config.slots)]
    records: list[StepRecord] = []
    outputs, token_steps, recorded, tokens = {}, {}, {}, {}
    total = sum(r.output_len for r in ordered)
    started = 0  # requests whose batch has begun
    arrivals = [r.arrival_step for r in ordered]

    def past() -> bool:  # the step `until` has run: stop there
        return until is not None and len(records) > until

    def waiting() -> int:  # arrived, but their batch has not begun: found by bisection, not by counting them all
        return max(0, bisect_right(arrivals, len(records)) - started)  # at every idle step

    for batch in batches:
        while len(records) < max(r.arrival_step for r in batch) and not past():  # idle until the batch is complete
            records.append(StepRecord(len(records), 0.0, (), 0, 0, waiting()))
        if past():
            break
        started += len(batch)
        longest = max(len(r.prompt_ids) for r in batch)
        steps = max(r.output_len for r in batch)
        first = len(records)
        engine = EngineConfig(device=config.device, attn_backend=config.backend, capture="off", logit_lens_top_k=0,
                              stop_at_eos=False, max_seq_len=min(lm.cfg.max_position_embeddings, longest + steps))
        session = Session(lm, config=engine, prompt_ids=[list(r.prompt_ids) for r in batch],
                          seeds=[r.seed for r in batch])
        for seq, r in zip(session.sequences, batch, strict=True):
            seq.sampling = r.sampling
        for k in range(steps):
            if past():
                break
            recording = config.records(len(records))
            if config.capture != "off":  # only the steps asked for are recorded; the others run at capture off
                session.set_capture(config.capture if recording else "off")
            began = time.perf_counter()
            # Its timed region syncs the device; the wall clock includes recording the step. Unrecorded, no whole
            # logits are kept: a serving run shows tokens and timings only (16 rows of GPT-2's vocab were 3.2 MB).
            step = session.step() if recording else lean_step(session)
            ms = (time.perf_counter() - began) * 1000
            if recording:  # the run's step, its snapshot naming the requests (the Session's rows are its sequences)
                step.index = len(records)
                step.kv = {**step.kv, "seq_ids": [batch[s].id for s in step.kv["seq_ids"]]}
                step.row_finished = ["max_new_tokens" if k >= r.output_len - 1 else "" for r in batch]
                recorded[step.index] = step
            rows = tuple(SlotRow(r.id, slot, len(r.prompt_ids) if k == 0 else 1,
                                 ("prefill" if k == 0 else "decode") if k < r.output_len else "idle")
                         for slot, r in enumerate(batch))
            drawn = tuple(r.id for r in batch if k < r.output_len)
            done = tuple(r.id for r in batch if k == r.output_len - 1)
            records.append(StepRecord(len(records), ms, rows, 0, 0, waiting(), 0, (), done, drawn))
            if progress:
                progress(sum(min(k + 1, r.output_len) for r in batch) / total, "step", {"step": len(records)})
        tokens.update(session.trace.tokens)
        ran = len(records) - first  # all its steps, or fewer where `until` stopped it
        for slot, r in enumerate(batch):
            outputs[r.id] = session.trace.row_output_ids(slot)[:r.output_len]
            token_steps[r.id] = list(range(first, first + min(r.output_len, ran)))
    return {"scheduler": "static", "slots": config.slots, "records": records,
            "outputs": dict(sorted(outputs.items())), "token_steps": dict(sorted(token_steps.items())),
            "arrival_steps": {r.id: r.arrival_step for r in trace.requests},
            **({"steps": recorded, "tokens": tokens} if config.capture != "off" else {})}



def serve(lm: LoadedModel, requests: RequestTrace, scheduler: str, config: ServeConfig,
          progress: Progress | None = None, until: int | None = None) -> dict:
    """A request trace through static or continuous batching: the one entry the app, the CLI and the claims use.
    `until`: stop after that step (a look inside it)."""
    from llmviz.engine.serving.continuous import ContinuousScheduler

    if scheduler == "static":
        return run_static(lm, requests, config, progress, until)
    if scheduler != "continuous":
        raise ConfigError(f"scheduler must be static or continuous, got {scheduler!r}")
    return ContinuousScheduler(lm, requests, config).run(progress, until=until)


def warm_up(lm: LoadedModel, config: ServeConfig) -> None:
    """Two short requests through both schedulers, untimed, so the first timed run pays no one-time costs."""
    from llmviz.engine.serving.requests import Request

    warm = RequestTrace("warm-up", (Request(0, 0, (1, 2, 3, 4), 3), Request(1, 0, (5, 6), 3)))
    for scheduler in ("static", "continuous"):
        serve(lm, warm, scheduler, config)
