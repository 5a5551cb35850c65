"""One driver, three policies (serving/driver.py): static batching, continuous batching and speculative decoding
each plan a step, run it through run_step and log a typed record, with one rule of which steps are recorded and one
timing. A toy policy (shortest-prompt-first, tests/support/toy_shortest_first.py) is added in one file and one call;
static batching runs on the chosen KV layout and speculative decoding on the chosen backend and layout, each with
the tokens every request draws alone."""

import json
from dataclasses import replace

import pytest
import toy_shortest_first as toy

from llmviz.analysis.serving import serving_layout
from llmviz.engine.loading.model import load_model
from llmviz.engine.serving.continuous import ServeConfig
from llmviz.engine.serving.requests import Request, RequestTrace
from llmviz.engine.serving.schedulers import SCHEDULER_CLASSES, serve
from llmviz.engine.serving.speculative import Speculator
from llmviz.engine.session import Session
from llmviz.errors import ConfigError, UnknownNameError
from llmviz.trace.config import SCHEDULERS, EngineConfig, SamplingConfig
from llmviz.trace.schedule import StepRecord

# prompts of 9, 3, 6 and 2 tokens, all at step 0: one slot at a time, so admission order is the whole schedule
TRACE = RequestTrace("toy", tuple(Request(i, 0, tuple(range(5 + i, 5 + i + n)), 3, seed=i)
                                  for i, n in enumerate((9, 3, 6, 2))))


@pytest.fixture(scope="module")
def lm():
    return load_model("llmviz-tiny", device="cpu")


@pytest.fixture
def shortest_first():
    toy.add()
    yield toy.NAME
    toy.remove()


def alone(lm, r: Request) -> list[int]:
    cfg = EngineConfig(device="cpu", capture="off", logit_lens_top_k=0, stop_at_eos=False, sampling=r.sampling,
                       max_seq_len=len(r.prompt_ids) + r.output_len + 1)
    return Session(lm, config=cfg, prompt_ids=[list(r.prompt_ids)], seeds=[r.seed]).generate(r.output_len).output_ids


def admitted(result: dict) -> list[int]:
    """The requests in the order they first held a slot, read from the typed records."""
    order = []
    for record in result["records"]:
        order += [row.request for row in record.rows if row.request not in order]
    return order


def test_a_toy_policy_is_one_file_and_one_call(lm, shortest_first):
    assert shortest_first in SCHEDULERS and shortest_first in SCHEDULER_CLASSES
    config = ServeConfig(slots=1, token_budget=16, block_size=4)
    fifo, toy_run = serve(lm, TRACE, "continuous", config), serve(lm, TRACE, shortest_first, config)
    assert admitted(fifo) == [0, 1, 2, 3] and admitted(toy_run) == [3, 1, 2, 0]  # by prompt length: 2, 3, 6, 9
    assert toy_run["scheduler"] == shortest_first and all(isinstance(r, StepRecord) for r in toy_run["records"])
    for r in TRACE.requests:  # another order, the same tokens: each request draws what it draws alone
        assert toy_run["outputs"][r.id] == fifo["outputs"][r.id] == alone(lm, r)
    # the shortest request's first token comes at step 0 under the toy, after the others' under first-come
    assert toy_run["token_steps"][3][0] == 0 < fifo["token_steps"][3][0]
    assert serving_layout(shortest_first, "contiguous") == "paged"  # its declaration says it needs blocks


