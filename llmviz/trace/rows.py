"""One request's own run, read out of a batched run's recorded steps (every scheduler records the StepTrace
the pages read, so a request of a serving run opens in the Decode and Prefill views).

A batched serving step (continuous or static batching) is recorded padded: row i is the request its StepRecord
names in row i, its fed tokens left-aligned in columns 0..fed-1 (pads after them), and key slot s of its attention
holds position s; a row of a finished request that static batching keeps in the pass ("idle") is not the request's.
So a row comes out as a one-row step by cutting every array along its declared dimensions (llmviz/trace/hooks.py):
`b` to the row, `n` to its fed columns, `n_k` to the keys it may see (positions up to its last fed one). A prompt
fed in chunks over several steps is joined into one prefill step: its queries concatenated along `n`, an earlier
chunk's scores and probabilities padded on the keys it could not see yet (-inf and 0, where a one-shot prefill's
causal mask puts them), so the joined step is the prefill the request would have had alone. The KV snapshot becomes
the request's: its length, and its blocks (a paged pool; the pool's own num_blocks, blocks_free, bytes_held stay)
or its row's share (a contiguous cache). The step's timings stay the batched step's (every row shared them). No
torch.
"""

from __future__ import annotations

from dataclasses import replace
from math import isfinite, prod

import numpy as np

from llmviz.errors import TraceFormatError
from llmviz.trace.hooks import declared_point
from llmviz.trace.records import HookRecord, RunTrace, StepTrace
from llmviz.trace.schedule import step_record

JOIN_FILL = {"scores": -np.inf, "probs": 0.0}  # an earlier chunk's keys it could not see yet, as a causal mask has them


def _norm(array: np.ndarray | None) -> float | None:
    """The L2 norm of the whole array, None where it is not finite (a masked score map): as the engine records it."""
    if array is None:
        return None
    value = float(np.linalg.norm(array))
    return value if isfinite(value) else None


def _cut_record(record: HookRecord, cut: dict) -> HookRecord:
    """The record along its declared dimensions, each dimension named in `cut` cut to its slice."""
    dims = declared_point(record.name).dims
    index = tuple(cut.get(d, slice(None)) for d in dims)
    shape = [len(range(*index[i].indices(n))) for i, n in enumerate(record.shape)]
    # copies, not views: a view would keep the whole batched array alive under the request's run (and its budget)
    array = None if record.array is None else record.array[index].copy()
    norms = None if record.row_norms is None else record.row_norms[index[:-1]].copy()
    nbytes = record.nbytes // prod(record.shape) * prod(shape) if prod(record.shape) else 0
    return replace(record, shape=shape, nbytes=nbytes, norm=_norm(array), array=array, row_norms=norms)


