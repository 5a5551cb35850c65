"""One request of a serving run, read out as its own run (llmviz/trace/rows.py): continuous batching at
capture full records padded steps shared by every request; the request's rows, cut out and its prefill chunks
joined, must be the run it has alone in a Session with its seed (the oracle): the same input ids and positions, the
same tokens, the same attention maps (the joined prefill's full causal map included), the same K and V rows (each
layer's hooks and the kv.write record of every layer), the same cache length and bytes. Its RunTrace is one a page
can save, load and check."""

from dataclasses import asdict

import numpy as np
import pytest
from serving_oracle import TRACE, alone, served_run

from llmviz.engine.serving.continuous import ServeConfig
from llmviz.engine.serving.static import run_static
from llmviz.errors import TraceFormatError
from llmviz.trace import hooks
from llmviz.trace.config import EngineConfig
from llmviz.trace.records import load_trace
from llmviz.trace.rows import request_run, request_steps


@pytest.fixture(scope="module")
def served(model_dirs):
    return served_run(str(model_dirs["llama_gqa_rope3"]))


def last_step(scheduler) -> int:
    return scheduler.records[-1].index


def same_run(mine, solo, rid: int, layers: int) -> None:
    """A request's own steps against its run alone: ids, positions, tokens, logits, the first and last layer's
    scores (their mask), probabilities, K and V rows, the kv.write record (its K and V of every layer), its cache's
    length and bytes."""
    assert len(mine) == len(solo.steps)
    assert [s.phase for s in mine] == [s.phase for s in solo.steps]
    assert [s.index for s in mine] == list(range(len(mine)))
    for step, oracle in zip(mine, solo.steps, strict=True):
        np.testing.assert_array_equal(step.input_ids, oracle.input_ids)
        np.testing.assert_array_equal(step.positions, oracle.positions)
        assert int(step.sampled[0]) == int(oracle.sampled[0])
        np.testing.assert_allclose(step.logits, oracle.logits, atol=2e-4, rtol=1e-4)
        for layer in (0, layers - 1):
            probs, want = step.hook(hooks.probs(layer)), oracle.hook(hooks.probs(layer))
            assert probs.shape == want.shape  # [1, h, n, n_k]: its keys only, none of another row's
            np.testing.assert_allclose(probs.array, want.array, atol=1e-5)
            scores, want_scores = step.hook(hooks.scores(layer)).array, oracle.hook(hooks.scores(layer)).array
            np.testing.assert_array_equal(np.isfinite(scores), np.isfinite(want_scores))  # the causal mask
            np.testing.assert_allclose(scores[np.isfinite(scores)], want_scores[np.isfinite(want_scores)], atol=1e-4)
            np.testing.assert_allclose(step.hook(hooks.k(layer)).array, oracle.hook(hooks.k(layer)).array, atol=1e-5)
            values, want_values = step.hook(hooks.v(layer)), oracle.hook(hooks.v(layer))
            assert values.shape == want_values.shape  # [1, kv, n, hd]: its fed tokens' values only
            np.testing.assert_allclose(values.array, want_values.array, atol=1e-5)
        write, want_write = step.hook("kv.write"), oracle.hook("kv.write")
        assert write.shape == want_write.shape and write.nbytes == want_write.nbytes
        # [L, 2, 1, kv, n, hd]: what it wrote into the cache, K (0) and V (1) of every layer, as it wrote alone
        np.testing.assert_allclose(write.array[:, 0], want_write.array[:, 0], atol=1e-5)
        np.testing.assert_allclose(write.array[:, 1], want_write.array[:, 1], atol=1e-5)
        kv = step.kv
        assert kv["seq_len"] == oracle.kv["seq_len"] and kv["bytes_used"] == oracle.kv["bytes_used"]
        assert kv["batch"] == 1 and kv["seq_ids"] == [rid]
        assert kv["bytes_allocated"] == kv["slots_allocated"] * kv["bytes_per_token"]


@pytest.mark.parametrize("rid", [0, 1, 2])
def test_a_requests_own_run_is_its_run_alone(served, rid):
    lm, scheduler = served
    request = TRACE.requests[rid]
    mine = request_steps(scheduler.steps, scheduler.records, rid, last_step(scheduler))
    assert len(mine) == request.output_len  # its prefill (chunks joined), then its decode steps
    same_run(mine, alone(lm, request).trace, rid, lm.cfg.num_layers)
    batched = [scheduler.steps[i].hook(hooks.probs(0)).array for i in scheduler.steps]
    for step in mine:  # its arrays are its own: a view would keep every batched step alive under its run
        assert not any(np.shares_memory(step.hook(hooks.probs(0)).array, b) for b in batched)
        assert not any(np.shares_memory(step.input_ids, s.input_ids) for s in scheduler.steps.values())
    for step in mine:
        kv, size = step.kv, step.kv["block_size"]
        slots = kv["slots_allocated"]
        assert len(kv["block_tables"][0]) * size == slots >= kv["seq_len"] > slots - size  # its blocks, by hand



