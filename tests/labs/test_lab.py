"""The optimization lab's engine side: switch specs, presets, the A/B comparison (C8-C11, C14, C19-C21).

Bytes are checked against the prediction arithmetic (tests/analysis/test_predict.py checks that against
published parameter counts) and against hand-computed sizes; lossless switches must give identical tokens.
"""

import math
from dataclasses import replace

import pytest

from llmviz import service
from llmviz.analysis.lab import table
from llmviz.cli.main import parser
from llmviz.engine.loading.model import load_model
from llmviz.engine.session import Session
from llmviz.errors import ConfigError
from llmviz.labs.compare import CompareConfig, agreement, compare, within_noise
from llmviz.labs.evaluation import teacher_forced_drift
from llmviz.labs.presets import presets
from llmviz.trace.config import EngineConfig, SamplingConfig
from llmviz.trace.switches import SWITCHES, format_spec, lossy_changes, parse_spec

PROMPT = "The quick brown fox"


def test_spec_round_trip_and_errors():
    changes = parse_spec("kv-dtype=fp16, attn=eager,compile,kv-heads=2")
    assert changes == {"kv_dtype": "fp16", "attn_backend": "eager", "compile": True, "kv_heads": 2}
    assert parse_spec(format_spec(changes)) == changes
    assert parse_spec("") == {} and parse_spec("sliding-window=none") == {"sliding_window": None}
    assert lossy_changes(changes) == ["kv-dtype", "kv-heads"]
    assert lossy_changes(parse_spec("kv-dtype=auto,attn=flash,kv-layout=paged")) == []
    for bad, needle in (("kv-dtype=fp17", "not one of"), ("warp=9", "unknown switch"),
                        ("attn=eager,attn=sdpa", "twice"), ("kv-heads=two", "whole number"),
                        ("compile=maybe", "on or off"), ("attn", "needs a value")):
        with pytest.raises(ConfigError, match=needle):
            parse_spec(bad)


def test_every_switch_is_a_cli_flag_and_a_config_field():
    flags = {a.dest for a in parser()._subparsers._group_actions[0].choices["generate"]._actions}
    for switch in SWITCHES.values():
        assert switch.name.replace("-", "_") in flags or switch.field in flags, switch.name
        assert switch.field in EngineConfig.__dataclass_fields__


def test_presets_fit_the_model():
    tiny = {"num_heads": 8, "num_kv_heads": 8, "max_position_embeddings": 512}
    table_ = presets(tiny)
    assert table_["gqa"].b == "kv-heads=2"  # 8 -> 2, as the issue names it
    assert presets({"num_heads": 12, "num_kv_heads": 12, "max_position_embeddings": 2048})["gqa"].b == "kv-heads=3"
    assert presets(tiny, "cuda")["flash"].a == "dtype=fp16,attn=eager"  # CUDA's flash kernel: half precision only
    for p in table_.values():
        parse_spec(p.a), parse_spec(p.b)
        assert parse_spec(p.a) != parse_spec(p.b) or p.name == "none"


def test_compare_config_is_validated():
    for bad in ({"steps": 0}, {"repeats": 99}, {"warmup": 0}, {"b": "kv-dtype=fp99"}, {"layer": -1},
                {"b": f"sliding-window={2**64}"}, {"a": "sliding-window=0"}):  # 2**64: an OverflowError
        with pytest.raises(ConfigError):
            CompareConfig(prompt=PROMPT, **bad)


def test_agreement():
    assert agreement([1, 2, 3], [1, 2, 3]) == {"agreement": 1.0, "first_divergence": None}
    assert agreement([1, 2, 3], [1, 5, 3]) == {"agreement": 2 / 3, "first_divergence": 1}
    assert agreement([1, 2], [1, 2, 3])["first_divergence"] == 2


def run(model, a, b, **kw):
    config = CompareConfig(prompt=PROMPT, a=a, b=b, model=str(model), steps=kw.pop("steps", 6), repeats=1,
                           device="cpu", bandwidth_bytes=64 * 2**20, **kw)
    return compare(config, service.models.load)


def test_lossless_switch_gives_identical_tokens_and_the_predicted_bytes(model_dirs):
    result = run(model_dirs["llama_gqa_rope3"], "kv-layout=contiguous", "kv-layout=paged,kv-block-size=4")
    assert result["outputs"] == {"agreement": 1.0, "first_divergence": None}
    assert result["a"]["output_ids"] == result["b"]["output_ids"] and len(result["a"]["output_ids"]) == 7
    assert result["drift"]["max"] <= 1e-4 and result["drift"]["greedy_agreement"] == 1.0
    b = result["b"]
    cached = result["prompt_tokens"] + 6
    per_token = 2 * 2 * 16 * 4 * 2  # layers x K,V x kv heads x head_dim x fp32 bytes
    assert b["kv_bytes_used"] == cached * per_token
    assert b["kv_bytes_held"] == math.ceil(cached / 4) * 4 * per_token  # whole blocks of 4
    table_ = b["kv"]["block_tables"][0]
    assert len(table_) == math.ceil(cached / 4)
    for row in table(result):  # the arithmetic agrees with the bytes read from the allocated tensors
        if row.what in ("weight_bytes", "kv_used", "kv_held"):
            assert (row.predicted_a, row.predicted_b) == (row.measured_a, row.measured_b), row.what
    assert result["a"]["attention"]["probs"].shape == (result["prompt_tokens"],) * 2


