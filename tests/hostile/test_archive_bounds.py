"""Issue 47, finding 1: a trace archive is bounded where it is read, whoever calls trace_from_zip.

The finding: the Trace page passes its bound and refuses the oversized file unread, but a script or the CLI calls
trace_from_zip with the local bound (2 GiB, which a real run's arrays may fill), so the same 6 MB file of deflated
zeros was inflated whole (2.3 GB, 9 s) before "damaged". Here it and the archive's other bombs (a member of zeros, a
central directory lying about a size, too many members) are refused at the default bound with a typed error, with
no time and no memory spent inflating them (tracemalloc's peak, the process's CPU time); what a refusal says is
checked against what the files hold (the demo's own trace.json, zipfile's listing); real traces still load: the
demo, zipped again with deflate, and a recording whose array deflates past the ratio a copied member is held to.

The class-hardening review: a hook record and its array agreeing on 16 MB (or 2.1 GB) of deflated zeros were inflated
before the record was held to the model card. Now every record's shape is held to the card's dimensions and its
step's tokens before any array is read (arrays.read_array counted: none is), naming the hook and both shapes; a file
whose arrays declare more than ARRAY_INFLATION times its own bytes is refused unread; and real recordings of every
family, padded batches, three caches, capture full, still load with every array equal.
"""

from __future__ import annotations

import io
import json
import time
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest
from cases import (
    CHUNK,
    _members,
    _size_lies_small,
    _stored,
    _stored_size_lies_large,
    _with_npz_member,
    _zeros_as_arrays,
    _zip,
    hook_of_zeros,
    logits_of_a_vocab_deflated_twice,
    zero_array,
)
from hostile_helpers import check_typed, outcome

from llmviz.errors import TraceFormatError
from llmviz.trace import archive, arrays
from llmviz.trace.records import LOCAL_ARRAY_BYTES, MAX_MEMBERS, trace_from_zip, trace_to_zip

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "assets" / "demo" / "default-run.zip"
# CPU seconds a refusal may take: inflating 256 MiB of zeros takes longer (1.7 s here before the fix, 2.1 GB 9.7 s);
# reading the demo's 1,475 .npy headers under tracemalloc takes 0.35 to 0.6 s on a busy 2-core machine
QUICK = 1.0
SMALL = 16 * 2**20  # what a refusal may allocate besides the file (the demo's document, headers)


def refused(data: bytes) -> tuple[str, int, float]:
    """trace_from_zip(data) at its default bound: (the typed error's message, tracemalloc's peak, CPU seconds)."""
    tracemalloc.start()
    cpu = time.process_time()
    try:
        exc = outcome(lambda: trace_from_zip(data), "error", seconds=10)
        seconds, (_, peak) = time.process_time() - cpu, tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return check_typed(exc, "TraceFormatError"), peak, seconds


def demo_vocab() -> int:
    with zipfile.ZipFile(DEMO) as z:
        return json.loads(z.read("trace.json"))["model_card"]["config"]["vocab_size"]


def test_the_findings_file_is_refused_unread_at_the_default_bound():
    """2.1 GB of zeros as the demo's logits, under the local bound: refused by its header's shape, not inflated."""
    data = zero_array(DEMO.read_bytes(), 2003 * CHUNK)
    assert 2.1e9 <= 2003 * CHUNK < LOCAL_ARRAY_BYTES and len(data) < 8e6
    message, peak, seconds = refused(data)
    assert f"s0.logits declares a [1, {(2003 * CHUNK - 128) // 4}] array, not [1, {demo_vocab()}]" in message, message
    assert peak < SMALL + 2 * len(data) and seconds < QUICK, (peak, seconds)


def test_a_member_of_zeros_is_refused_before_it_is_inflated():
    """arrays.npz as 1 GiB of zeros in ~1 MB: refused for what it declares against what it stores."""
    data = _zeros_as_arrays(DEMO.read_bytes())
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        info = z.getinfo("arrays.npz")
    assert info.file_size == 2**30 and info.file_size > archive.MAX_INFLATION * info.compress_size
    message, peak, seconds = refused(data)
    assert f"arrays.npz (stored in {info.compress_size:,} bytes) holds {2**30:,} bytes" in message, message
    assert peak < SMALL + 2 * len(data) and seconds < QUICK, (peak, seconds)


