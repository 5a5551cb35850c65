"""The model cache keys on what a load depends on, and a public server bounds the weights it holds (settings that
change nothing made new 520 MB copies of gpt2-124m-random, one per session); the heavy measurements' wall-clock
limit and the other public-mode settings."""

from __future__ import annotations

import time

import pytest
from ui_helpers import EMBEDDED_WEIGHTS

from llmviz.errors import ServerBusyError, TimeLimitError
from llmviz.ui.model_cache import HeldModels, load_key
from llmviz.ui.public import MAX_LINK_STEPS, Deadline, Policy

BASE = ("llmviz-tiny", "cpu", "fp32", None, "auto", "none", 32)
LLAMA = {"family": "llama", "stored_kv_heads": 4}


@pytest.mark.parametrize("asked", [
    dict(name=" llmviz-tiny\t"),  # a name padded with whitespace
    dict(quant_group=64),  # quant_group with no quantization
    dict(fused_qkv="off"),  # a Llama checkpoint stores q, k and v split
    dict(kv_heads=4),  # the checkpoint's own KV heads: nothing to pool
    dict(kv_heads=4, fused_qkv="off", quant_group=7, dtype="FP32"),
])
def test_equivalent_settings_are_one_key(asked):
    args = {"name": "llmviz-tiny", "device": "cpu", "dtype": "fp32", **asked}
    assert load_key(**args, **LLAMA) == BASE


def test_different_settings_stay_different():
    keys = {load_key("llmviz-tiny", "cpu", "fp32", **LLAMA),
            load_key("llmviz-tiny", "cpu", "fp16", **LLAMA),
            load_key("llmviz-tiny", "cpu", "fp32", kv_heads=2, **LLAMA),
            load_key("llmviz-tiny", "cpu", "fp32", fused_qkv="on", **LLAMA),
            load_key("llmviz-tiny", "cpu", "fp32", quant="int4", quant_group=32, **LLAMA),
            load_key("llmviz-tiny", "cpu", "fp32", quant="int4", quant_group=64, **LLAMA),
            load_key("llmviz-tiny-draft", "cpu", "fp32", **LLAMA)}
    assert len(keys) == 7
    # int8 scales per output channel: its quant_group changes nothing; GPT-2 stores q/k/v fused: "on" is "auto"
    assert load_key("m", "cpu", "fp32", quant="int8", quant_group=8) == load_key("m", "cpu", "fp32", quant="int8")
    gpt2 = {"family": "gpt2", "stored_kv_heads": 12}
    assert load_key("m", "cpu", "fp32", fused_qkv="on", **gpt2)[4] == "auto"
    assert load_key("m", "cpu", "fp32", fused_qkv="off", **gpt2)[4] == "off"
    assert load_key("m", "cpu", "fp32", kv_heads=4)[3] == 4  # the checkpoint's shape unknown: kept as asked


@pytest.mark.skipif(not EMBEDDED_WEIGHTS.exists(), reason="loads the embedded model")
def test_equivalent_loads_through_state_share_one_copy():
    from llmviz import service
    from llmviz.trace.config import EngineConfig
    from llmviz.ui import state

    a = state.model("llmviz-tiny", "auto", "fp32")
    assert state.model("  llmviz-tiny ", "cpu", "fp32") is a  # the same entry: the device auto picks, the name
    stored = a.cfg.num_kv_heads
    b = state.model("llmviz-tiny", "auto", "fp32", kv_heads=stored, fused_qkv="off", quant_group=64)
    assert b.model is a.model and b.tokenizer is a.tokenizer  # the same weights ...
    assert (b.options["kv_heads"], b.options["fused_qkv"], b.options["quant_group"]) == (stored, "off", 64)
    # ... and a session with the settings as asked runs on it (Session checks them against the options)
    config = EngineConfig(device="auto", kv_heads=stored, fused_qkv="off", quant_group=64, capture="off")
    assert service.runs.start(b, "The list of", config).step().index == 0
    c = state.model("llmviz-tiny", "auto", "fp32", quant="int8")
    assert c.model is not a.model  # really another load


class FakeModel:
    def __init__(self, nbytes: int):
        self.weight_bytes, self.options = nbytes, {"kv_heads": None, "fused_qkv": "auto", "quant": "none",
                                                  "quant_group": 32}


def test_a_public_server_refuses_a_new_load_past_its_budget():
    held, let_go = HeldModels(), []
    big = FakeModel(600_000_000)
    held.add(("a",), big)
    with held.loading(("a",), 500_000_000, lambda: let_go.append(1)):  # already held: no new copy, no check
        pass
    with pytest.raises(ServerBusyError) as err, held.loading(("b",), 500_000_000, lambda: let_go.append(1)):
        pass
    assert err.value.code == "models_full" and err.value.params["held"] == "600 MB" and let_go == [1]
    assert held.get(("a",)) is big
    del big  # the last session on it closed
    with held.loading(("b",), 500_000_000, lambda: None):
        pass
    assert held.bytes_held() == 0 and held.get(("a",)) is None
    with held.loading(("c",), 0, lambda: None):  # the local tool: no bound
        pass


def test_public_mode_settings_and_their_defaults():
    local = Policy.from_env({})
    assert (local.heavy_limit_s, local.model_budget_mb, local.link_steps) == (0, 0, MAX_LINK_STEPS)
    public = Policy.from_env({"LLMVIZ_PUBLIC": "1"})
    assert (public.heavy_limit_s, public.model_budget_mb, public.link_steps) == (120, 2500, 32)
    tuned = Policy.from_env({"LLMVIZ_PUBLIC": "1", "LLMVIZ_HEAVY_LIMIT_S": "5", "LLMVIZ_MODEL_BUDGET_MB": "900",
                             "LLMVIZ_LINK_STEPS": "4", "LLMVIZ_MAX_UPLOAD_MB": "0.5"})
    assert (tuned.heavy_limit_s, tuned.model_budget_bytes, tuned.link_steps, tuned.upload_limit_mb) == \
        (5, 900_000_000, 4, 1)
    bad = Policy.from_env({"LLMVIZ_PUBLIC": "1", "LLMVIZ_HEAVY_LIMIT_S": "inf", "LLMVIZ_LINK_STEPS": "-1"})
    assert (bad.heavy_limit_s, bad.link_steps) == (120, 32) and len(bad.problems) == 2


def test_a_deadline_stops_a_measurement_at_its_next_report():
    seen = []
    never = Deadline.after(0)
    never.watch(seen.append)(0.5)
    assert seen == [0.5] and never.at is None
    soon = Deadline.after(0.01)
    soon.watch(seen.append)(0.1)  # within the limit: reported
    time.sleep(0.02)
    with pytest.raises(TimeLimitError) as err:
        soon.watch(seen.append)(0.2)
    assert err.value.code == "time_limit" and seen == [0.5, 0.1]  # stopped before reporting
    assert Deadline.after(10).watch(None)(1, "stage", {}) is None