def test_lossy_switches_change_bytes_as_hand_computed(model_dirs):
    folder = model_dirs["llama_gqa_rope3"]  # 4 heads, 2 KV heads, head_dim 16, 2 layers
    half = run(folder, "kv-dtype=fp32", "kv-dtype=fp16")
    assert half["b"]["kv_bytes_used"] * 2 == half["a"]["kv_bytes_used"]
    assert half["b"]["lossy"] == ["kv-dtype"] and 0 < half["drift"]["max"] < 0.05
    gqa = run(folder, "", "kv-heads=1")
    assert gqa["b"]["kv_bytes_used"] * 2 == gqa["a"]["kv_bytes_used"]
    assert gqa["drift"]["max"] > 1e-3  # mean-pooled heads: a different model
    assert gqa["b"]["weight_bytes"] == gqa["a"]["weight_bytes"] - 2 * 2 * 64 * 16 * 4  # 2 layers x k,v x d x hd x 4 B


def test_teacher_forcing_makes_drift_zero_for_the_same_setting(model_dirs):
    result = run(model_dirs["gpt2"], "", "", steps=4)
    assert result["drift"]["max"] == 0.0 and result["outputs"]["agreement"] == 1.0
    assert result["within_noise"] == {"prefill_ms": None, "decode_ms_per_token": None}  # 1 round: no verdict


def test_teacher_forcing_feeds_the_reference_tokens(model_dirs):
    """A diverging pair: B (one pooled KV head) is fed the tokens A drew, not its own."""
    folder = str(model_dirs["llama_gqa_rope3"])
    config = EngineConfig(device="cpu", capture="off", logit_lens_top_k=0, stop_at_eos=False,
                          sampling=SamplingConfig(temperature=0))
    reference = Session(load_model(folder, device="cpu"), PROMPT, config).generate(7)
    pooled = Session(load_model(folder, device="cpu", kv_heads=1), PROMPT, config.with_(kv_heads=1))
    report = teacher_forced_drift(reference, pooled)
    fed = [int(s.input_ids[0, 0]) for s in pooled.trace.steps[1:]]
    drawn_by_a = [int(s.sampled[0]) for s in reference.steps[:-1]]
    assert fed == drawn_by_a and report["steps"] == 7
    own = [int(s.sampled[0]) for s in pooled.trace.steps[:-1]]
    assert own != drawn_by_a  # B alone would have fed other tokens: the forcing is what made them equal
    assert report["max"] > 1e-3 and len(report["greedy_agree"]) == 7


def test_only_the_drifts_reference_keeps_its_whole_logits(model_dirs, monkeypatch):
    """Every timed round kept [1, V] logits per step (20 rounds x 257 steps of GPT-2's vocab: 1 GB); now
    only the last round's A run, the drift's reference, and B's teacher-forced run (the drift itself) keep them."""
    steps, real_step = [], Session.step

    def spy(self):
        steps.append((self.config.capture, real_step(self)))
        return steps[-1][1]

    monkeypatch.setattr(Session, "step", spy)
    config = CompareConfig(prompt=PROMPT, a="", b="kv-dtype=fp16", model=str(model_dirs["gpt2"]), steps=4, repeats=2,
                           warmup=1, device="cpu", bandwidth_bytes=4 * 2**20)
    result = compare(config, service.models.load)
    timed = [s for capture, s in steps if capture == "off"]
    kept = [s for s in timed if s.logits is not None]
    # 3 rounds x 3 runs (A, B, the control A) x 5 steps timed, then B's 5 teacher-forced steps; A's last run (5
    # steps) is the reference
    assert len(timed) == 3 * 3 * 5 + 5 and len(kept) == 2 * 5
    assert all(s.logits is None for capture, s in steps if capture == "meta")  # the largest-activation runs
    assert result["drift"]["steps"] == 5 and 0 < result["drift"]["max"] < 0.05  # the drift still has its logits


def test_the_control_runs_a_again_in_every_timed_round_and_gives_the_noise_floor(model_dirs):
    """Issue 36 (1): A, B and A again in each of 3 timed rounds; the floor is A's time over its second run's, minus
    1, per round: its value the median of those 3 ratios, by hand; three rounds leave no interval."""
    import statistics

    config = CompareConfig(prompt=PROMPT, a="", b="kv-dtype=fp16", model=str(model_dirs["gpt2"]), steps=3, repeats=3,
                           device="cpu", bandwidth_bytes=4 * 2**20)
    result = compare(config, service.models.load)
    control = result["control"]
    for key in ("prefill_ms", "decode_ms_per_token"):
        a, again = result["a"][key]["all"], control[key]["all"]
        assert len(again) == 3 and all(ms > 0 for ms in again)
        floor = control["noise_floor"][key]
        assert floor["value"] == pytest.approx(statistics.median(x / y - 1 for x, y in zip(a, again, strict=True)))
        assert floor["low"] is None and floor["high"] is None and floor["rounds"] == 3
        assert floor["per_round"] == pytest.approx([x / y - 1 for x, y in zip(a, again, strict=True)])
    assert "control" not in compare(replace(config, control=False, repeats=1), service.models.load)