def test_a_central_directory_that_lies_about_a_size():
    """Declaring 1 MiB of a 256 MiB stream: read no further than declared (the CRC then fails). Claiming more stored
    bytes than the file has (to pass a bomb's ratio): refused as declared."""
    valid = DEMO.read_bytes()
    message, peak, seconds = refused(_size_lies_small(valid))
    assert "arrays.npz" in message and peak < SMALL + 2 * CHUNK and seconds < QUICK, (message, peak, seconds)
    data = _stored_size_lies_large(valid)
    message, peak, seconds = refused(data)
    assert f"arrays.npz claims {900 * CHUNK:,} stored bytes, more than the file holds" in message, message
    assert len(data) < 900 * CHUNK and seconds < QUICK, seconds


def test_a_stream_past_its_declared_size_is_cut_off_where_it_passes():
    """copy_member counts what it inflates: a stream giving more than its member declares (zipfile's stops there
    itself; this one does not) is refused once past it, with no more than a chunk written."""

    class Trusting:  # a reader that returns whatever the stream holds
        def open(self, info):
            return io.BytesIO(bytes(3 * archive.CHUNK))

    info = zipfile.ZipInfo("trace.json")
    info.file_size = info.compress_size = archive.CHUNK // 2
    dst = io.BytesIO()
    with pytest.raises(TraceFormatError, match="inflates past the 524,288 bytes it declares"):
        archive.copy_member(Trusting(), info, dst, 2 * archive.CHUNK, "the archive")
    assert dst.tell() == 0
    info.file_size = 3 * archive.CHUNK
    with pytest.raises(TraceFormatError, match="holds 3,145,728 bytes; a trace may hold at most 2,097,152"):
        archive.copy_member(Trusting(), info, dst, 2 * archive.CHUNK, "the archive")  # as declared, unread


def test_members_are_counted(monkeypatch):
    """The trace .zip may hold MAX_MEMBERS members, arrays.npz MAX_ARRAYS (lowered here to the demo's own count,
    as zipfile lists it): one more is refused."""
    members = _members(DEMO.read_bytes())
    extra = {f"extra/{i}.txt": b"" for i in range(MAX_MEMBERS - 2)}
    assert len(trace_from_zip(_zip({**members, **extra})).steps) == 25
    assert "holds 65 members; it may hold at most 64" in refused(_zip({**members, **extra, "one/more.txt": b""}))[0]
    with zipfile.ZipFile(io.BytesIO(members["arrays.npz"])) as npz:
        count = len(npz.infolist())
    monkeypatch.setattr(arrays, "MAX_ARRAYS", count)
    assert len(trace_from_zip(DEMO.read_bytes()).steps) == 25
    monkeypatch.setattr(arrays, "MAX_ARRAYS", count - 1)
    assert f"arrays.npz holds {count:,} members; it may hold at most {count - 1:,}" in refused(DEMO.read_bytes())[0]


def test_a_trace_round_trips_and_loads_zipped_again():
    """The demo, saved again and zipped again with deflate (a folder zipped by hand): the arrays numpy's own reader
    finds in the demo, the same text."""
    valid = DEMO.read_bytes()
    trace = trace_from_zip(valid)
    again = trace_from_zip(trace_to_zip(trace))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        for name, data in _members(valid).items():
            z.writestr(name, data)
    deflated = trace_from_zip(buffer.getvalue())
    with np.load(io.BytesIO(_members(valid)["arrays.npz"]), allow_pickle=False) as npz:
        for loaded in (trace, again, deflated):
            assert loaded.prompt == trace.prompt and loaded.tokens == trace.tokens
            for step in loaded.steps:
                assert np.array_equal(step.logits, npz[f"s{step.index}.logits"])
                for record in step.hooks:
                    if record.array is not None:
                        assert np.array_equal(record.array, npz[f"s{step.index}.hook.{record.name}"])


