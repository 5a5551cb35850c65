"""Serving schedulers (C13, C15; K7): every request's tokens equal what it draws alone with its seed, under
continuous batching (chunked prefill, preemption) and static batching; the block pool stays consistent at
every step; bad input is a typed error."""

import random

import pytest
import torch
from kv_invariants import check_block_pool

from llmviz.analysis.serving import metrics
from llmviz.engine.loading.model import load_model
from llmviz.engine.serving.continuous import ContinuousScheduler, ServeConfig
from llmviz.engine.serving.requests import Request, RequestTrace, make_trace, parse_trace
from llmviz.engine.serving.static import run_static
from llmviz.engine.session import Session
from llmviz.errors import ConfigError, NotAllowedError, TraceFormatError
from llmviz.trace.config import EngineConfig, SamplingConfig
from llmviz.trace.schedule import StepRecord


def random_trace(seed: int, n: int = 6, vocab: int = 300, sampled: bool = False) -> RequestTrace:
    rng = random.Random(seed)
    sampling = SamplingConfig(temperature=0.9, top_k=20) if sampled else SamplingConfig(temperature=0)
    return RequestTrace("t", tuple(
        Request(i, rng.randint(0, 4), tuple(rng.randrange(1, vocab) for _ in range(rng.randint(3, 20))),
                rng.randint(1, 9), sampling, seed=100 + i) for i in range(n)))


def alone(lm, r: Request) -> list[int]:
    cfg = EngineConfig(device="cpu", capture="off", logit_lens_top_k=0, stop_at_eos=False, sampling=r.sampling,
                       max_seq_len=len(r.prompt_ids) + r.output_len + 1)
    return Session(lm, config=cfg, prompt_ids=[list(r.prompt_ids)], seeds=[r.seed]).generate(r.output_len).output_ids


@pytest.fixture(scope="module")
def lm(model_dirs):
    return load_model(str(model_dirs["llama_gqa_rope3"]), device="cpu")


@pytest.mark.parametrize("sampled", [False, True])
def test_continuous_equals_each_request_alone(lm, sampled):
    trace = random_trace(1, sampled=sampled)
    # 3 slots, a budget of 8 tokens (prompts arrive in chunks), 6 blocks of 4 tokens (requests get preempted)
    scheduler = ContinuousScheduler(lm, trace, ServeConfig(slots=3, token_budget=8, block_size=4, pool_blocks=8))
    streamed: dict[int, list[int]] = {}  # a request's tokens as they come (a class's phones read them so)
    result = scheduler.run(lambda f, stage, values: [streamed.setdefault(rid, []).append(tok)
                                                     for rid, tok in values["tokens"].items()])
    preempted = [rid for r in result["records"] for rid in r.preempted]
    chunked = [row for r in result["records"] for row in r.rows if row[3] == "prefill" and row[2] < 20]
    assert preempted and chunked  # the schedule exercised both
    for r in trace.requests:
        assert result["outputs"][r.id] == alone(lm, r) == streamed[r.id], r.id  # streamed once, preempted or not
        assert len(result["token_steps"][r.id]) == r.output_len