def test_a_requests_values_tell_it_from_the_others(served):
    """The V check has teeth: a request's decode-step values (one token's, [1, kv, 1, hd]) are another request's run
    alone nowhere within the tolerance same_run allows, in any layer; nor are they its own keys."""
    lm, scheduler = served
    runs = {r.id: (request_steps(scheduler.steps, scheduler.records, r.id, last_step(scheduler)),
                   alone(lm, r).trace) for r in TRACE.requests}
    for rid, (mine, _) in runs.items():
        for other, (_, solo) in runs.items():
            for step, oracle in zip(mine[1:], solo.steps[1:], strict=False):  # decode steps: one token each
                for layer in range(lm.cfg.num_layers):
                    values, want = step.hook(hooks.v(layer)).array, oracle.hook(hooks.v(layer)).array
                    assert values.shape == want.shape == (1, lm.cfg.num_kv_heads, 1, lm.cfg.head_dim)
                    assert np.allclose(values, want, atol=1e-5) == (rid == other), (rid, other, step.index, layer)
                    assert not np.allclose(values, step.hook(hooks.k(layer)).array, atol=1e-3)

@pytest.mark.parametrize("rid", [0, 1, 2])
def test_a_request_of_a_static_batch_is_its_run_alone(served, rid):
    """Static batching records its batches' steps too (a Session's, padded): a request's rows are its run alone, and
    the steps after it finished, where it stays in the pass as padding, are not its own."""
    lm, _ = served
    result = run_static(lm, TRACE, ServeConfig(slots=2, capture="full", backend="eager"))
    request = TRACE.requests[rid]
    mine = request_steps(result["steps"], result["records"], rid, result["records"][-1].index)
    assert len(mine) == request.output_len
    same_run(mine, alone(lm, request).trace, rid, lm.cfg.num_layers)
    batch = [r for r in TRACE.requests if r.id // 2 == rid // 2]  # slots=2: requests 0, 1 then 2
    width = max(len(r.prompt_ids) for r in batch) + max(r.output_len for r in batch)  # its Session's max_seq_len
    assert {s.kv["slots_allocated"] for s in mine} == {width}  # its row of the contiguous cache, by hand
    assert all(s.kv["layout"] == "contiguous" for s in mine)


def test_a_chunked_prompt_is_joined_into_its_prefill(served):
    _, scheduler = served
    chunks = [r for r in scheduler.records for rid, _, _, kind in r.rows if rid == 2 and kind == "prefill"]
    assert len(chunks) == 2  # the budget split request 2's prompt: the join is exercised
    first = chunks[0].index
    early = request_steps(scheduler.steps, scheduler.records, 2, first)  # looked at mid-prompt
    assert len(early) == 1 and early[0].phase == "prefill" and int(early[0].sampled[0]) == -1  # nothing drawn yet
    assert early[0].input_ids.shape[1] == sum(fed for rid, _, fed, _ in chunks[0].rows if rid == 2)


def test_its_run_saves_loads_and_passes_the_checks(served, tmp_path):
    lm, scheduler = served
    request = TRACE.requests[1]
    steps = request_steps(scheduler.steps, scheduler.records, 1, last_step(scheduler))
    cfg = EngineConfig(device="cpu", capture="full", kv_layout="paged", kv_block_size=4, sampling=request.sampling,
                       seed=request.seed, stop_at_eos=False)
    own = {**asdict(request.sampling), "seed": request.seed}
    run = request_run(steps, lm.card(), cfg.to_dict(), request.seed, dict(scheduler.tokens), "request 1", own)
    back = load_trace(run.save(tmp_path))  # trace/check.py reads every field
    assert back.rows == 1 and back.row_output_ids(0) == alone(lm, request).trace.output_ids
    assert back.prompt_ids == list(request.prompt_ids)
    # a batched step records its first row's sampling; the request's run has its own, as its run alone records it
    assert {s.sampling["seed"] for s in scheduler.steps.values()} - {request.seed}
    assert [s.sampling for s in back.steps] == [s.sampling for s in alone(lm, request).trace.steps]


def test_static_batching_records_only_the_steps_asked_for_and_stops_at_until(served):
    """The other steps of a recorded batch run at capture off (Session.set_capture): only the asked step holds
    tensors; `until` ends the run there, its requests' token steps cut to what ran."""
    lm, _ = served
    result = run_static(lm, TRACE, ServeConfig(slots=2, capture="full", capture_steps=(2,), backend="eager"),
                        until=3)
    assert sorted(result["steps"]) == [2] and result["steps"][2].timings["capture"] == "full"
    assert [r.index for r in result["records"]] == [0, 1, 2, 3]  # nothing past `until`
    # the batch of requests 0 and 1 starts once 1 has arrived (step 2): steps 2 and 3 ran
    assert result["token_steps"][0] == [2, 3] and result["token_steps"][1] == [2, 3]
    assert result["outputs"][0] == alone(lm, TRACE.requests[0]).trace.output_ids[:2]  # its tokens so far


def test_a_step_that_was_not_recorded_is_named(served):
    _, scheduler = served
    recorded = {i: s for i, s in scheduler.steps.items() if i != 0}
    with pytest.raises(TraceFormatError, match="step 0, where request 0 ran, was not recorded"):
        request_steps(recorded, scheduler.records, 0, last_step(scheduler))