def test_a_recording_whose_array_deflates_like_zeros_still_loads(tiny):
    """Why the arrays of arrays.npz are held to their document, not to a ratio: a batch of one repeated prompt and
    fifteen short ones records an `embed` array of several MiB deflating more than MAX_INFLATION times (padding and
    repeats compress as zeros do). It loads at the default bound."""
    from llmviz.engine.session import Session
    from llmviz.trace.config import EngineConfig, SamplingConfig

    config = EngineConfig(sampling=SamplingConfig(temperature=0), capture="full", capture_filter=["embed"])
    trace = Session(tiny, ["ha " * 200] + ["Hi"] * 15, config).generate(1)
    data = trace_to_zip(trace)
    with zipfile.ZipFile(io.BytesIO(_members(data)["arrays.npz"])) as npz:
        info = npz.getinfo("s0.hook.embed.npy")
    assert info.file_size > archive.INFLATION_GRACE and info.file_size > archive.MAX_INFLATION * info.compress_size
    assert declared_bytes(data) < archive.ARRAY_INFLATION / 50 * len(data)  # the whole file declares ~12 times it
    loaded = trace_from_zip(data)
    assert np.array_equal(loaded.steps[0].hook("embed").array, trace.steps[0].hook("embed").array)


# --- the review: a hook record held to the model before its array is read; the arrays to the file --------
def counted_reads(monkeypatch) -> list[str]:
    """The arrays a load reads (arrays.read_array, which inflates one), by member name, as it reads them."""
    read, real = [], arrays.read_array

    def counted(npz, member):
        read.append(member.info.filename)
        return real(npz, member)

    monkeypatch.setattr(arrays, "read_array", counted)
    return read