def test_the_toy_is_a_choice_of_the_cli_and_goes_away(lm, shortest_first, capsys, tmp_path):
    from llmviz.cli.main import main

    path = tmp_path / "toy.json"
    path.write_text(TRACE.to_json(), encoding="utf-8")
    capsys.readouterr()
    assert main(["serve-sim", "--trace", str(path), "--scheduler", shortest_first, "--slots", "1", "--json",
                 "--device", "cpu"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["scheduler"] == shortest_first and doc["kv_layout"] == "paged" and doc["tokens"] == 12
    assert doc["identical_outputs"] is True
    toy.remove()
    with pytest.raises(UnknownNameError):
        serve(lm, TRACE, shortest_first, ServeConfig(slots=1))
    toy.add()  # the fixture removes it


def test_a_scheduler_must_be_a_policy_named_as_declared():
    from llmviz.engine.serving.schedulers import register_scheduler

    with pytest.raises(ConfigError):
        register_scheduler(toy.DECLARED, dict)
    with pytest.raises(ConfigError):
        register_scheduler(replace(toy.DECLARED, name="other"), toy.ShortestFirst)  # its name is not the class's
    assert toy.NAME not in SCHEDULERS


@pytest.mark.parametrize("scheduler", ["static", "continuous"])
def test_one_rule_records_the_steps_asked_for(lm, scheduler):
    result = serve(lm, TRACE, scheduler, ServeConfig(slots=2, block_size=4, capture="meta", capture_steps=(1, 4)))
    assert sorted(result["steps"]) == [1, 4]
    for index, step in result["steps"].items():
        rows = result["records"][index].rows
        assert step.index == index and step.input_ids.shape[0] == len(rows)  # one row per request the record names
        assert step.kv["seq_ids"] == [row.request for row in rows] or scheduler == "continuous"
    # one timing: an idle step (none here) takes 0 ms, a step that ran a forward pass more
    assert all(r.ms > 0 for r in result["records"] if r.rows)
    off = serve(lm, TRACE, scheduler, ServeConfig(slots=2, block_size=4))
    assert "steps" not in off and off["outputs"] == result["outputs"]


def test_idle_steps_take_no_time_in_either_scheduler(lm):
    late = RequestTrace("late", (Request(0, 3, (5, 6, 7), 2), Request(1, 3, (8, 9), 2)))
    for scheduler in ("static", "continuous"):
        records = serve(lm, late, scheduler, ServeConfig(slots=2, block_size=4))["records"]
        assert [r.ms for r in records[:3]] == [0.0, 0.0, 0.0] and all(not r.rows for r in records[:3])
        assert records[3].rows and records[3].ms > 0


def test_a_static_batch_holds_one_cache_and_a_look_stops_where_asked(lm):
    from llmviz.engine.serving.driver import drive, step_once
    from llmviz.engine.serving.static import StaticBatching

    policy = StaticBatching(lm, TRACE, ServeConfig(slots=2))  # two batches of two, three steps each
    caches = []
    for _ in range(6):
        step_once(policy)
        caches.append(policy.cache)
    assert caches[2] is None and caches[5] is None and caches[0] is caches[1] and caches[3] is not caches[0]
    late = RequestTrace("late", (Request(0, 5, (5, 6, 7), 2),))
    for scheduler in ("static", "continuous"):  # idle until step 5: a look at step 2 runs no engine step
        records = serve(lm, late, scheduler, ServeConfig(slots=2, block_size=4), until=2)["records"]
        assert len(records) >= 3 and not any(r.rows for r in records)
    assert drive(StaticBatching(lm, late, ServeConfig(slots=2)), until=7)["records"][5].rows


@pytest.mark.parametrize("layout", ["paged", "dynamic"])
def test_static_batching_runs_on_the_chosen_layout(lm, layout):
    trace = RequestTrace("mix", tuple(Request(i, 0, tuple(range(7, 7 + 2 + 3 * i)), 2 + i, seed=i) for i in range(3)))
    result = serve(lm, trace, "static", ServeConfig(slots=3, block_size=4, layout=layout, capture="meta"))
    assert result["layout"] == layout and {s.kv["layout"] for s in result["steps"].values()} == {layout}
    for r in trace.requests:
        assert result["outputs"][r.id] == alone(lm, r)
    continuous = serve(lm, trace, "continuous", ServeConfig(slots=3, block_size=4, layout=layout))
    assert continuous["layout"] == "paged" == serving_layout("continuous", layout)  # it needs blocks, and says so
    with pytest.raises(UnknownNameError):
        ServeConfig(layout="ring")  # derived from a window, never chosen by name


@pytest.mark.parametrize("backend, layout", [("eager", "paged"), ("sdpa", "dynamic")])
def test_speculative_decoding_runs_on_the_chosen_backend_and_layout(backend, layout):
    target, draft = load_model("llmviz-tiny", device="cpu"), load_model("llmviz-tiny-draft", device="cpu")
    ids = target.tokenizer.encode("The list of")
    spec = Speculator(target, draft, ids, 3, max_new=10, capture="meta", capture_rounds=(1,), backend=backend,
                      layout=layout)
    result = spec.run()
    cfg = EngineConfig(device="cpu", capture="off", logit_lens_top_k=0, stop_at_eos=False,
                       sampling=SamplingConfig(temperature=0))
    assert result["output_ids"] == Session(target, config=cfg, prompt_ids=[ids]).generate(10).output_ids
    assert result["backend"] == backend and result["layout"] == layout
    step = spec.steps[1]
    assert step.timings["attn_backend"] == backend and step.kv["layout"] == layout
    rounds = result["rounds"]
    assert all(r.draft_ms > 0 and r.verify_ms > 0 for r in rounds) and spec.prefill_ms > 0
    assert sum(len(r.proposed) for r in rounds) == result["proposed"]
