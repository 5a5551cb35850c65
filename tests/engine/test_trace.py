"""Traces round-trip through JSON + npz and load where torch cannot be imported."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from llmviz.engine.config import EngineConfig, SamplingConfig
from llmviz.engine.loading import load_model
from llmviz.engine.session import Session
from llmviz.engine.trace import SCHEMA_VERSION, load_trace
from llmviz.errors import TraceFormatError

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def saved(model_dirs, tmp_path_factory):
    lm = load_model(str(model_dirs["llama_gqa_rope3"]))
    session = Session(lm, "The quick brown fox", EngineConfig(capture="full", sampling=SamplingConfig(temperature=0)))
    trace = session.generate(4)
    folder = trace.save(tmp_path_factory.mktemp("trace"))
    return trace, folder


def test_round_trip_keeps_every_field(saved):
    trace, folder = saved
    back = load_trace(folder)
    assert back.prompt == trace.prompt and back.engine_config == trace.engine_config
    assert back.model_card == json.loads(json.dumps(trace.model_card))
    assert back.output_ids == trace.output_ids and back.prompt_ids == trace.prompt_ids
    assert back.tokens == trace.tokens
    for a, b in zip(trace.steps, back.steps, strict=True):
        for key in ("input_ids", "positions", "sampled", "logits", "topk_ids", "topk_logits", "logsumexp",
                    "lens_ids", "lens_probs"):
            assert np.array_equal(getattr(a, key), getattr(b, key)), key
        assert a.kv == b.kv and a.timings == b.timings and a.memory == b.memory
        assert [r.name for r in a.hooks] == [r.name for r in b.hooks]
        for ra, rb in zip(a.hooks, b.hooks, strict=True):
            assert ra.shape == rb.shape and ra.norm == rb.norm and np.array_equal(ra.array, rb.array)


def test_loads_where_torch_is_blocked(saved):
    _, folder = saved
    script = f"""
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch.") or name.startswith("transformers"):
            raise ImportError("blocked: " + name)
sys.meta_path.insert(0, Block())
sys.path.insert(0, {str(ROOT)!r})
from llmviz.engine.trace import load_trace
t = load_trace({str(folder)!r})
assert "torch" not in sys.modules
print(len(t.steps), t.steps[1].hook("layers.0.q").array.shape, t.output_ids)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    steps, *_ = out.stdout.split()
    assert int(steps) == 4 and "(1, 4, 1, 16)" in out.stdout


def test_damaged_traces_raise_trace_format_error(saved, tmp_path):
    _, folder = saved
    (tmp_path / "trace.json").write_text("{not json")
    (tmp_path / "arrays.npz").write_bytes((folder / "arrays.npz").read_bytes())
    with pytest.raises(TraceFormatError):
        load_trace(tmp_path)
    doc = json.loads((folder / "trace.json").read_text())
    doc["schema_version"] = 999
    (tmp_path / "trace.json").write_text(json.dumps(doc))
    with pytest.raises(TraceFormatError, match="schema"):
        load_trace(tmp_path)
    doc["schema_version"] = 1
    del doc["steps"][0]["index"]
    (tmp_path / "trace.json").write_text(json.dumps(doc))
    with pytest.raises(TraceFormatError):
        load_trace(tmp_path)
    (tmp_path / "arrays.npz").write_bytes(b"garbage")
    with pytest.raises(TraceFormatError):
        load_trace(tmp_path)
    with pytest.raises(TraceFormatError):
        load_trace(tmp_path / "missing")


def test_zip_round_trip_and_bad_archives(saved):
    from llmviz.engine.trace import trace_from_zip, trace_to_zip

    trace, _ = saved
    back = trace_from_zip(trace_to_zip(trace))
    assert back.output_ids == trace.output_ids
    assert np.array_equal(back.steps[2].hook("layers.1.probs").array, trace.steps[2].hook("layers.1.probs").array)
    for bad in (b"", b"not a zip", trace_to_zip(trace)[:100]):
        with pytest.raises(TraceFormatError):
            trace_from_zip(bad)


@pytest.mark.parametrize("damage", ["tokens_list", "no_kv", "no_prefill", "unknown_token", "two_token_decode"])
def test_traces_that_parse_but_make_no_sense_are_refused(saved, tmp_path, damage):
    _, folder = saved
    doc = json.loads((folder / "trace.json").read_text())
    if damage == "tokens_list":
        doc["tokens"] = []
    elif damage == "no_kv":
        doc["steps"][1]["kv"] = {}
    elif damage == "no_prefill":
        doc["steps"] = doc["steps"][1:]
    elif damage == "unknown_token":
        doc["tokens"].pop(next(iter(doc["tokens"])))
    else:
        doc["steps"][1]["phase"] = "prefill"
    (tmp_path / "trace.json").write_text(json.dumps(doc))
    (tmp_path / "arrays.npz").write_bytes((folder / "arrays.npz").read_bytes())
    with pytest.raises(TraceFormatError, match="damaged"):
        load_trace(tmp_path)


def test_a_batch_round_trips_with_its_padding(model_dirs, tmp_path):
    lm = load_model(str(model_dirs["qwen2"]))
    prompts = ["The quick brown fox jumps", "Return"]
    trace = Session(lm, prompts, EngineConfig(capture="meta", sampling=SamplingConfig(temperature=0))).generate(3)
    back = load_trace(trace.save(tmp_path / "batch"))
    assert back.prompts == prompts and back.rows == 2
    assert back.row_prompt_ids(1) == lm.tokenizer.encode("Return")
    pads = len(lm.tokenizer.encode(prompts[0])) - len(back.row_prompt_ids(1))
    assert (back.steps[0].input_ids[1] == -1).sum() == pads
    assert [back.row_output_ids(i) for i in range(2)] == [trace.row_output_ids(i) for i in range(2)]
    assert back.steps[-1].row_finished == ["", ""]


def test_schema_1_traces_still_load(saved, tmp_path):
    """A trace written before batches (schema 1: one prompt, batch_size and threads in its config)."""
    _, folder = saved
    doc = json.loads((folder / "trace.json").read_text())
    doc["schema_version"] = 1
    del doc["prompts"]
    doc["engine_config"] = {**doc["engine_config"], "batch_size": 1, "threads": None}
    for step in doc["steps"]:
        del step["row_finished"]
    old = tmp_path / "v1"
    old.mkdir()
    (old / "trace.json").write_text(json.dumps(doc))
    (old / "arrays.npz").write_bytes((folder / "arrays.npz").read_bytes())
    back = load_trace(old)
    assert back.prompts == [back.prompt] and back.schema_version == SCHEMA_VERSION
    assert "batch_size" not in back.engine_config and EngineConfig.from_dict(back.engine_config).capture == "full"
    assert back.output_ids == load_trace(folder).output_ids