@pytest.mark.parametrize("size", [16 * CHUNK, 2003 * CHUNK], ids=["16MiB", "2.1GB"])
def test_a_hook_of_zeros_shaped_as_its_record_says_is_refused_before_any_array_is_read(size, monkeypatch):
    """The review's file, built here: the demo's prefill `embed` record and its array both [1, 1, m] (the array's
    header agreeing with the document, as the loader checks), m floats of deflated zeros. Before, 16 MB were
    inflated before "damaged", and at 2.1 GB (under the local bound of 2 GiB) all of it: now the record is held to
    the model card (d = 256) and its step (3 tokens) before any array is read."""
    data = hook_of_zeros(DEMO.read_bytes(), size)
    assert size < LOCAL_ARRAY_BYTES and len(data) < 12e6
    read = counted_reads(monkeypatch)
    message, peak, seconds = refused(data)
    assert f"hook 'embed' has shape [1, 1, {(size - 128) // 4}], not [1, 3, 256]" in message, message
    assert read == [] and peak < min(size // 2, SMALL + 2 * len(data)) and seconds < QUICK, (read[:3], peak, seconds)


def reshaped(valid: bytes, step: int, name: str, shape: list) -> bytes:
    """The archive with step `step`'s hook record `name` declaring `shape`, and its array in arrays.npz an array of
    that shape (ones): the document and the array's header agree; only the model card and the step disagree."""
    doc = json.loads(_members(valid)["trace.json"])
    meta = next(m for m in doc["steps"][step]["hooks"] if m["name"] == name)
    meta.update(shape=shape, has_array=True)
    npy = io.BytesIO()
    np.save(npy, np.ones(shape, np.float32))
    with_array = _with_npz_member(valid, _stored(f"s{step}.hook.{name}.npy", npy.getvalue()))
    return _zip({**_members(with_array), "trace.json": json.dumps(doc).encode()})


@pytest.mark.parametrize("step, name, shape, wanted", [
    (0, "layers.0.q", [1, 8, 3, 64], "[1, 8, 3, 32]"),  # head_dim 32 in the card
    (0, "pos", [1, 3, 32], "[1, 3, 16]"),  # RoPE: hd/2 angles
    (0, "embed", [1, 4, 256], "[1, 3, 256]"),  # the prefill reads 3 tokens
    (1, "layers.2.mlp_act", [1, 2, 768], "[1, 1, 768]"),  # a decode step reads one
    (3, "layers.1.scores", [1, 8, 1, 513], "[1, 8, 1, at most 512]"),  # keys: at most the card's context
    (2, "kv.write", [4, 2, 2, 8, 1, 32], "[4, 2, 1, 8, 1, 32]"),  # one row
], ids=["head_dim", "pos_dim", "prefill_tokens", "decode_tokens", "keys_past_the_context", "rows"])
def test_a_hook_shape_the_model_or_its_step_does_not_have_is_refused_naming_it(step, name, shape, wanted,
                                                                               monkeypatch):
    """A record whose array agrees with it but not with the model card's dimensions or its step's tokens: refused
    before any array is read, naming the step, the hook and both shapes (before, only the model's fixed dimensions
    were checked, once every array was read; tokens and keys were left free)."""
    data = reshaped(DEMO.read_bytes(), step, name, shape)
    read = counted_reads(monkeypatch)
    message = check_typed(outcome(lambda: trace_from_zip(data), "error"), "TraceFormatError")
    assert f"'steps[{step}]': hook {name!r} has shape {shape}, not {wanted}" in message, message
    assert read == []


@pytest.fixture(scope="module")
def meta_zip(tiny):
    from llmviz.engine.session import Session
    from llmviz.trace.config import EngineConfig, SamplingConfig

    config = EngineConfig(sampling=SamplingConfig(temperature=0), capture="meta")
    return trace_to_zip(Session(tiny, "The list of", config).generate(3))


def declared_bytes(data: bytes) -> int:
    """What the arrays of a trace's arrays.npz declare, as their .npy headers say (nothing inflated but those)."""
    with zipfile.ZipFile(io.BytesIO(data)) as z, zipfile.ZipFile(io.BytesIO(z.read("arrays.npz"))) as npz:
        return arrays.BoundedArrays(npz, LOCAL_ARRAY_BYTES).declared


def test_arrays_declaring_more_than_their_file_can_hold_are_refused_unread(meta_zip, monkeypatch):
    """A file true to itself in every shape (the card's vocabulary raised to fit 256 MiB of zero logits in step 0),
    its arrays deflated in arrays.npz and deflated again in the .zip: each member within what deflate gives, the
    arrays declaring thousands of times the file's bytes. Before, all of it was inflated and the trace loaded; now
    the file's own length bounds its arrays (archive.ARRAY_INFLATION), whoever calls, before any is read."""
    data = logits_of_a_vocab_deflated_twice(meta_zip)
    declared = declared_bytes(data)
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        npz_bytes = z.getinfo("arrays.npz").file_size
    assert archive.ARRAY_INFLATION * len(data) < declared < min(archive.ARRAY_INFLATION * npz_bytes, LOCAL_ARRAY_BYTES)
    read = counted_reads(monkeypatch)
    message, peak, seconds = refused(data)
    assert f"arrays.npz, from an archive of {len(data):,} bytes (at most 1,000 bytes of arrays a byte), holds " \
           f"{declared:,} bytes" in message, message
    assert read == [] and peak < SMALL + 2 * len(data) and seconds < QUICK, (read[:3], peak, seconds)


def test_real_recordings_load_far_within_the_bounds_on_their_arrays(model_dirs):
    """Every family (RoPE and learned positions, grouped-query attention, tied and plain MLPs, a sliding window),
    batches padded left and right, the contiguous, paged and ring caches, capture full: each round-trips through
    trace_from_zip at its default bounds with every array equal, its arrays declaring a small multiple of the file
    (archive.ARRAY_INFLATION is 1,000)."""
    from model_factory import KINDS

    from llmviz.engine.loading.model import load_model
    from llmviz.engine.session import Session
    from llmviz.trace.config import EngineConfig, SamplingConfig

    greedy = SamplingConfig(temperature=0)
    configs = (EngineConfig(sampling=greedy, capture="full", padding="left"),
               EngineConfig(sampling=greedy, capture="full", kv_layout="paged", kv_block_size=4),
               EngineConfig(sampling=greedy, capture="full", sliding_window=3))
    for kind in KINDS:
        lm = load_model(str(model_dirs[kind]))
        for config in configs:
            trace = Session(lm, ["one two three four five six", "hi"], config).generate(3)
            data = trace_to_zip(trace)
            assert declared_bytes(data) < 20 * len(data), (kind, config.kv_layout)
            back = trace_from_zip(data)
            for a, b in zip(back.steps, trace.steps, strict=True):
                assert np.array_equal(a.input_ids, b.input_ids)
                for ra, rb in zip(a.hooks, b.hooks, strict=True):
                    assert ra.shape == rb.shape and np.array_equal(ra.array, rb.array, equal_nan=True), ra.name