@pytest.mark.parametrize("seed", range(4))
def test_block_pool_stays_consistent_at_every_step(lm, seed):
    trace = random_trace(seed, n=10)
    rng = random.Random(seed)
    bs = rng.choice([2, 4, 8])
    largest = max(-(-(len(r.prompt_ids) + r.output_len) // bs) for r in trace.requests)  # blocks, rounded up
    config = ServeConfig(slots=rng.randint(2, 5), token_budget=rng.randint(5, 40), block_size=bs,
                         pool_blocks=largest + rng.randint(0, 8))
    scheduler = ContinuousScheduler(lm, trace, config)
    while not scheduler.finished:
        record = scheduler.step()
        check_block_pool(scheduler.cache.pool, scheduler.cache.tables.values())
        assert record.blocks_used == sum(len(t) for t in scheduler.cache.tables.values())
        assert len({row[1] for row in record.rows}) == len(record.rows)  # one request per slot
        assert sum(row[2] for row in record.rows) <= config.token_budget
    assert scheduler.cache.pool.free_count == scheduler.cache.pool.num_blocks  # nothing leaked


def test_static_equals_each_request_alone_and_wastes_slots(lm):
    trace = random_trace(2, n=5, sampled=True)
    result = run_static(lm, trace, ServeConfig(slots=2))
    for r in trace.requests:
        assert result["outputs"][r.id] == alone(lm, r), r.id
    m = metrics(result)
    # a request feeds one row per step while it draws its tokens (its prefill, then output_len - 1 decodes);
    # a batch of 2 runs as many steps as its longest request, after idle steps until its last one arrives
    ordered = sorted(trace.requests, key=lambda r: (r.arrival_step, r.id))
    steps = 0
    for i in range(0, len(ordered), 2):
        batch = ordered[i:i + 2]
        steps = max(steps, max(r.arrival_step for r in batch)) + max(r.output_len for r in batch)
    assert m["steps"] == steps
    assert m["slot_utilization"] == sum(r.output_len for r in trace.requests) / (2 * steps) < 1


def test_metrics_by_hand():
    rows = [(0, 0, 3, "prefill"), (1, 1, 2, "prefill")]
    result = {"slots": 2, "arrival_steps": {0: 0, 1: 1}, "token_steps": {0: [0, 1, 3], 1: [2, 3]},
              "records": [StepRecord(i, ms, tuple(r), 0, 0, 0) for i, (ms, r) in enumerate(
                  [(10.0, rows[:1]), (20.0, [(0, 0, 1, "decode")]), (5.0, [(1, 1, 2, "prefill")]),
                   (5.0, [(0, 0, 1, "decode"), (1, 1, 1, "decode")])])]}
    m = metrics(result)  # step ends: 10, 30, 35, 40 ms
    assert (m["steps"], m["tokens"], m["wall_s"]) == (4, 5, 0.04)
    assert m["ttft_ms"]["p50"] == pytest.approx((10 + 25) / 2)  # request 1 arrives when step 1 begins (10 ms)
    assert m["ttft_steps"]["p50"] == 1.5  # 1 step and 2 steps
    assert m["itl_ms"]["p50"] == 10.0  # gaps 30-10 and 40-30 (request 0), 40-35 (request 1): 20, 10, 5
    assert m["itl_steps"]["p50"] == 1 and m["slot_utilization"] == 5 / 8
    from llmviz.analysis.serving import kv_figures

    fed = kv_figures({**result, "scheduler": "static"})
    assert fed == {"prefill_tokens_fed": 3 + 2, "prefill_steps_ms": 10.0 + 5.0}  # steps 0 and 2 fed prompts


def test_built_in_traces_as_specified():
    ids = list(range(1, 3000))
    mixed = make_trace("mixed", ids)
    assert len(mixed.requests) == 32 and {r.arrival_step for r in mixed.requests} == {0}
    assert all(16 <= len(r.prompt_ids) <= 128 and 1 <= r.output_len <= 256 for r in mixed.requests)
    assert 20 <= sum(r.output_len for r in mixed.requests) / 32 <= 45  # geometric, mean 32
    poisson = make_trace("mixed-poisson", ids)
    arrivals = [r.arrival_step for r in poisson.requests]
    assert arrivals == sorted(arrivals) and 30 <= arrivals[-1] <= 110  # ~2 steps apart
    shared = make_trace("shared-prompt", ids)
    system = shared.requests[0].prompt_ids[:192]
    assert len(shared.requests) == 16 and all(r.prompt_ids[:192] == system for r in shared.requests)
    assert all(16 <= len(r.prompt_ids) - 192 <= 64 and r.output_len == 32 for r in shared.requests)
    assert parse_trace(mixed.to_json()) == mixed


@pytest.mark.parametrize("text,error", [("", TraceFormatError), ("[1, 2]", TraceFormatError),
                                        ('{"requests": []}', TraceFormatError),
                                        ('{"requests": [{"prompt_ids": [1], "output_len": 0}]}', TraceFormatError),
                                        ('{"requests": [{"prompt_ids": "abc", "output_len": 2}]}', TraceFormatError)])
def test_malformed_traces(text, error):
    with pytest.raises(error):
        parse_trace(text)


def test_trace_files_are_read_as_bounded_utf8(tmp_path):
    """An uploaded or named trace file: too big, not UTF-8, truncated JSON, a zip: each a TraceFormatError."""
    import io
    import zipfile

    from llmviz.engine.serving.requests import MAX_TRACE_BYTES, load_trace, parse_trace_bytes

    good = RequestTrace("t", (Request(0, 0, (5, 6, 7), 2),)).to_json().encode()
    assert parse_trace_bytes(good).requests[0].prompt_ids == (5, 6, 7)
    zipped = io.BytesIO()
    with zipfile.ZipFile(zipped, "w") as z:
        z.writestr("trace.json", good)
    cases = {b" " * (MAX_TRACE_BYTES + 1): "at most 2,000,000", b'{"requests": [\xff]}': "not UTF-8",
             good[: len(good) // 2]: "not JSON", zipped.getvalue(): "not UTF-8|not JSON",
             b'{"requests": [{"prompt_ids": [1], "output_len": true}]}': "output_len"}
    for data, needle in cases.items():
        with pytest.raises(TraceFormatError, match=needle):
            parse_trace_bytes(data, "upload.json")
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (MAX_TRACE_BYTES + 1))
    with pytest.raises(TraceFormatError, match="at most"):
        load_trace(str(big))
    (tmp_path / "ok.json").write_bytes(good)
    assert load_trace(str(tmp_path / "ok.json")).requests[0].output_len == 2


def test_impossible_schedules_are_config_errors(lm):
    big = RequestTrace("big", (Request(0, 0, tuple(range(1, 60)), 10),))
    with pytest.raises(ConfigError, match="whole pool"):
        ContinuousScheduler(lm, big, ServeConfig(slots=2, block_size=4, pool_blocks=8))
    with pytest.raises(ConfigError, match="vocabulary"):
        ContinuousScheduler(lm, RequestTrace("v", (Request(0, 0, (5000,), 2),)), ServeConfig())
    with pytest.raises(ConfigError, match="token_budget"):
        ServeConfig(slots=8, token_budget=4)


def test_the_shipped_traces_are_what_make_trace_draws():
    from llmviz.engine.serving.requests import BUILT_IN, load_trace
    from llmviz.labs.evaluation import heldout_ids

    ids = heldout_ids(load_model("llmviz-tiny").tokenizer)
    for kind in BUILT_IN:
        assert load_trace(kind) == make_trace(kind, ids, seed=0), kind
    with pytest.raises(TraceFormatError, match="built-in traces"):
        load_trace("no-such-trace")


def shared_trace(seed: int, n: int = 6, sampled: bool = False) -> RequestTrace:
    rng = random.Random(seed)
    system = tuple(rng.randrange(1, 300) for _ in range(21))  # 5 full blocks of 4, and one token more
    sampling = SamplingConfig(temperature=0.9, top_k=20) if sampled else SamplingConfig(temperature=0)
    users = [tuple(rng.randrange(1, 300) for _ in range(rng.randint(1, 7))) for _ in range(n)]
    return RequestTrace("s", tuple(Request(i, i, system + users[i], rng.randint(2, 6), sampling, seed=50 + i)
                                   for i in range(n)))


@pytest.mark.parametrize("sampled", [False, True])
def test_prefix_sharing_keeps_outputs_and_saves_blocks_and_prefill(lm, sampled):
    trace = shared_trace(3, sampled=sampled)
    runs = {}
    for share in (False, True):
        runs[share] = ContinuousScheduler(lm, trace, ServeConfig(slots=3, token_budget=64, block_size=4,
                                                                 prefix_sharing=share)).run()
    assert runs[True]["outputs"] == runs[False]["outputs"]
    for r in trace.requests:
        assert runs[True]["outputs"][r.id] == alone(lm, r)

    def prefill_fed(result) -> dict:
        fed = dict.fromkeys(result["outputs"], 0)
        for rec in result["records"]:
            for rid, _, take, kind in rec.rows:
                fed[rid] += take if kind == "prefill" else 0
        return fed
    alone_fed, shared_fed = prefill_fed(runs[False]), prefill_fed(runs[True])
    assert all(alone_fed[r.id] == len(r.prompt_ids) for r in trace.requests)  # no preemption here
    # a request admitted while another holds the system prompt's 5 full blocks (20 tokens) skips them
    saved = [alone_fed[rid] - shared_fed[rid] for rid in alone_fed]
    assert set(saved) <= {0, 20} and saved.count(20) >= 2 and saved[0] == 0
    assert max(rec.blocks_shared for rec in runs[True]["records"]) >= 5
    peak = {share: max(rec.blocks_used for rec in runs[share]["records"]) for share in runs}
    assert peak[True] < peak[False]


@pytest.mark.parametrize("seed", range(3))
def test_pool_stays_consistent_with_sharing_and_preemption(lm, seed):
    trace = shared_trace(seed, n=8)
    scheduler = ContinuousScheduler(lm, trace, ServeConfig(slots=4, token_budget=12, block_size=4, pool_blocks=10,
                                                           prefix_sharing=True))
    while not scheduler.finished:
        scheduler.step()
        check_block_pool(scheduler.cache.pool, scheduler.cache.tables.values())  # refs = tables holding a block
    assert scheduler.cache.pool.free_count == scheduler.cache.pool.num_blocks
    assert any(rec.preempted for rec in scheduler.records)
    assert scheduler.result()["outputs"] == ContinuousScheduler(lm, trace, ServeConfig(slots=4, token_budget=12,
                                                                                        block_size=4)).run()["outputs"]


def test_admission_waits_for_free_blocks(lm):
    """A request is admitted only when the pool can hold its first chunk: preemption hits requests that were
    already running (fed tokens in an earlier step), never one admitted in the same step."""
    trace = random_trace(5, n=10)
    scheduler = ContinuousScheduler(lm, trace, ServeConfig(slots=4, token_budget=40, block_size=4, pool_blocks=9))
    fed_before: set = set()
    while not scheduler.finished:
        record = scheduler.step()
        assert set(record.preempted) <= fed_before
        fed_before |= {row[0] for row in record.rows}
    for r in trace.requests:
        assert scheduler.result()["outputs"][r.id] == alone(lm, r)


@pytest.mark.parametrize("request_json,needle", [
    ('{"prompt_ids": [1], "output_len": true}', "output_len"),
    ('{"prompt_ids": [true], "output_len": 2}', "prompt_ids"),
    ('{"prompt_ids": [1], "output_len": 2, "arrival_step": 1000000000}', "arrival_step"),
    ('{"prompt_ids": [1], "output_len": 2, "seed": -1}', "seed"),
])
def test_trace_values_are_checked(request_json, needle):
    with pytest.raises(TraceFormatError, match=needle):
        parse_trace('{"requests": [' + request_json + "]}")


# --- a serving run holds no whole logits; a trace's work is bounded before it runs ----------------
def test_static_batching_keeps_no_whole_logits(lm):
    """Static batching kept every step's [rows, V] logits until its batch ended (16 rows of GPT-2's 50,257 ids:
    3.2 MB a step). Unrecorded (capture off), a step now leaves only its StepRecord: no StepTrace, and no tensor held
    by the policy once its run is over."""
    from llmviz.engine.serving.driver import drive
    from llmviz.engine.serving.static import StaticBatching

    trace = RequestTrace("t", tuple(Request(i, 0, (5, 6, 7 + i), 12, seed=i) for i in range(4)))
    policy = StaticBatching(lm, trace, ServeConfig(slots=4))
    result = drive(policy)
    assert lm.cfg.vocab_size <= 65536  # a vocabulary whose logits a recorded step would keep whole
    assert policy.steps == {} and "steps" not in result and len(result["records"]) == 12
    assert not [name for name, v in vars(policy).items() if isinstance(v, torch.Tensor)]
    assert all(len(result["outputs"][r.id]) == 12 for r in trace.requests)
    assert result["outputs"][1] == alone(lm, trace.requests[1])  # the tokens are unchanged


def test_a_traces_work_is_bounded_before_it_runs(tiny_lm):
    from llmviz import service
    from llmviz.engine.serving.requests import BUILT_IN, PUBLIC_MAX_TRACE_TOKENS, check_work, load_trace, trace_work

    for name in BUILT_IN:  # the built-in traces pass on a public server, at every slot count the page offers
        trace = load_trace(name)
        expected = sum(len(r.prompt_ids) + r.output_len for r in trace.requests)
        assert check_work(trace, 512) == trace_work(trace) == expected <= PUBLIC_MAX_TRACE_TOKENS
        assert service.serving.check_serving_work(tiny_lm, name, public=True) == expected
        for slots in range(1, 17):
            assert expected <= service.serving.check_serving_work(tiny_lm, name, public=True, slots=slots) \
                <= PUBLIC_MAX_TRACE_TOKENS
    # static batching's padding counts: a 512-token request beside fifteen 2-token ones is sixteen 512-token rows
    padded = RequestTrace("pad", (Request(0, 0, (5,), 511), *(Request(i, 0, (5,), 1) for i in range(1, 17))))
    assert trace_work(padded) == 512 + 16 * 2 == trace_work(padded, slots=1)
    assert trace_work(padded, slots=16) == 16 * 512 + 2 and trace_work(padded, slots=8) == 8 * 512 + 8 * 2 + 2
    assert check_work(padded, 512, slots=8) == 4114
    with pytest.raises(NotAllowedError, match="static batching in 16 slots, padding included"):
        service.serving.check_serving_work(tiny_lm, padded, public=True, slots=16)
    # the red team's upload: 1,024 requests x (1 + 2,047) tokens, ~6 hours of one core
    attack = RequestTrace("attack", tuple(Request(i, 0, (5,), 2047) for i in range(1024)))
    with pytest.raises(NotAllowedError, match=r"2,097,152 tokens.* at most 8,192") as caught:
        check_work(attack, 2048)
    assert caught.value.code == "serving_work" and caught.value.params["work"] == 1024 * 2048
    assert check_work(attack, 2048, limit=None) == 1024 * 2048  # a private run: only the length is checked
    at_limit = RequestTrace("edge", tuple(Request(i, 0, (5,) * 8, 248) for i in range(32)))  # 32 x 256 = 8,192
    assert check_work(at_limit, 512) == PUBLIC_MAX_TRACE_TOKENS
    over = RequestTrace("over", (*at_limit.requests, Request(99, 0, (5,), 1)))
    with pytest.raises(NotAllowedError):
        service.serving.check_serving_work(tiny_lm, over, public=True)
    assert service.serving.check_serving_work(tiny_lm, over, public=False) == PUBLIC_MAX_TRACE_TOKENS + 2
    too_long = RequestTrace("long", (Request(0, 0, (5,) * 500, 13),))  # 513 tokens; tiny holds 512
    with pytest.raises(ConfigError, match=r"request 0 .* needs 513 tokens .* holds 512"):
        service.serving.check_serving_work(tiny_lm, too_long, public=False)


@pytest.fixture(scope="module")
def tiny_lm():
    return load_model("llmviz-tiny", device="cpu")


@pytest.mark.parametrize("text,needle", [
    ('{"requests": [{"id": 1e400, "prompt_ids": [1], "output_len": 2}]}', "id must be a whole number, got inf"),
    ('{"requests": [{"prompt_ids": [1], "output_len": 2, "top_k": 1e400}]}', "top_k must be a whole number"),
    ('{"requests": [{"id": true, "prompt_ids": [1], "output_len": 2}]}', "id must be a whole number, got True"),
    ('{"requests": [{"prompt_ids": [1], "output_len": 2, "top_k": "7"}]}', "top_k must be a whole number, got '7'"),
    ('{"requests": [{"prompt_ids": [1], "output_len": 2, "top_p": "1"}]}', "top_p must be a finite number"),
    ('{"requests": [{"prompt_ids": [1], "output_len": 2, "seed": 1, "seed": 2}]}', "'seed' appears twice"),
    ('{"requests": [{"id": -1, "prompt_ids": [1], "output_len": 2}]}', r"id must be .* \[0, 2\*\*63\)"),
    ('{"requests": [{"prompt_ids": [1], "output_len": 2, "temperature": 1' + "0" * 400 + "}]}",
     "temperature must be a finite number, got 1000"),  # an int no float holds, its message cut short
])
def test_the_reader_is_strict(text, needle):
    with pytest.raises(TraceFormatError, match=needle):
        parse_trace(text)


def test_a_byte_order_mark_is_dropped(tmp_path):
    from llmviz.engine.serving.requests import load_trace, parse_trace_bytes

    text = '{"requests": [{"id": 3, "prompt_ids": [1, 2], "output_len": 2, "top_k": 7}]}'
    (tmp_path / "bom.json").write_bytes(b"\xef\xbb\xbf" + text.encode())  # as Notepad saves UTF-8
    for trace in (load_trace(str(tmp_path / "bom.json")), parse_trace_bytes(text.encode("utf-8-sig"))):
        assert [(r.id, r.prompt_ids, r.output_len, r.sampling.top_k) for r in trace.requests] == [(3, (1, 2), 2, 7)]