def _row_kv(kv: dict, seq_id: int, keys: int) -> dict:
    """The snapshot as the request's: its length and blocks (a request that finished in this step was freed: it
    held the keys it read)."""
    at = kv["seq_ids"].index(seq_id) if seq_id in kv.get("seq_ids", ()) else None
    held = kv["seq_lens"][at] if at is not None else keys
    out = {**kv, "batch": 1, "seq_len": held, "seq_lens": [held], "seq_ids": [seq_id],
           "bytes_used": held * kv["bytes_per_token"]}
    if "block_tables" in kv:  # a paged pool: the blocks it holds
        size = kv["block_size"]
        table = list(kv["block_tables"][at]) if at is not None else []
        slots = (len(table) if at is not None else -(-held // size)) * size
        out["block_tables"] = [table]
    else:  # a cache of one region per row (static batching's contiguous one): its row's share
        slots = kv.get("slots_allocated", kv["max_seq"] * kv["batch"]) // max(1, kv["batch"])
        out.pop("rows", None)
        out["capacity"] = 1
    out.update(slots_allocated=slots, wasted_slots=slots - held, bytes_allocated=slots * kv["bytes_per_token"])
    return out


def one_row(step: StepTrace, row: int, seq_id: int) -> StepTrace:
    """Row `row` of a padded batched step (the sequence `seq_id` of its KV snapshot) as a one-row step."""
    real = np.flatnonzero(step.input_ids[row] >= 0)  # [fed] its columns: left-aligned, pads after them
    if not len(real):
        raise TraceFormatError(f"row {row} of step {step.index} fed no token")
    fed = int(real[-1]) + 1
    keys = int(step.positions[row, real[-1]]) + 1  # the key slots it may see: slot s holds position s
    cut = {"b": slice(row, row + 1), "n": slice(0, fed), "n_k": slice(0, keys)}

    def rows(a: np.ndarray | None, axis: int = 0) -> np.ndarray | None:  # the row of [b, ...] ([L, b, k]), a copy
        return None if a is None else np.take(a, [row], axis=axis)

    return replace(step, input_ids=rows(step.input_ids)[:, :fed], positions=rows(step.positions)[:, :fed],
                   sampled=rows(step.sampled), logits=rows(step.logits), topk_ids=rows(step.topk_ids),
                   topk_logits=rows(step.topk_logits), logsumexp=rows(step.logsumexp),
                   lens_ids=rows(step.lens_ids, 1), lens_probs=rows(step.lens_probs, 1),
                   hooks=[_cut_record(r, cut) for r in step.hooks], kv=_row_kv(step.kv, seq_id, keys),
                   row_finished=step.row_finished[row:row + 1])


def _join_record(parts: list[HookRecord]) -> HookRecord:
    """One hook's records of consecutive chunks joined along `n`, shorter key axes padded (JOIN_FILL)."""
    first = parts[0]
    dims = declared_point(first.name).dims
    if "n" not in dims:  # what only the last chunk's last token has (logits, sample, final_norm)
        return parts[-1]
    axis = dims.index("n")
    arrays, norms = [p.array for p in parts], [p.row_norms for p in parts]
    if "n_k" in dims:
        width, k = max(p.shape[dims.index("n_k")] for p in parts), dims.index("n_k")
        fill = JOIN_FILL.get(first.name.rsplit(".", 1)[-1], 0.0)
        arrays = [None if a is None else np.pad(a, [(0, width - a.shape[k]) if i == k else (0, 0)
                                                    for i in range(a.ndim)], constant_values=fill) for a in arrays]
    array = None if any(a is None for a in arrays) else np.concatenate(arrays, axis=axis)
    row_norms = None if any(n is None for n in norms) else np.concatenate(norms, axis=axis)
    shape = list(array.shape) if array is not None else [sum(p.shape[axis] for p in parts) if i == axis else n
                                                         for i, n in enumerate(parts[-1].shape)]
    per_element = first.nbytes // prod(first.shape) if prod(first.shape) else 0
    return replace(first, shape=shape, nbytes=per_element * prod(shape), array=array, row_norms=row_norms,
                   norm=_norm(array))


def join_prefill(chunks: list[StepTrace]) -> StepTrace:
    """A prompt's prefill chunks (one-row steps, in order) as one prefill step; the last chunk's draw and snapshot."""
    if len(chunks) == 1:
        return chunks[0]
    last = chunks[-1]
    names = [r.name for r in last.hooks]
    hooks = [_join_record([c.hook(name) for c in chunks]) for name in names]
    spans: dict = {}
    for c in chunks:
        for name, ms in c.timings.get("spans_ms", {}).items():
            spans[name] = spans.get(name, 0.0) + ms
    return replace(last, input_ids=np.concatenate([c.input_ids for c in chunks], axis=1),
                   positions=np.concatenate([c.positions for c in chunks], axis=1), hooks=hooks,
                   timings={**last.timings, "spans_ms": spans, "total_ms": sum(spans.values())})


def request_rows(records: list, seq_id: int, until: int) -> list[tuple[int, int, str]]:
    """(step, row, kind) of every step up to `until` where the request ran (`records`: each step's StepRecord, whose
    rows name (request, slot, fed, kind)); a row it only held, finished ("idle"), is not its own."""
    return [(record.index, i, row.kind) for record in map(step_record, records[: until + 1])
            for i, row in enumerate(record.rows) if row.request == seq_id and row.kind != "idle"]


def request_steps(steps: dict, records: list, seq_id: int, until: int) -> list[StepTrace]:
    """The request's own steps up to step `until` of a batched run (`steps`: index -> recorded StepTrace; its rows by
    request_rows): its prefill chunks joined, then one step per decode row, indexed from 0. TraceFormatError when a
    step it was in was not recorded."""
    chunks, out = [], []
    for index, i, kind in request_rows(records, seq_id, until):
        if index not in steps:
            raise TraceFormatError(f"step {index}, where request {seq_id} ran, was not recorded")
        row = one_row(steps[index], i, seq_id)
        if kind == "prefill":
            chunks.append(row)
            if int(row.sampled[0]) < 0:  # more of its prompt to feed
                continue
            row, chunks = join_prefill(chunks), []
        out.append(replace(row, index=len(out), phase="prefill" if not out else "decode"))
    if chunks:
        out.append(replace(join_prefill(chunks), index=len(out), phase="prefill"))
    return out


def request_run(steps: list[StepTrace], model_card: dict, engine_config: dict, seed: int, tokens: dict,
                prompt: str, sampling: dict, schedule: list | None = None) -> RunTrace:
    """The request's steps (request_steps) as the one-row RunTrace the Decode and Prefill pages read, each step with
    the request's own `sampling` and seed (a batched step records its first row's); `schedule`: the scheduler's
    records of the run up to its last step, saved and loaded with the trace."""
    own = [replace(s, sampling=dict(sampling)) for s in steps]
    return RunTrace(model_card=model_card, prompt=prompt, engine_config=engine_config, seed=seed, tokens=tokens,
                    steps=own, prompts=[prompt], schedule=[step_record(r) for r in schedule or ()])
