"""A zip archive read within bounds: the one set of checks for every zip a loader opens (a trace's .zip and its
arrays.npz), whoever calls it (the Trace page, a script, the CLI).

- Before anything is read (`checked_members`): at most `max_members` members (a header is read from each), their
  declared sizes within the caller's bound (each, and so their total), and each one's stored bytes inside the file
  (a central directory claiming more stored bytes than the file has could pass a bomb's stream off as a plain one).
- A member copied out whole (`copy_member`: the trace .zip's trace.json and arrays.npz) is refused unread when it
  declares more than MAX_INFLATION times its stored bytes, past a grace of INFLATION_GRACE: Apache POI's rule for
  the same attack (ZipSecureFile's minimum inflate ratio, 1%). llmviz stores these two (ratio 1), and a folder
  zipped again deflates them a little (the demo's trace.json 16 times, its arrays.npz, already compressed, not at
  all); a bomb's zeros deflate about 1,000 times. Then it is inflated a MiB at a time, the bytes counted and refused
  once past what it declared (zipfile stops there itself and checks the CRC: this does not rely on it).
- The arrays of arrays.npz are not held to a ratio one by one: a prompt that repeats deflates as zeros do (a 16-row
  batch of one long repeated prompt and short ones records an `embed` array 114 times smaller than it inflates to,
  its input_ids 227 times). Together they may declare at most ARRAY_INFLATION times the bytes they came in
  (`check_arrays_inflation`: arrays.npz's, and the archive's), before any is read. Each is read on demand within
  its .npy header, which is bounded first by the caller's bound and by what the document, the model card and the
  step's tokens let that array hold (llmviz/trace/arrays.py, llmviz/trace/records.py).

Every refusal is a TraceFormatError. Torch-free.
"""

from __future__ import annotations

import io
import zipfile

from llmviz.trace.check import damaged, too_large

MAX_INFLATION = 100  # bytes a member copied out may inflate to per byte stored (Apache POI: MIN_INFLATE_RATIO 0.01)
INFLATION_GRACE = 2**20  # a member declaring at most this is copied whatever its ratio
CHUNK = 2**20  # bytes inflated per read
# The bytes a trace's arrays may declare per byte of arrays.npz, and of the archive it came in (trace_from_zip's
# `data`), checked before any array is read. Deflate, the one compression a trace is written with (savez_compressed),
# gives at most 1,032 bytes per byte stored (a run's 258-byte matches). A recording's floats barely deflate: its
# most repetitive members reach 114 (`embed`) to 481 (input_ids) times in a batch padded to one long prompt, and whole
# files far less (58 times at most, measured: 32 rows, one of 500 tokens, capture filtered to the attention maps).
# 1,000 is 17 times the worst file measured and about deflate's own ceiling (a file llmviz writes passes it only if
# nearly all its arrays are one repeated value), so it refuses what no writer of llmviz makes: a member of bzip2 or
# LZMA (zipfile reads both: zeros compress a million times), or an arrays.npz deflated again in the archive (the two
# ratios multiplied: 30,000 times in tests/hostile/test_archive_bounds.py). It does not keep out a file of deflated
# zeros: each array is held to the document, the document to the model card and the step's tokens, for that
# (llmviz/trace/records.py).
ARRAY_INFLATION = 1000


def checked_members(archive: zipfile.ZipFile, limit: int, what: str, max_members: int) -> list[zipfile.ZipInfo]:
    """The archive's members (as infolist: a name twice is there twice), checked as declared before any is read: at
    most `max_members`, their declared sizes at most `limit` in all, each member's stored bytes within the file."""
    infos = archive.infolist()
    if len(infos) > max_members:
        raise damaged(f"{what} holds {len(infos):,} members; it may hold at most {max_members:,}")
    size = archive.fp.seek(0, io.SEEK_END)  # zipfile seeks to a member before each read of it
    for info in infos:
        if info.header_offset + info.compress_size > size:
            raise damaged(f"{what}: {info.filename} claims {info.compress_size:,} stored bytes, more than the file "
                          "holds")
    total = sum(info.file_size for info in infos)
    if total > limit:
        raise too_large(what, total, limit)
    return infos


def inflation_limit(stored: int) -> int:
    """The most bytes a member copied out may inflate to, given the bytes it is stored in."""
    return max(INFLATION_GRACE, MAX_INFLATION * stored)


def copy_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, dst, limit: int, what: str) -> int:
    """Inflate the member into the file object `dst` a MiB at a time. Refused before anything is read when it
    declares more than `limit` or than inflation_limit of its stored bytes; refused once its stream gives more than
    it declared. Returns the bytes written."""
    name = info.filename
    if info.file_size > limit:
        raise too_large(f"{what}: {name}", info.file_size, limit)
    if info.file_size > (allowed := inflation_limit(info.compress_size)):
        raise too_large(f"{what}: {name} (stored in {info.compress_size:,} bytes)", info.file_size, allowed)
    done = 0
    with archive.open(info) as src:
        while chunk := src.read(CHUNK):
            done += len(chunk)
            if done > info.file_size:
                raise damaged(f"{what}: {name} inflates past the {info.file_size:,} bytes it declares")
            dst.write(chunk)
    return done


def check_arrays_inflation(declared: int, stored: int, source: str | None) -> None:
    """Refuse arrays declaring more than ARRAY_INFLATION times the `stored` bytes they came in (arrays.npz's own, or
    the `source` archive's), past INFLATION_GRACE; as declared, before any is read."""
    if declared > (allowed := max(INFLATION_GRACE, ARRAY_INFLATION * stored)):
        came = f"arrays.npz, from {source} of {stored:,} bytes" if source else f"arrays.npz, a file of {stored:,} bytes"
        raise too_large(f"{came} (at most {ARRAY_INFLATION:,} bytes of arrays a byte),", declared, allowed)
