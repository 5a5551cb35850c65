"""Traces round-trip through JSON + npz and load where torch cannot be imported."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from llmviz.engine.loading.model import load_model
from llmviz.engine.session import Session
from llmviz.errors import TraceFormatError
from llmviz.trace.config import EngineConfig, SamplingConfig
from llmviz.trace.records import SCHEMA_VERSION, load_trace

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
from llmviz.trace.records import load_trace
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
    from llmviz.trace.records import trace_from_zip, trace_to_zip

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


def _written(doc: dict, folder, old):
    """An older trace.json beside the saved run's arrays, in its own folder."""
    old.mkdir()
    (old / "trace.json").write_text(json.dumps(doc))
    (old / "arrays.npz").write_bytes((folder / "arrays.npz").read_bytes())
    return old


def test_schema_1_traces_still_load(saved, tmp_path):
    """A trace written before batches (schema 1: one prompt, batch_size and threads in its config)."""
    _, folder = saved
    doc = json.loads((folder / "trace.json").read_text())
    doc["schema_version"] = 1
    del doc["prompts"]
    doc["engine_config"] = {**doc["engine_config"], "batch_size": 1, "threads": None}
    for step in doc["steps"]:
        del step["row_finished"]
    back = load_trace(_written(doc, folder, tmp_path / "v1"))
    assert back.prompts == [back.prompt] and back.schema_version == SCHEMA_VERSION
    assert "batch_size" not in back.engine_config and EngineConfig.from_dict(back.engine_config).capture == "full"
    assert back.output_ids == load_trace(folder).output_ids


def test_schema_2_traces_still_load(saved, tmp_path):
    """A trace written before row norms (schema 2: no has_row_norms in its hook records)."""
    _, folder = saved
    doc = json.loads((folder / "trace.json").read_text())
    doc["schema_version"] = 2
    for step in doc["steps"]:
        for meta in step["hooks"]:
            del meta["has_row_norms"]
    back = load_trace(_written(doc, folder, tmp_path / "v2"))
    assert back.output_ids == load_trace(folder).output_ids and back.steps[1].hook("layers.0.k").row_norms is None


def test_the_json_caps_leave_room_for_the_longest_embedded_run(tmp_path):
    """The longest run the embedded model can record (its whole 512-token context at capture full) writes a
    trace.json within a third of its size cap and of its value cap (the caps' comment says why they are
    where they are). Built from a recorded run's own steps, repeated: recording 511 steps takes minutes here."""
    from llmviz.trace.check import MAX_TRACE_JSON_BYTES, MAX_TRACE_JSON_VALUES

    lm = load_model("llmviz-tiny")
    trace = Session(lm, "The list of", EngineConfig(capture="full", stop_at_eos=False)).generate(3)
    doc = json.loads((trace.save(tmp_path / "short") / "trace.json").read_text())
    context = lm.cfg.max_position_embeddings
    doc["steps"] = [doc["steps"][0]] + [{**doc["steps"][-1], "index": i} for i in range(1, context - 1)]
    doc["tokens"] = {str(i): {"piece": "Ġpiece", "bytes": "207069656365", "text": " piece", "special": False}
                     for i in range(2 * context)}  # every step shows its input, sample, top 20 and lens ids
    text = json.dumps(doc, ensure_ascii=False, indent=1).encode()  # as RunTrace.save writes it
    assert len(text) < MAX_TRACE_JSON_BYTES / 3 and text.count(b",") < MAX_TRACE_JSON_VALUES / 3, len(text)


def test_trace_json_is_read_no_further_than_its_cap(saved, tmp_path):
    """A trace.json with no end (a device file) is refused at the cap, not read to the 2 GiB archive limit."""
    import time

    from llmviz.trace.check import MAX_TRACE_JSON_BYTES

    _, folder = saved
    (tmp_path / "trace.json").symlink_to("/dev/zero")
    (tmp_path / "arrays.npz").write_bytes((folder / "arrays.npz").read_bytes())
    began = time.perf_counter()
    with pytest.raises(TraceFormatError) as err:
        load_trace(tmp_path)
    assert err.value.code == "trace_json_too_large" and f"{MAX_TRACE_JSON_BYTES + 2**20:,}" in str(err.value)
    assert time.perf_counter() - began < 5


def test_a_message_names_the_folder_given_never_one_inside_it(saved, tmp_path):
    """Loaded from a folder, a damaged trace's message names that folder (the CLI's user chose it); from an archive,
    never the temporary folder it was unpacked in (on a server, the server's own)."""
    from llmviz.trace.records import trace_from_zip, trace_to_zip

    trace, folder = saved
    (tmp_path / "trace.json").write_bytes((folder / "trace.json").read_bytes())
    (tmp_path / "arrays.npz").write_bytes(b"PK\x03\x04 not an npz")
    with pytest.raises(TraceFormatError) as err:
        load_trace(tmp_path)
    assert str(tmp_path) in str(err.value)
    import io
    import tempfile
    import zipfile

    good = trace_to_zip(trace)
    with zipfile.ZipFile(io.BytesIO(good)) as z:
        members = {n: z.read(n) for n in z.namelist()}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr("trace.json", members["trace.json"])
        z.writestr("arrays.npz", b"PK\x03\x04 not an npz")
    with pytest.raises(TraceFormatError) as err:
        trace_from_zip(buffer.getvalue())
    assert tempfile.gettempdir() not in str(err.value) and "the archive" in str(err.value)
