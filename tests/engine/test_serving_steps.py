"""A serving step is a StepTrace like a Session's (one step loop, every scheduler records what the pages
read). Continuous batching at capture full records each step padded; row i is the request its StepRecord names
in row i. Each request's rows are checked against the oracle of the engine's same-tokens rule, the same request
run alone in a Session with its seed: the token it drew at each step, that step's logits, its attention row over
its own keys (the last layer's probabilities), the cache's length and blocks for it, and the bytes of a token."""

import numpy as np
import pytest
from serving_oracle import TRACE, alone, served_run

from llmviz.engine.serving.continuous import ContinuousScheduler, ServeConfig
from llmviz.errors import ConfigError
from llmviz.trace import hooks


@pytest.fixture(scope="module")
def served(model_dirs):
    return served_run(str(model_dirs["llama_gqa_rope3"]))


@pytest.mark.parametrize("rid", [0, 1, 2])
def test_a_requests_rows_are_what_it_computes_alone(served, rid):
    lm, scheduler = served
    request = TRACE.requests[rid]
    solo = alone(lm, request)
    layer = lm.cfg.num_layers - 1
    drawn = []
    for index in scheduler.done[rid].token_steps:  # the steps where it drew a token
        record, step = scheduler.records[index], scheduler.steps[index]
        row = [r[0] for r in record.rows].index(rid)  # which row of the step holds it
        k = len(drawn)  # its k-th token: the Session's step k
        oracle = solo.trace.steps[k]
        drawn.append(int(step.sampled[row]))
        np.testing.assert_allclose(step.logits[row], oracle.logits[0], atol=2e-4, rtol=1e-4)
        held = step.kv["seq_lens"][step.kv["seq_ids"].index(rid)]  # the cache's length of its sequence
        table = step.kv["block_tables"][step.kv["seq_ids"].index(rid)]
        n_keys = len(request.prompt_ids) + k  # the keys its last fed token attends to
        last = int(np.flatnonzero(step.input_ids[row] >= 0)[-1])  # its last real column this step
        probs = step.hook(hooks.probs(layer)).array[row, :, last, :n_keys]  # [h, n_keys]
        want = oracle.hook(hooks.probs(layer)).array[0, :, -1, :n_keys]
        np.testing.assert_allclose(probs, want, atol=1e-5)
        assert step.positions[row, last] == n_keys - 1 and held == n_keys
        assert len(table) == -(-held // step.kv["block_size"])  # the blocks its tokens fill, by hand
    assert drawn == solo.trace.output_ids  # its tokens, with its own random stream, whoever shared the step
    last_step = scheduler.steps[scheduler.done[rid].token_steps[-1]]
    per_token = last_step.kv["bytes_per_token"]
    assert per_token == solo.trace.steps[-1].kv["bytes_per_token"]  # one token's K and V, every layer
    assert solo.trace.steps[-1].kv["bytes_used"] == per_token * (len(request.prompt_ids) + request.output_len - 1)


def test_rows_that_draw_nothing_record_minus_one_and_steps_mix_phases(served):
    _, scheduler = served
    kinds = {kind for record in scheduler.records for *_, kind in record.rows}
    assert kinds == {"prefill", "decode"}
    for index, step in scheduler.steps.items():
        record = scheduler.records[index]
        assert [int(x) >= 0 for x in step.sampled] == [rid in record.drawn for rid, *_ in record.rows]
        assert step.phase == ("decode" if {r[3] for r in record.rows} == {"decode"} else "prefill")
        assert step.kv["layout"] == "paged" and step.input_ids.shape[0] == len(record.rows)
    assert set(scheduler.steps) == {r.index for r in scheduler.records if r.rows}  # idle steps record none


def test_capture_off_packs_and_records_no_step(served, model_dirs):
    lm, captured = served
    scheduler = ContinuousScheduler(lm, TRACE, ServeConfig(slots=3, block_size=4, token_budget=12))
    result = scheduler.run()
    assert scheduler.steps == {} and result["outputs"] == {rid: run.seq.ids[run.seq.prompt_len:]
                                                           for rid, run in captured.done.items()}
    with pytest.raises(ConfigError, match="capture must be one of"):
        ServeConfig(capture="everything")
