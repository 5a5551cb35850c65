"""Issue 47, finding 1: a trace archive is bounded where it is read, whoever calls trace_from_zip.

The finding: the Trace page passes its bound and refuses the file of issue 35 unread, but a script or the CLI calls
trace_from_zip with the local bound (2 GiB, which a real run's arrays may fill), so the same 6 MB file of deflated
zeros was inflated whole (2.3 GB, 9 s) before "damaged". Here it and the archive's other bombs (a member of zeros, a
central directory lying about a size, too many members) are refused at the default bound with a typed error, with
no time and no memory spent inflating them (tracemalloc's peak, the process's CPU time); what a refusal says is
checked against what the files hold (the demo's own trace.json, zipfile's listing); real traces still load: the
demo, zipped again with deflate, and a recording whose array deflates past the ratio a copied member is held to.
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
from cases import CHUNK, _members, _size_lies_small, _stored_size_lies_large, _zeros_as_arrays, _zip, zero_array
from hostile_helpers import check_typed, outcome

from llmviz.errors import TraceFormatError
from llmviz.trace import archive, arrays
from llmviz.trace.records import LOCAL_ARRAY_BYTES, MAX_MEMBERS, trace_from_zip, trace_to_zip

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "assets" / "demo" / "default-run.zip"
QUICK = 0.5  # CPU seconds a refusal may take: inflating 256 MiB of zeros takes longer (1.7 s here before the fix)
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
    loaded = trace_from_zip(data)
    assert np.array_equal(loaded.steps[0].hook("embed").array, trace.steps[0].hook("embed").array)