def test_within_noise_reads_the_paired_interval():
    """Issue 36: by the one statistics rule, B/A per round (paired; each list twice: six rounds, the fewest with an
    interval): 11.5/10, 12/11, 12.5/12 -> x1.15, x1.09, x1.04, all slower: beyond noise, though the sides' own
    spreads overlap; 9/10, 12/11, 12/12 reach both sides of x1."""
    def side(*ms):
        ms = ms * 2
        return {k: {"median": sorted(ms)[len(ms) // 2], "min": min(ms), "max": max(ms), "all": list(ms)}
                for k in ("prefill_ms", "decode_ms_per_token")}
    assert within_noise(side(10, 11, 12), side(11.5, 12, 12.5)) == {"prefill_ms": False, "decode_ms_per_token": False}
    assert within_noise(side(10, 11, 12), side(9, 12, 12))["decode_ms_per_token"] is True
    assert within_noise(side(10, 10.1, 10.2), side(12, 12.1, 12.2))["decode_ms_per_token"] is False
    assert within_noise(side(10, 10.1, 10.2), side(12, 12.1))["decode_ms_per_token"] is None  # 5 rounds: no interval


def test_eager_materializes_the_score_matrix_and_sdpa_does_not(model_dirs):
    folder = model_dirs["llama_gqa_rope3"]
    prompt = " ".join(["fox"] * 40)
    config = CompareConfig(prompt=prompt, a="attn=eager", b="attn=sdpa", model=str(folder), steps=2, repeats=1,
                           device="cpu", bandwidth_bytes=64 * 2**20)
    result = compare(config, service.models.load)
    n = result["prompt_tokens"]
    eager, sdpa = result["a"]["largest_activation"], result["b"]["largest_activation"]
    assert eager["bytes"] == 4 * n * n * 4 and eager["hook"].endswith(("scores", "probs"))  # [1, h, n, n] fp32
    assert sdpa["bytes"] < eager["bytes"]
    assert result["b"]["attention"]["recomputed"] and not result["a"]["attention"]["recomputed"]
    assert result["drift"]["max"] <= 1e-4


def test_force_last_feeds_the_given_token(model_dirs):
    lm = load_model(str(model_dirs["gpt2"]), device="cpu")
    session = Session(lm, PROMPT, EngineConfig(device="cpu"))
    session.step()
    session.force_last([7])
    step = session.step()
    assert int(step.input_ids[0, 0]) == 7
    with pytest.raises(ConfigError):
        session.force_last([1, 2])


def test_a_run_cut_short_by_the_cache_reports_the_steps_it_ran(model_dirs):
    folder = model_dirs["llama_gqa_rope3"]
    n = len(load_model(str(folder), device="cpu").tokenizer.encode(PROMPT))
    config = CompareConfig(prompt=PROMPT, b="kv-layout=paged", model=str(folder), steps=10, repeats=1, device="cpu",
                           max_seq_len=n + 4, bandwidth_bytes=64 * 2**20)
    result = compare(config, service.models.load)
    assert result["steps_asked"] == 10 and result["steps"] == 4  # the cache holds the prompt + 4 tokens
    kv_used = next(r for r in table(result) if r.what == "kv_used")
    assert kv_used.predicted_a == kv_used.measured_a == (n + 4) * 2 * 2 * 16 * 4 * 2  # full


def test_perplexity_counts_the_sliding_window(model_dirs):
    from llmviz.labs.evaluation import engine_perplexity

    lm = load_model(str(model_dirs["llama_gqa_rope3"]), device="cpu")
    ids = list(range(1, 200))
    full, windowed = engine_perplexity(lm, ids), engine_perplexity(lm, ids, window=4)
    assert abs(full - windowed) > 1e-3 * full


def test_the_block_sparse_preset_costs_perplexity_measured_on_held_out_text():
    """Issue 22 (C20): side A's held-out perplexity is the card's (transformers computed it); the block-sparse
    side's, the same text through the same cache with the pattern applied, is higher."""
    import json

    from llmviz.paths import ASSETS

    p = presets({"num_heads": 8, "num_kv_heads": 8, "max_position_embeddings": 512})["block-sparse"]
    result = run("llmviz-tiny", p.a, p.b, steps=2, perplexity=True)
    card = json.loads((ASSETS / "llmviz-tiny" / "card.json").read_text(encoding="utf-8"))
    assert result["a"]["perplexity"] == pytest.approx(card["heldout_perplexity"], rel=1e-3)
    assert result["b"]["perplexity"] > 1.05 * result["a"]["perplexity"]
