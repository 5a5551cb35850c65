"""The catalogue of hostile inputs: prompts, numeric values, trace files, request traces and model
folders, each named, with what must happen to it.

The library tests (test_library.py), the CLI tests (test_cli_hostile.py) and the pages' harness run the same
catalogue. Every case either is refused with a typed error (a subclass of llmviz.errors.LlmvizError with a
one-line message) or gives a correct result that a test checks against an independent fact. Builders return
bytes or write a folder; nothing here imports torch at module level, and nothing needs a model loaded.
"""

from __future__ import annotations

import io
import json
import math
import pickle
import shutil
import struct
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

OK, ERROR = "ok", "error"


@dataclass(frozen=True)
class Case:
    name: str
    value: object  # the input itself, or a builder
    expect: str  # OK (a correct result) or ERROR (a typed error)
    error: str = "LlmvizError"  # the llmviz.errors class expected (or a base of it) when expect is ERROR


# --- prompts -----------------------------------------------------------------------------------------------
# Expectations for the embedded model (llmviz-tiny: byte-level BPE, a 512-token context).
PROMPTS = (
    Case("empty", "", ERROR, "PromptError"),
    Case("whitespace", " \t\n \r\n ", ERROR, "PromptError"),
    Case("unicode_whitespace", "\u3000\u00a0\u2028\u2003", ERROR, "PromptError"),
    Case("ten_thousand_chars", "The quick brown fox jumps over the lazy dog. " * 223, ERROR, "PromptError"),
    Case("ten_thousand_one_letter", "x" * 10_000, ERROR, "PromptError"),
    Case("ten_thousand_emoji", "👩‍👩‍👧‍👦" * 1500, ERROR, "PromptError"),
    Case("control_chars", "bell\x07 esc\x1b[31mred\x1b[0m del\x7f \x01\x02\x03", OK),
    Case("nul_byte", "before\x00after", OK),
    Case("only_nuls", "\x00\x00\x00", OK),
    Case("lone_high_surrogate", "abc\ud800def", ERROR, "PromptError"),
    Case("lone_low_surrogate", "caf\udce9", ERROR, "PromptError"),  # what undecodable argv bytes become
    Case("reversed_surrogate_pair", "\udc00\ud800", ERROR, "PromptError"),
    Case("rtl_override", "\u202eevil.exe\u202c txt", OK),
    Case("bidi_isolates", "\u2067שלום\u2069 and \u2066abc\u2069", OK),
    Case("emoji_zwj_family", "👩‍👩‍👧‍👦 family", OK),
    Case("emoji_flag_skin_keycap", "🇨🇳 👍🏽 1️⃣ 🏳️‍🌈", OK),
    Case("cjk", "济南的冬天", OK),
    Case("mixed_scripts", "Hello мир 世界 مرحبا שלום नमस्ते Γειά 🌍", OK),
    Case("zalgo_combining", "Z\u0334\u0321\u032a\u0353a\u0338l\u0335g\u0337o", OK),
    Case("zero_width_only", "\u200b\u200c\u200d", OK),
    Case("byte_order_mark", "\ufeffhello", OK),
    Case("noncharacters", "\uffff\ufffe\U0010ffff", OK),
    Case("special_token_text", "<|endoftext|>", OK),
    Case("crlf_and_tabs", "line one\r\nline two\ttabbed", OK),
    Case("json_and_shell_metachars", '{"a": [1, 2]}; $(rm -rf /) `id` \'"\\', OK),
)

# Not text at all (the library only: a command line passes strings).
NOT_TEXT = (
    Case("int", 123, ERROR, "PromptError"),
    Case("bytes", b"hello", ERROR, "PromptError"),
    Case("list_with_int", ["ok", 5], ERROR, "PromptError"),
    Case("empty_list", [], ERROR, "PromptError"),
    Case("none_in_list", ["ok", None], ERROR, "PromptError"),
)

# Token ids given directly (Session(prompt_ids=...): the serving traces and the batch sweep start from ids).
PROMPT_IDS = (
    Case("float_id", [[5, 1.5]], ERROR, "PromptError"),
    Case("nan_id", [[math.nan]], ERROR, "PromptError"),
    Case("text_id", [["5"]], ERROR, "PromptError"),
    Case("negative_id", [[-1, 5]], ERROR, "PromptError"),
    Case("huge_id", [[10**12]], ERROR, "PromptError"),
    Case("empty_row", [[5], []], ERROR, "PromptError"),
    Case("no_rows", [], ERROR, "PromptError"),
    Case("row_not_a_list", [5], ERROR, "PromptError"),
    Case("two_rows", [[5, 6, 7], [8]], OK),
)


def context_prompt(n: int) -> str:
    """A prompt of exactly n tokens for the embedded tokenizer (SOH is one token and merges with nothing)."""
    return "\x01" * n


# --- numeric controls --------------------------------------------------------------------------------------
# Every numeric control gets these five values; `ok` names the ones that must give a correct result (with the
# setup the control needs, see `setup`), every other value must be refused with a ConfigError.
VALUES = {"negative": -1, "zero": 0, "huge": 10**12, "nan": math.nan, "text": "abc"}


@dataclass(frozen=True)
class Control:
    name: str  # the library's name of the setting
    where: str  # sampling | engine | generate | compare | serve | speculative | threads
    flag: str | None  # the CLI flag (None: not on the command line)
    command: str = "generate"
    ok: tuple = ()  # VALUES keys that must run
    setup: dict | None = None  # other settings the value is tried with (library field names)
    huge: str = "ConfigError"  # the error 10**12 gets when it is refused (an allocation it would need: no memory)


CONTROLS = (
    Control("temperature", "sampling", "--temperature", ok=("zero",)),
    Control("top_k", "sampling", "--top-k", ok=("zero", "huge")),  # 0 and >= vocab both mean "off"
    Control("top_p", "sampling", "--top-p"),
    Control("repetition_penalty", "sampling", "--repetition-penalty", ok=("huge",)),
    Control("seed", "engine", "--seed", ok=("negative", "zero", "huge")),  # torch takes [-2**63, 2**64)
    Control("max_seq_len", "engine", "--max-seq-len"),  # 0, -1 < 2; 10**12 beyond the context
    Control("kv_heads", "engine", "--kv-heads"),
    Control("sliding_window", "engine", "--sliding-window", ok=("huge",)),  # wider than the context: no effect
    Control("kv_rollback", "engine", "--kv-rollback", ok=("zero", "huge")),
    Control("sparse_block", "engine", "--sparse-block"),  # block-sparse attention: 1..4096 positions
    Control("sparse_local", "engine", "--sparse-local", setup={"sparse_block": 4}),
    Control("sparse_global", "engine", "--sparse-global", ok=("zero",), setup={"sparse_block": 4}),
    Control("kv_block_size", "engine", "--kv-block-size", setup={"kv_layout": "paged"}),
    Control("kv_pool_blocks", "engine", "--kv-pool-blocks", setup={"kv_layout": "paged"}, huge="KVCacheTooLargeError"),
    Control("quant_group", "engine", "--quant-group", setup={"quant": "int4"}),
    Control("logit_lens_top_k", "engine", None, ok=("zero", "huge"), setup={"capture": "meta"}),
    Control("max_new_tokens", "generate", "--max-new-tokens", ok=("huge",), setup={"max_seq_len": 16}),
    Control("steps", "generate", "--steps", command="trace", ok=("zero", "huge"), setup={"max_seq_len": 16}),
    Control("threads", "threads", "--threads"),
    Control("steps", "compare", "--steps", command="compare"),
    Control("repeats", "compare", "--repeats", command="compare"),
    Control("warmup", "compare", "--warmup", command="compare"),
    Control("layer", "compare", "--layer", command="compare", ok=("zero",)),
    Control("head", "compare", "--head", command="compare", ok=("zero",)),
    Control("slots", "serve", "--slots", command="serve-sim"),  # huge: more slots than the token budget
    Control("token_budget", "serve", "--token-budget", command="serve-sim", ok=("huge",)),
    Control("block_size", "serve", "--block-size", command="serve-sim", huge="KVCacheTooLargeError"),
    Control("pool_blocks", "serve", "--pool-blocks", command="serve-sim", huge="KVCacheTooLargeError"),
    Control("k", "speculative", "--k", command="speculative"),
    Control("max_new", "speculative", "--max-new-tokens", command="speculative"),  # huge: beyond the context
)

# Device and dtype names are text controls with the same promise.
DEVICES = (
    Case("empty_device", "", ERROR, "ConfigError"),
    Case("unknown_device", "tpu", ERROR, "ConfigError"),
    Case("negative_cuda_index", "cuda:-1", ERROR, "ConfigError"),
    Case("huge_cuda_index", "cuda:99999999999999999999", ERROR, "ConfigError"),
    Case("upper_case_cpu", "CPU", ERROR, "ConfigError"),
)


# --- zip files written byte by byte (for members zipfile cannot write: forged sizes, raw deflate streams) ---
def _raw_zip(members: list[tuple]) -> bytes:
    """members: (name, method, crc, data as stored, declared uncompressed size, flags) -> a zip archive."""
    out, central = io.BytesIO(), io.BytesIO()
    for name, method, crc, data, size, flags in members:
        offset, encoded = out.tell(), name.encode()
        out.write(struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, flags, method, 0, 0x21, crc, len(data), size,
                              len(encoded), 0))
        out.write(encoded + data)
        central.write(struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, 20, flags, method, 0, 0x21, crc, len(data), size,
                                  len(encoded), 0, 0, 0, 0, 0, offset))
        central.write(encoded)
    start = out.tell()
    out.write(central.getvalue())
    out.write(struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, len(members), len(members), len(central.getvalue()),
                          start, 0))
    return out.getvalue()


def _deflate(data: bytes) -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush()


# CRC-32 of long runs of zeros without reading them: zlib's crc32_combine (multiplication modulo the CRC
# polynomial), so a bomb's members carry their true checksum and a naive reader inflates them to the end.
_POLY = 0xEDB88320


def _multmodp(a: int, b: int) -> int:
    m, p = 1 << 31, 0
    while True:
        if a & m:
            p ^= b
            if not a & (m - 1):
                return p
        m >>= 1
        b = (b >> 1) ^ _POLY if b & 1 else b >> 1


_X2N = [1 << 30]  # x^(2^k) modulo the polynomial
for _ in range(31):
    _X2N.append(_multmodp(_X2N[-1], _X2N[-1]))


def crc32_combine(crc1: int, crc2: int, len2: int) -> int:
    """The CRC-32 of A + B from crc(A), crc(B) and len(B) (as zlib's crc32_combine)."""
    p, k = 1 << 31, 3
    while len2:
        if len2 & 1:
            p = _multmodp(_X2N[k & 31], p)
        len2 >>= 1
        k += 1
    return _multmodp(p, crc1) ^ crc2


def crc32_zeros(n: int, prefix: bytes = b"") -> int:
    """zlib.crc32(prefix + bytes(n)), in microseconds for any n."""
    crc, run, run_len = zlib.crc32(prefix), zlib.crc32(b"\0"), 1
    while n:
        if n & 1:
            crc = crc32_combine(crc, run, run_len)
        n >>= 1
        if n:
            run, run_len = crc32_combine(run, run, run_len), 2 * run_len
    return crc


CHUNK = 1 << 20


def zeros_stream(prefix: bytes, size: int) -> bytes:
    """A raw deflate stream of `prefix` then zeros up to `size` bytes in all, built without inflating them:
    after a full flush, every further MiB of zeros compresses to the same ~1 KB."""
    assert size % CHUNK == 0 and len(prefix) < CHUNK
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    head = c.compress(prefix + bytes(CHUNK - len(prefix))) + c.flush(zlib.Z_FULL_FLUSH)
    block = c.compress(bytes(CHUNK)) + c.flush(zlib.Z_FULL_FLUSH)
    return head + block * (size // CHUNK - 1) + c.flush()


def bomb_member(name: str, size: int, prefix: bytes = b"") -> tuple:
    """A deflated member of `size` bytes (prefix, then zeros) whose stored data is ~size/1000."""
    return name, zipfile.ZIP_DEFLATED, crc32_zeros(size - len(prefix), prefix), zeros_stream(prefix, size), size, 0


def _stored(name: str, data: bytes, flags: int = 0, method: int = zipfile.ZIP_STORED) -> tuple:
    return name, method, zlib.crc32(data), data, len(data), flags


# --- trace archives (the Trace page's upload; llmviz.trace.records.trace_from_zip) ---------------------------
BOMB_BYTES = 3 * 2**30  # above llmviz.trace.records.MAX_UNPACKED_BYTES (2 GiB), below zip64's 4 GiB


def _members(valid: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(valid)) as z:
        return {name: z.read(name) for name in z.namelist()}


def _zip(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buffer.getvalue()


def _with_json(valid: bytes, edit) -> bytes:
    members = _members(valid)
    members["trace.json"] = edit(json.loads(members["trace.json"]))
    return _zip(members)


def _with_arrays(valid: bytes, edit) -> bytes:
    import numpy as np

    members = _members(valid)
    with np.load(io.BytesIO(members["arrays.npz"]), allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **edit(arrays))
    members["arrays.npz"] = buffer.getvalue()
    return _zip(members)


def _pickled_member(valid: bytes) -> bytes:
    """arrays.npz whose input_ids member is an object array: numpy would unpickle it if allowed."""
    import numpy as np

    members = _members(valid)
    buffer = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(members["arrays.npz"])) as src, zipfile.ZipFile(buffer, "w") as dst:
        for info in src.infolist():
            if info.filename == "s0.input_ids.npy":
                npy = io.BytesIO()
                np.save(npy, np.array([[1, {"os.system": "echo pwned"}]], dtype=object), allow_pickle=True)
                dst.writestr(info.filename, npy.getvalue())
            else:
                dst.writestr(info, src.read(info))
    members["arrays.npz"] = buffer.getvalue()
    return _zip(members)


def _npz_bomb(valid: bytes) -> bytes:
    """A small arrays.npz (stored as is in the archive) whose one member inflates to BOMB_BYTES."""
    import numpy as np

    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False,
                                                 "shape": ((BOMB_BYTES - 128) // 4,)})
    npz = _raw_zip([bomb_member("s0.logits.npy", BOMB_BYTES, header.getvalue().ljust(128, b"\0"))])
    return _zip({**_members(valid), "arrays.npz": npz})


def _huge_header(valid: bytes) -> bytes:
    """An .npy member whose header claims 2**40 floats while it holds a few bytes."""
    import numpy as np

    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False, "shape": (2**40,)})
    npz = _raw_zip([_stored("s0.logits.npy", header.getvalue() + bytes(64))])
    return _zip({**_members(valid), "arrays.npz": npz})


def _bomb(valid: bytes) -> bytes:
    members = _members(valid)
    return _raw_zip([_stored("trace.json", members["trace.json"]), bomb_member("arrays.npz", BOMB_BYTES)])


def _lying_size(valid: bytes) -> bytes:
    """trace.json declares 100 bytes but its stream inflates to 64 MiB (the reader must stop at what it declared)."""
    name, method, _, data, _, flags = bomb_member("trace.json", 64 * CHUNK)
    return _raw_zip([(name, method, zlib.crc32(bytes(100)), data, 100, flags),
                     _stored("arrays.npz", _members(valid)["arrays.npz"])])


def _npy_header(shape: tuple) -> bytes:
    """A float32 .npy header of `shape`, 128 bytes long (numpy pads it to a multiple of 64)."""
    import numpy as np

    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False, "shape": shape})
    assert len(header.getvalue()) == 128
    return header.getvalue()


def _with_npz_member(valid: bytes, member: tuple) -> bytes:
    """The valid archive with one member of its arrays.npz (a _raw_zip tuple) put in place of the one it names."""
    arrays = _members(_members(valid)["arrays.npz"])
    kept = [_stored(name, data) for name, data in arrays.items() if name != member[0]]
    return _zip({**_members(valid), "arrays.npz": _raw_zip([*kept, member])})


def zero_array(valid: bytes, size: int, key: str = "s0.logits") -> bytes:
    """Issue 35, finding 3: the valid archive with the array `key` of its arrays.npz replaced by a [1, n] float32
    array of zeros filling `size` bytes with its header (a multiple of CHUNK), deflated: ~size/1000 in the file,
    every CRC right, every header telling the truth. A reader that inflates before it bounds what the arrays
    declare holds `size` bytes (2.1 GB from a 5.6 MB upload in the finding)."""
    header = _npy_header((1, (size - 128) // 4))
    return _with_npz_member(valid, bomb_member(f"{key}.npy", size, header))


def hook_of_zeros(valid: bytes, size: int, name: str = "embed") -> bytes:
    """Issue 47, the review: step 0's hook record `name` declared in trace.json, and held in arrays.npz, as a [1, 1, m]
    float32 array of zeros filling `size` bytes with its header (a multiple of CHUNK), deflated: ~size/1000 in the
    file, every CRC right, the array's header and the document agreeing. A loader that holds the record to the
    model card only once its array is read inflates `size` bytes (16 MB from a 3.8 MB file in the review)."""
    shape = (1, 1, (size - 128) // 4)
    doc = json.loads(_members(valid)["trace.json"])
    meta = next(m for m in doc["steps"][0]["hooks"] if m["name"] == name)
    meta.update(shape=list(shape), nbytes=size - 128, has_array=True)
    bombed = _with_npz_member(valid, bomb_member(f"s0.hook.{name}.npy", size, _npy_header(shape)))
    return _zip({**_members(bombed), "trace.json": json.dumps(doc).encode()})


def _deflated_zip(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buffer.getvalue()


def logits_of_a_vocab_deflated_twice(valid: bytes, size: int = 256 * CHUNK) -> bytes:
    """Issue 47, the review: a file true to itself in every shape whose arrays declare 30,000 times its bytes.
    The card's vocabulary is raised until step 0's logits [1, V] fill `size` bytes, of zeros (the later steps keep
    none, as a run over a vocabulary past 65,536 does; every `logits` record says [1, V]); they are deflated in
    arrays.npz, and arrays.npz deflated again in the .zip (a stream of repeated blocks deflates again). Each member
    alone is within what deflate gives; only the file's own length tells the arrays' bytes are not in it."""
    doc = json.loads(_members(valid)["trace.json"])
    assert len(doc["prompts"]) == 1
    vocab = (size - 128) // 4
    doc["model_card"]["config"]["vocab_size"] = vocab
    for i, step in enumerate(doc["steps"]):
        step["arrays"] = [k for k in step["arrays"] if k != "logits" or not i]
        for meta in step["hooks"]:
            if meta["name"] == "logits":
                meta["shape"] = [1, vocab]
    arrays = _members(_members(valid)["arrays.npz"])
    kept = [_stored(name, data) for name, data in arrays.items() if not name.endswith(".logits.npy")]
    npz = _raw_zip([*kept, bomb_member("s0.logits.npy", size, _npy_header((1, vocab)))])
    return _deflated_zip({"trace.json": json.dumps(doc).encode(), "arrays.npz": npz})


def _npy_smaller_than_member(valid: bytes) -> bytes:
    """A member whose .npy header declares 16 floats while the zip says it holds 64 MiB (zeros, deflated)."""
    return _with_npz_member(valid, bomb_member("s0.logits.npy", 64 * CHUNK, _npy_header((16,))))


def _npy_stream_beyond_declared(valid: bytes) -> bytes:
    """The zip and the .npy header both declare a 64 KiB member whose deflate stream goes on to 64 MiB of zeros
    (its CRC the whole stream's): a reader must stop where the declarations do, and find the CRC wrong."""
    header = _npy_header(((2**16 - 128) // 4,))
    name, method, crc, data, _, flags = bomb_member("s0.logits.npy", 64 * CHUNK, header)
    return _with_npz_member(valid, (name, method, crc, data, 2**16, flags))


def _steps_naming_one_array(valid: bytes) -> bytes:
    """trace.json whose 200 steps are all step 0: every one names s0's arrays (read 200 times by a naive loader)."""
    return _with_json(valid, lambda d: json.dumps({**d, "steps": [d["steps"][0]] * 200}).encode())


def _flagged(valid: bytes, flags: int = 0, method: int = zipfile.ZIP_STORED) -> bytes:
    members = _members(valid)
    return _raw_zip([_stored("trace.json", members["trace.json"], flags, method),
                     _stored("arrays.npz", members["arrays.npz"])])


def central_sizes(data: bytes, name: str, stored: int | None = None, size: int | None = None) -> bytes:
    """The archive with the central directory's entry for `name` claiming other sizes (stored, inflated), its local
    header and its data as they were: zipfile's ZipInfo is read from the central directory."""
    at = 0
    while (at := data.find(b"PK\x01\x02", at + 1)) >= 0:
        length = struct.unpack_from("<H", data, at + 28)[0]
        if data[at + 46:at + 46 + length] == name.encode():
            out = bytearray(data)
            for offset, value in ((20, stored), (24, size)):
                if value is not None:
                    struct.pack_into("<L", out, at + offset, value)
            return bytes(out)
    raise KeyError(name)


def _zeros_as_arrays(valid: bytes, size: int = 2**30) -> bytes:
    """arrays.npz replaced by `size` bytes of deflated zeros (~size/1000 in the file, every CRC right): under the
    archive's bound of 2 GiB, it was inflated whole into the temporary folder before anything said "not a zip"."""
    return _raw_zip([_stored("trace.json", _members(valid)["trace.json"]), bomb_member("arrays.npz", size)])


def _size_lies_small(valid: bytes) -> bytes:
    """arrays.npz: 256 MiB of zeros whose central directory says 1 MiB (a reader must stop at what it declares)."""
    return central_sizes(_zeros_as_arrays(valid, 256 * CHUNK), "arrays.npz", size=CHUNK)


def _stored_size_lies_large(valid: bytes) -> bytes:
    """arrays.npz: 1 GiB of zeros whose central directory claims 900 MiB stored, a ratio a reader would let through
    (the file holds ~1 MB)."""
    return central_sizes(_zeros_as_arrays(valid), "arrays.npz", stored=900 * CHUNK)


def _shape(arrays: dict, key: str, value) -> dict:
    return {**arrays, key: value}


def _hook_arrays(valid: bytes, key: str, shape_of, fill: float = 1.0, name: str = "layers.0.k",
                 dtype: str = "float32") -> bytes:
    """Step 1's `name` record (a meta trace keeps none of its arrays) said to hold `key` ("array" or
    "row_norms"), with an array of shape shape_of(declared shape) whose last value is `fill` (the others 1)."""
    import numpy as np

    doc = json.loads(_members(valid)["trace.json"])
    meta = next(m for m in doc["steps"][1]["hooks"] if m["name"] == name)
    meta[f"has_{key}"] = True
    values = np.ones(shape_of(meta["shape"]), dtype)
    values.flat[-1] = fill
    prefix = {"array": "hook", "row_norms": "norms"}[key]
    with_arrays = _with_arrays(valid, lambda a: {**a, f"s1.{prefix}.{name}": values})
    return _zip({**_members(with_arrays), "trace.json": json.dumps(doc).encode()})


# --- a replayed trace trusts nothing (llmviz/trace/check.py) --------------------------------
def _set(path: tuple, value):
    """A builder: trace.json with the field at `path` (keys and list indices) set to `value` (a callable gets the
    old value)."""
    def build(valid: bytes) -> bytes:
        def edit(doc):
            *parents, last = path
            node = doc
            for key in parents:
                node = node[key]
            node[last] = value(node[last]) if callable(value) else value
            return json.dumps(doc).encode()
        return _with_json(valid, edit)
    return build


def _array(key: str, change):
    """A builder: arrays.npz with the array `key` replaced by change(old array)."""
    return lambda valid: _with_arrays(valid, lambda a: {**a, key: change(a[key])})


def _set_at(a, index, value):
    a = a.copy()
    a[index] = value
    return a


def _json_of(size: int):
    """A builder: an archive whose trace.json inflates to `size` bytes of zeros (stored deflated: a few KB here)."""
    return lambda valid: _raw_zip([bomb_member("trace.json", size),
                                   _stored("arrays.npz", _members(valid)["arrays.npz"])])


def _extra_tokens(valid: bytes) -> bytes:
    """Every id of the vocabulary in the token table, most of them shown by no step (a resampled run's earlier
    draws are): accepted, and the table kept to the ids shown."""
    def edit(doc):
        entry = {"piece": "x", "bytes": "78", "text": "x", "special": False}
        doc["tokens"] = {str(i): entry for i in range(doc["model_card"]["config"]["vocab_size"])} | doc["tokens"]
        return json.dumps(doc).encode()
    return _with_json(valid, edit)


CARD = ("model_card",)
CONFIG = ("model_card", "config")


TRACE_FILES = (  # value: valid archive bytes -> hostile bytes
    Case("empty_file", lambda valid: b"", ERROR, "TraceFormatError"),
    Case("not_a_zip", lambda valid: b"this is a text file, not a zip archive\n" * 10, ERROR, "TraceFormatError"),
    Case("png_header", lambda valid: b"\x89PNG\r\n\x1a\n" + bytes(200), ERROR, "TraceFormatError"),
    Case("truncated", lambda valid: valid[: len(valid) // 2], ERROR, "TraceFormatError"),
    Case("truncated_tail", lambda valid: valid[:-10], ERROR, "TraceFormatError"),
    Case("missing_arrays", lambda valid: _zip({"trace.json": _members(valid)["trace.json"]}), ERROR,
         "TraceFormatError"),
    Case("json_invalid_utf8", lambda valid: _zip({**_members(valid), "trace.json": b'{"prompt": "\xff\xfe\xc3("}'}),
         ERROR, "TraceFormatError"),
    Case("json_not_json", lambda valid: _zip({**_members(valid), "trace.json": b"{oops"}), ERROR, "TraceFormatError"),
    Case("json_deeply_nested", lambda valid: _zip({**_members(valid), "trace.json": b"[" * 200_000}), ERROR,
         "TraceFormatError"),
    Case("json_a_list", lambda valid: _zip({**_members(valid), "trace.json": b"[]"}), ERROR, "TraceFormatError"),
    Case("json_future_schema", lambda valid: _with_json(valid, lambda d: json.dumps({**d, "schema_version": 99})
                                                        .encode()), ERROR, "TraceFormatError"),
    Case("json_steps_not_a_list", lambda valid: _with_json(valid, lambda d: json.dumps({**d, "steps": 7}).encode()),
         ERROR, "TraceFormatError"),
    Case("json_unknown_step_field", lambda valid: _with_json(valid, lambda d: json.dumps(
        {**d, "steps": [{**d["steps"][0], "evil": 1}, *d["steps"][1:]]}).encode()), ERROR, "TraceFormatError"),
    Case("shape_ids_1d", lambda valid: _with_arrays(valid, lambda a: _shape(a, "s0.input_ids", a["s0.input_ids"]
                                                                            .ravel())), ERROR, "TraceFormatError"),
    Case("shape_sampled_wrong", lambda valid: _with_arrays(valid, lambda a: _shape(a, "s0.sampled", a["s0.sampled"]
                                                                                   .repeat(3))), ERROR,
         "TraceFormatError"),
    Case("shape_topk_wrong", lambda valid: _with_arrays(valid, lambda a: _shape(a, "s0.topk_logits",
                                                                                a["s0.topk_logits"][:, :2])),
         ERROR, "TraceFormatError"),
    Case("dtype_ids_float", lambda valid: _with_arrays(valid, lambda a: _shape(a, "s0.input_ids", a["s0.input_ids"]
                                                                               .astype("float32"))), ERROR,
         "TraceFormatError"),
    Case("hook_array_wrong_shape", lambda valid: _hook_arrays(valid, "array", lambda s: [s[0], 1]), ERROR,
         "TraceFormatError"),
    Case("row_norms_wrong_shape", lambda valid: _hook_arrays(valid, "row_norms", lambda s: s), ERROR,
         "TraceFormatError"),
    Case("row_norms_declared_missing", lambda valid: _with_json(valid, lambda d: json.dumps({**d, "steps": [
        d["steps"][0], {**d["steps"][1], "hooks": [{**m, "has_row_norms": True} for m in d["steps"][1]["hooks"]]},
        *d["steps"][2:]]}).encode()), ERROR, "TraceFormatError"),
    Case("row_norms_well_formed", lambda valid: _hook_arrays(valid, "row_norms", lambda s: s[:-1]), OK),
    Case("array_missing", lambda valid: _with_arrays(valid, lambda a: {k: v for k, v in a.items()
                                                                       if k != "s0.sampled"}), ERROR,
         "TraceFormatError"),
    Case("pickle_inside_npz", _pickled_member, ERROR, "TraceFormatError"),
    Case("npz_is_a_pickle", lambda valid: _zip({**_members(valid), "arrays.npz": pickle.dumps({"a": [1, 2]})}),
         ERROR, "TraceFormatError"),
    Case("zip_bomb", _bomb, ERROR, "TraceFormatError"),
    Case("npz_bomb", _npz_bomb, ERROR, "TraceFormatError"),
    Case("npy_header_claims_4tb", _huge_header, ERROR, "TraceFormatError"),
    Case("lying_declared_size", _lying_size, ERROR, "TraceFormatError"),
    # an array's .npy header against its member, its stream against both, each array read once
    Case("npy_header_smaller_than_its_member", _npy_smaller_than_member, ERROR, "TraceFormatError"),
    Case("npy_stream_beyond_its_declared_size", _npy_stream_beyond_declared, ERROR, "TraceFormatError"),
    Case("steps_naming_one_array_200_times", _steps_naming_one_array, ERROR, "TraceFormatError"),
    # bounded where the archive is read, whoever calls (a script's default bound is 2 GiB)
    Case("logits_of_zeros_under_the_local_bound", lambda valid: zero_array(valid, 256 * CHUNK), ERROR,
         "TraceFormatError"),
    Case("arrays_npz_of_zeros_under_the_archive_bound", _zeros_as_arrays, ERROR, "TraceFormatError"),
    Case("central_directory_size_lies_small", _size_lies_small, ERROR, "TraceFormatError"),
    Case("central_directory_stored_size_lies_large", _stored_size_lies_large, ERROR, "TraceFormatError"),
    # the review: a hook record's shape held to the model and its step before any array is read, and the
    # arrays' declared bytes to the file's own length
    Case("hook_of_zeros_shaped_as_its_record_says", lambda valid: hook_of_zeros(valid, 256 * CHUNK), ERROR,
         "TraceFormatError"),
    Case("hook_tokens_not_its_steps", _set(("steps", 1, "hooks", 0, "shape"), lambda s: [s[0], s[1] + 1, *s[2:]]),
         ERROR, "TraceFormatError"),
    Case("logits_of_a_vocab_deflated_twice", logits_of_a_vocab_deflated_twice, ERROR, "TraceFormatError"),
    Case("archive_of_102_members", lambda valid: _zip({**_members(valid), **{f"extra/{i}.txt": b""
                                                                              for i in range(100)}}),
         ERROR, "TraceFormatError"),
    Case("encrypted_member", lambda valid: _flagged(valid, flags=0x1), ERROR, "TraceFormatError"),
    Case("unknown_compression", lambda valid: _flagged(valid, method=99), ERROR, "TraceFormatError"),
    Case("path_traversal_extra_members", lambda valid: _zip({**_members(valid), "../../evil.txt": b"owned",
                                                            "/tmp/evil-abs.txt": b"owned"}), OK),
    # the card, bounded as a pasted config and agreeing with the arrays
    Case("card_num_layers_30_million", _set((*CONFIG, "num_layers"), 30_000_000), ERROR, "TraceFormatError"),
    Case("card_num_layers_more_than_timed", _set((*CONFIG, "num_layers"), 5), ERROR, "TraceFormatError"),
    Case("card_intermediate_size_700k", _set((*CONFIG, "intermediate_size"), 700_000), ERROR, "TraceFormatError"),
    Case("card_vocab_a_billion", _set((*CONFIG, "vocab_size"), 10**9), ERROR, "TraceFormatError"),
    Case("card_vocab_below_the_ids", _set((*CONFIG, "vocab_size"), 10), ERROR, "TraceFormatError"),
    Case("card_num_layers_text", _set((*CONFIG, "num_layers"), "4"), ERROR, "TraceFormatError"),
    Case("card_vocab_float", _set((*CONFIG, "vocab_size"), 4096.0), ERROR, "TraceFormatError"),
    Case("card_config_a_string", _set(CONFIG, "llama"), ERROR, "TraceFormatError"),
    Case("card_config_unknown_field", _set(CONFIG, lambda c: {**c, "evil": 1}), ERROR, "TraceFormatError"),
    Case("card_family_markdown", _set((*CARD, "family"), "![x](http://evil.example/a.png)"), ERROR,
         "TraceFormatError"),
    Case("card_name_a_number", _set((*CARD, "name"), 5), ERROR, "TraceFormatError"),
    Case("card_weight_bytes_negative", _set((*CARD, "weight_bytes"), -1), ERROR, "TraceFormatError"),
    # the document's own fields
    Case("json_over_its_cap", _json_of(40 * 2**20), ERROR, "TraceFormatError"),
    Case("json_three_million_lists", lambda valid: _zip({**_members(valid), "trace.json": b"[" + b"[]," * 3_000_000
                                                         + b"[]]"}), ERROR, "TraceFormatError"),  # 9 MB: 190 MB parsed
    Case("prompts_200k_times", _set(("prompts",), lambda p: p * 200_000), ERROR, "TraceFormatError"),
    Case("prompts_first_not_the_prompt", _set(("prompts",), ["another prompt"]), ERROR, "TraceFormatError"),
    Case("prompt_a_number", _set(("prompt",), 7), ERROR, "TraceFormatError"),
    Case("seed_text", _set(("seed",), "0"), ERROR, "TraceFormatError"),
    Case("seed_2_to_the_70", _set(("seed",), 2**70), ERROR, "TraceFormatError"),
    Case("engine_config_a_list", _set(("engine_config",), []), ERROR, "TraceFormatError"),
    Case("engine_config_unknown_dtype", _set(("engine_config", "dtype"), "fp64"), ERROR, "TraceFormatError"),
    Case("engine_config_sampling_text", _set(("engine_config", "sampling"), "hot"), ERROR, "TraceFormatError"),
    Case("step_sampling_nan", _set(("steps", 1, "sampling", "temperature"), math.nan), ERROR, "TraceFormatError"),
    Case("step_sampling_missing", _set(("steps", 1, "sampling"), {}), ERROR, "TraceFormatError"),
    Case("token_beyond_vocab", _set(("tokens",), lambda t: {**t, "99999": {"piece": "x", "bytes": "78", "text": "x"}}),
         ERROR, "TraceFormatError"),
    Case("token_key_not_decimal", _set(("tokens",), lambda t: {f" {k}": v for k, v in t.items()}), ERROR,
         "TraceFormatError"),
    Case("token_entry_piece_number", _set(("tokens",), lambda t: {k: {**v, "piece": 5} for k, v in t.items()}), ERROR,
         "TraceFormatError"),
    Case("token_entry_bytes_not_hex", _set(("tokens",), lambda t: {k: {**v, "bytes": "zz"} for k, v in t.items()}),
         ERROR, "TraceFormatError"),
    Case("token_entry_a_list", _set(("tokens",), lambda t: {k: [1] for k in t}), ERROR, "TraceFormatError"),
    Case("token_table_every_id_of_the_vocab", _extra_tokens, OK),
    Case("kv_a_list", _set(("steps", 1, "kv"), []), ERROR, "TraceFormatError"),
    Case("kv_bytes_allocated_zero", _set(("steps", 1, "kv", "bytes_allocated"), 0), ERROR, "TraceFormatError"),
    Case("kv_bytes_allocated_negative", _set(("steps", 1, "kv", "bytes_allocated"), -4096), ERROR,
         "TraceFormatError"),
    Case("kv_layers_30_million", _set(("steps", 1, "kv", "layers"), 30_000_000), ERROR, "TraceFormatError"),
    Case("kv_seq_len_text", _set(("steps", 0, "kv", "seq_len"), "3"), ERROR, "TraceFormatError"),
    Case("timings_a_number", _set(("steps", 1, "timings"), 5), ERROR, "TraceFormatError"),
    Case("timings_total_text", _set(("steps", 1, "timings", "total_ms"), "fast"), ERROR, "TraceFormatError"),
    Case("timings_span_negative", _set(("steps", 0, "timings", "spans_ms", "embed"), -1.0), ERROR,
         "TraceFormatError"),
    Case("memory_text", _set(("steps", 1, "memory"), "lots"), ERROR, "TraceFormatError"),
    Case("memory_rss_negative", _set(("steps", 1, "memory", "rss_bytes"), -1), ERROR, "TraceFormatError"),
    Case("finished_unknown", _set(("steps", 2, "finished"), "**evil**"), ERROR, "TraceFormatError"),
    Case("hook_name_undeclared", _set(("steps", 1, "hooks", 0, "name"), "layers.0.evil"), ERROR, "TraceFormatError"),
    Case("hook_layer_beyond_the_card", _set(("steps", 1, "hooks", 2, "name"), "layers.99.attn_in"), ERROR,
         "TraceFormatError"),
    Case("hook_shape_negative", _set(("steps", 1, "hooks", 0, "shape"), [1, -1, 256]), ERROR, "TraceFormatError"),
    Case("hook_has_array_text", _set(("steps", 1, "hooks", 0, "has_array"), "yes"), ERROR, "TraceFormatError"),
    # the arrays: dtypes, shapes and ranges
    Case("positions_negative", _array("s0.positions", lambda a: _set_at(a, (0, 0), -5)), ERROR, "TraceFormatError"),
    Case("positions_pad_where_a_token_is", _array("s0.positions", lambda a: _set_at(a, (0, 0), -1)), ERROR,
         "TraceFormatError"),
    Case("sampled_below_the_pad", _array("s1.sampled", lambda a: a * 0 - 7), ERROR, "TraceFormatError"),
    Case("logits_strings", _array("s0.logits", lambda a: a.astype("U8")), ERROR, "TraceFormatError"),
    Case("logits_3d", _array("s0.logits", lambda a: a[:, None, :]), ERROR, "TraceFormatError"),
    Case("logits_empty", _array("s0.logits", lambda a: a[:, :0]), ERROR, "TraceFormatError"),
    Case("logits_nan", _array("s1.logits", lambda a: _set_at(a, (0, 3), math.nan)), ERROR, "TraceFormatError"),
    Case("logits_neg_inf", _array("s1.logits", lambda a: _set_at(a, (0, 3), -math.inf)), OK),  # a masked token
    Case("logsumexp_inf", _array("s1.logsumexp", lambda a: a + math.inf), ERROR, "TraceFormatError"),
    Case("topk_id_beyond_vocab", _array("s1.topk_ids", lambda a: _set_at(a, (0, 1), 10**6)), ERROR,
         "TraceFormatError"),
    Case("lens_probs_complex", _array("s1.lens_probs", lambda a: a.astype("complex64")), ERROR, "TraceFormatError"),
    Case("lens_ids_float", _array("s1.lens_ids", lambda a: a.astype("float64")), ERROR, "TraceFormatError"),
    Case("lens_one_layer_too_many", _array("s1.lens_ids", lambda a: a.repeat(2, axis=0)), ERROR, "TraceFormatError"),
    Case("hook_array_nan", lambda valid: _hook_arrays(valid, "array", lambda s: s, math.nan), ERROR,
         "TraceFormatError"),
    Case("hook_array_inf", lambda valid: _hook_arrays(valid, "array", lambda s: s, math.inf), ERROR,
         "TraceFormatError"),
    Case("hook_array_integers", lambda valid: _hook_arrays(valid, "array", lambda s: s, dtype="int32"), ERROR,
         "TraceFormatError"),
    Case("scores_masked_neg_inf", lambda valid: _hook_arrays(valid, "array", lambda s: s, -math.inf,
                                                             "layers.0.scores"), OK),  # what the mask writes
    Case("row_norms_nan", lambda valid: _hook_arrays(valid, "row_norms", lambda s: s[:-1], math.nan), ERROR,
         "TraceFormatError"),
    Case("row_norms_negative", lambda valid: _hook_arrays(valid, "row_norms", lambda s: s[:-1], -2.0), ERROR,
         "TraceFormatError"),
)

# --- request traces (serve-sim --trace FILE; the Serving page's upload) -------------------------------------
REQUEST_TRACES = (  # value: the file's bytes
    Case("not_json", b"{not json", ERROR, "TraceFormatError"),
    Case("invalid_utf8", b'{"requests": [{"prompt_ids": [1], "output_len": 2, "x": "\xff"}]}', ERROR,
         "TraceFormatError"),
    Case("deeply_nested", b"[" * 200_000, ERROR, "TraceFormatError"),
    Case("no_requests", b'{"requests": []}', ERROR, "TraceFormatError"),
    Case("prompt_ids_a_string", b'{"requests": [{"prompt_ids": "hello", "output_len": 2}]}', ERROR,
         "TraceFormatError"),
    Case("negative_token", b'{"requests": [{"prompt_ids": [-5], "output_len": 2}]}', ERROR, "TraceFormatError"),
    Case("nan_temperature", b'{"requests": [{"prompt_ids": [1, 2], "output_len": 2, "temperature": NaN}]}', ERROR,
         "TraceFormatError"),
    Case("huge_output_len", b'{"requests": [{"prompt_ids": [1, 2], "output_len": 1000000000}]}', ERROR,
         "ConfigError"),
    Case("token_beyond_vocab", b'{"requests": [{"prompt_ids": [99999999], "output_len": 2}]}', ERROR, "ConfigError"),
    Case("over_two_megabytes", b'{"requests": [' + b'{"prompt_ids": [1], "output_len": 1},' * 60_000 + b"]}", ERROR,
         "TraceFormatError"),
    # numbers read strictly (1e400 is a JSON float, inf; a bool or a string is not a number), a key
    # written twice is an error, not silently the last; a UTF-8 byte order mark is accepted
    Case("id_1e400", b'{"requests": [{"id": 1e400, "prompt_ids": [1, 2], "output_len": 2}]}', ERROR,
         "TraceFormatError"),
    Case("top_k_1e400", b'{"requests": [{"prompt_ids": [1, 2], "output_len": 2, "top_k": 1e400}]}', ERROR,
         "TraceFormatError"),
    Case("id_true", b'{"requests": [{"id": true, "prompt_ids": [1, 2], "output_len": 2}]}', ERROR,
         "TraceFormatError"),
    Case("top_k_a_string", b'{"requests": [{"prompt_ids": [1, 2], "output_len": 2, "top_k": "7"}]}', ERROR,
         "TraceFormatError"),
    Case("temperature_a_string", b'{"requests": [{"prompt_ids": [1, 2], "output_len": 2, "temperature": "0.5"}]}',
         ERROR, "TraceFormatError"),
    Case("duplicate_key_in_a_request", b'{"requests": [{"prompt_ids": [1, 2], "output_len": 2, '
                                       b'"output_len": 1000000000}]}', ERROR, "TraceFormatError"),
    Case("duplicate_requests_key", b'{"requests": [], "requests": [{"prompt_ids": [1, 2], "output_len": 2}]}',
         ERROR, "TraceFormatError"),  # the last one alone is a valid trace
    Case("utf8_bom", b"\xef\xbb\xbf" + b'{"requests": [{"prompt_ids": [5, 6, 7], "output_len": 2, "seed": 1}, '
                                       b'{"prompt_ids": [8, 9], "output_len": 3, "temperature": 0.8, "seed": 2}]}', OK),
    Case("two_small_requests", b'{"requests": [{"prompt_ids": [5, 6, 7], "output_len": 2, "seed": 1}, '
                               b'{"prompt_ids": [8, 9], "output_len": 3, "temperature": 0.8, "seed": 2}]}', OK),
)

# --- prompts files (generate --prompts-file) ----------------------------------------------------------------
PROMPT_FILES = (
    Case("latin1", "café\n".encode("latin-1"), ERROR, "LlmvizError"),
    Case("utf16_with_bom", "hello\n".encode("utf-16"), ERROR, "LlmvizError"),
    Case("only_blank_lines", b"\n  \n\t\n", ERROR, "LlmvizError"),
    Case("nul_and_crlf", b"first\x00line\r\nsecond line\r\n", OK),
)


# --- .po folders (the training commands' --zh-po / PO_FOLDER; value: builder(tmp) -> folder)
PO_HEADER = 'msgid ""\nmsgstr ""\n"Language: zh_CN\\n"\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'


def _po_folder(files: dict):
    """A builder: a folder holding `files` (name -> bytes or text; None: a FIFO; a dict: a folder of that name)."""
    import os

    def build(tmp: Path) -> Path:
        folder = tmp / "po"
        folder.mkdir(parents=True)
        for name, data in files.items():
            path = folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            if data is None:
                os.mkfifo(path)
            elif isinstance(data, dict):
                path.mkdir()
            else:
                path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
        return folder
    return build


def _a_file(tmp: Path) -> Path:
    (tmp / "po.txt").write_text(PO_HEADER + 'msgid "a"\nmsgstr "是"\n', encoding="utf-8")
    return tmp / "po.txt"


PO_FOLDERS = (
    Case("missing_folder", lambda tmp: tmp / "no-such-folder", ERROR, "ConfigError"),
    Case("empty_folder", _po_folder({}), ERROR, "ConfigError"),
    Case("a_file_not_a_folder", _a_file, ERROR, "ConfigError"),
    Case("binary_po", _po_folder({"library/x.po": bytes(range(256)) * 16}), ERROR, "ConfigError"),
    Case("fifo_po", _po_folder({"x.po": None}), ERROR, "ConfigError"),  # no writer: a read would block forever
    Case("folder_named_po", _po_folder({"x.po": {}}), ERROR, "ConfigError"),
    Case("po_with_nul", _po_folder({"x.po": PO_HEADER + 'msgid "a"\nmsgstr "是\x00"\n'}), ERROR, "ConfigError"),
    Case("po_one_line_naming_a_file", _po_folder({"x.po": "/etc/hostname"}), ERROR, "ConfigError"),  # polib reads it
    Case("malformed_po_syntax", _po_folder({"x.po": PO_HEADER + 'msgid "a"\nmsgstr "是"\nxyz\n'}), ERROR,
         "ConfigError"),
    Case("malformed_po_read_as_empty", _po_folder({"x.po": 'msgid "a\nmsgstr "是\n'}), ERROR, "ConfigError"),
    Case("no_chinese_text", _po_folder({"x.po": PO_HEADER + 'msgid "a"\nmsgstr "b"\n'}), ERROR, "ConfigError"),
)


# --- model folders (value: builder(source folder, destination folder)) -------------------------------------
def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def _config(changes):
    def build(src: Path, dst: Path) -> Path:
        _copy(src, dst)
        cfg = json.loads((dst / "config.json").read_text())
        cfg.pop("rope_parameters", None)  # transformers 5 prefers it to rope_scaling / rope_theta
        cfg = changes(cfg) if callable(changes) else {**cfg, **changes}
        (dst / "config.json").write_text(json.dumps(cfg))
        return dst
    return build


def _file(name: str, data: bytes | None):
    def build(src: Path, dst: Path) -> Path:
        _copy(src, dst)
        if data is None:
            (dst / name).unlink()
        else:
            (dst / name).write_bytes(data)
        return dst
    return build


def _tensors(edit):
    def build(src: Path, dst: Path) -> Path:
        from safetensors.torch import load_file, save_file

        _copy(src, dst)
        tensors = load_file(str(dst / "model.safetensors"))
        save_file(edit(tensors), str(dst / "model.safetensors"), metadata={"format": "pt"})
        return dst
    return build


def _first(tensors: dict, part: str) -> str:
    return next(k for k in sorted(tensors) if part in k)


def _drop(t):
    return {k: v for k, v in t.items() if k != _first(t, "q_proj")}


def _misshape(t):
    import torch

    return {**t, _first(t, "q_proj"): torch.zeros(3, 5)}


def _integers(t):
    import torch

    return {**t, _first(t, "q_proj"): t[_first(t, "q_proj")].round().to(torch.int64)}


def _nan(t):
    return {**t, _first(t, "embed_tokens"): t[_first(t, "embed_tokens")] * math.nan}


def _overflow(t):
    """The final norm's gain x 1e5: the logits leave fp16's range (|x| > 65504) while K and V stay inside it."""
    return {**t, "model.norm.weight": t["model.norm.weight"] * 1e5}


def _extra_layer(t):
    return {**t, **{k.replace("layers.1.", "layers.2."): v.clone() for k, v in t.items() if "layers.1." in k}}


def _shrink_vocab(src: Path, dst: Path) -> Path:
    """Embedding rows cut to 200 while the tokenizer still gives ids up to ~300."""
    from safetensors.torch import load_file, save_file

    _config({"vocab_size": 200})(src, dst)
    tensors = load_file(str(dst / "model.safetensors"))
    tensors = {k: v[:200] if "embed_tokens" in k or "lm_head" in k else v for k, v in tensors.items()}
    save_file(tensors, str(dst / "model.safetensors"), metadata={"format": "pt"})
    return dst


def _pickled_weights(src: Path, dst: Path) -> Path:
    import torch

    _copy(src, dst)
    torch.save({"x": torch.ones(2)}, dst / "model.safetensors")  # a pickle under the safetensors name
    return dst


def _bin_only(src: Path, dst: Path) -> Path:
    _copy(src, dst)
    (dst / "model.safetensors").rename(dst / "pytorch_model.bin")
    return dst


def _index(doc):
    def build(src: Path, dst: Path) -> Path:
        _copy(src, dst)
        (dst / "model.safetensors.index.json").write_text(doc if isinstance(doc, str) else json.dumps(doc))
        return dst
    return build


REMOTE_CODE = "import pathlib\npathlib.Path(__file__).with_name('REMOTE_CODE_RAN').write_text('ran')\n"


def _remote_code(model_type: str):
    """A folder asking for its own code (auto_map): it must never run (no trust_remote_code)."""
    def build(src: Path, dst: Path) -> Path:
        _config({"model_type": model_type, "auto_map": {"AutoConfig": "evil.EvilConfig",
                                                        "AutoModelForCausalLM": "evil.EvilModel",
                                                        "AutoTokenizer": ["evil.EvilTokenizer", None]}})(src, dst)
        (dst / "evil.py").write_text(REMOTE_CODE)
        cfg = json.loads((dst / "tokenizer_config.json").read_text())
        (dst / "tokenizer_config.json").write_text(json.dumps({**cfg, "auto_map": {"AutoTokenizer": [
            "evil.EvilTokenizer", None]}}))
        return dst
    return build


RUNS = "runs"  # a model case that loads; the error (or the correct result) comes from running a prompt

# (case, the model_factory kind to start from, whether it must load and run, dtype)
MODEL_FOLDERS = (
    (Case("absurd_layers", _config({"num_hidden_layers": 10**6}), ERROR, "WeightLoadError"), "llama_tied"),
    (Case("absurd_vocab", _config({"vocab_size": 10**12}), ERROR, "WeightLoadError"), "llama_tied"),
    (Case("absurd_hidden", _config({"hidden_size": 10**9}), ERROR, "LlmvizError"), "llama_tied"),
    (Case("absurd_intermediate", _config({"intermediate_size": 10**12}), ERROR, "WeightLoadError"), "llama_tied"),
    (Case("absurd_gpt2_positions", _config({"n_positions": 10**12}), ERROR, "WeightLoadError"), "gpt2"),
    (Case("absurd_context", _config({"max_position_embeddings": 10**12}), OK), "llama_tied"),
    (Case("negative_hidden", _config({"n_embd": -64}), ERROR, "LlmvizError"), "gpt2"),
    (Case("zero_heads", _config({"num_attention_heads": 0}), ERROR, "LlmvizError"), "llama_tied"),
    (Case("heads_as_text", _config({"n_head": "four"}), ERROR, "ModelConfigError"), "gpt2"),
    (Case("norm_eps_nan", _config({"rms_norm_eps": math.nan}), ERROR, "ConfigError"), "llama_tied"),
    (Case("rope_theta_zero", _config({"rope_theta": 0}), ERROR, "ConfigError"), "llama_tied"),
    (Case("rope_theta_nan", _config({"rope_theta": math.nan}), ERROR, "ConfigError"), "llama_tied"),
    (Case("rope_theta_text", _config({"rope_theta": "abc"}), ERROR, "ModelConfigError"), "llama_tied"),
    (Case("rope_scaling_a_list", _config({"rope_scaling": [1, 2]}), ERROR, "ModelConfigError"), "llama_tied"),
    (Case("rope_scaling_a_string", _config({"rope_scaling": "oops"}), ERROR, "ModelConfigError"), "llama_tied"),
    (Case("rope_scaling_missing_keys", _config({"rope_scaling": {"rope_type": "llama3", "factor": 8.0}}), ERROR,
          "ModelConfigError"), "llama_tied"),
    (Case("rope_scaling_unknown_type", _config({"rope_scaling": {"rope_type": "yarn", "factor": 2.0}}), ERROR,
          "UnsupportedArchitectureError"), "llama_tied"),
    (Case("rope_scaling_nan_factor", _config({"rope_scaling": {"rope_type": "linear", "factor": math.nan}}), ERROR,
          "ModelConfigError"), "llama_tied"),
    (Case("rope_scaling_inf_factor", _config({"rope_scaling": {"rope_type": "linear", "factor": math.inf}}), ERROR,
          "ModelConfigError"), "llama_tied"),
    (Case("config_a_list", _config(lambda c: [c]), ERROR, "ModelConfigError"), "llama_tied"),
    (Case("config_model_type_a_list", _config({"model_type": ["llama"]}), ERROR, "UnsupportedArchitectureError"),
     "llama_tied"),
    (Case("config_unknown_model_type", _config({"model_type": "bert"}), ERROR, "UnsupportedArchitectureError"),
     "gpt2"),
    (Case("config_not_utf8", _file("config.json", b"\xff\xfe{\x00"), ERROR, "ModelNotFoundError"), "llama_tied"),
    (Case("config_empty", _file("config.json", b""), ERROR, "ModelNotFoundError"), "llama_tied"),
    (Case("config_deeply_nested", _file("config.json", b"[" * 200_000), ERROR, "ModelNotFoundError"),
     "llama_tied"),
    (Case("config_missing", _file("config.json", None), ERROR, "ModelNotFoundError"), "llama_tied"),
    (Case("missing_tensor", _tensors(_drop), ERROR, "WeightLoadError"), "llama_tied"),
    (Case("misshaped_tensor", _tensors(_misshape), ERROR, "WeightLoadError"), "llama_tied"),
    (Case("integer_tensor", _tensors(_integers), ERROR, "WeightLoadError"), "llama_tied"),
    (Case("extra_layer", _tensors(_extra_layer), ERROR, "WeightLoadError"), "llama_tied"),
    (Case("pytorch_model_bin_only", _bin_only, ERROR, "WeightLoadError"), "gpt2"),
    (Case("pickle_named_safetensors", _pickled_weights, ERROR, "WeightLoadError"), "llama_tied"),
    (Case("garbage_safetensors", _file("model.safetensors", bytes(100)), ERROR, "WeightLoadError"), "llama_tied"),
    (Case("empty_safetensors", _file("model.safetensors", b""), ERROR, "WeightLoadError"), "llama_tied"),
    (Case("index_not_json", _index("{oops"), ERROR, "WeightLoadError"), "llama_tied"),
    (Case("index_without_weight_map", _index({}), ERROR, "WeightLoadError"), "llama_tied"),
    (Case("index_path_traversal", _index({"weight_map": {"a": "../../outside.safetensors"}}), ERROR,
          "WeightLoadError"), "llama_tied"),
    (Case("index_names_a_pickle", _index({"weight_map": {"a": "pytorch_model.bin"}}), ERROR, "WeightLoadError"),
     "llama_tied"),
    (Case("tokenizer_garbage", _file("tokenizer.json", b"{bad"), ERROR, "ModelNotFoundError"), "llama_tied"),
    (Case("tokenizer_bigger_than_vocab", _shrink_vocab, RUNS, "ModelConfigError"), "llama_tied"),
    (Case("nan_weights", _tensors(_nan), RUNS, "LogitsNotFiniteError"), "llama_tied"),
    (Case("fp16_overflow", _tensors(_overflow), RUNS, "LogitsNotFiniteError"), "llama_tied"),
    (Case("remote_code_unknown_type", _remote_code("evil"), ERROR, "UnsupportedArchitectureError"), "llama_tied"),
    (Case("remote_code_known_type", _remote_code("llama"), OK), "llama_tied"),
)
DTYPE_OF = {"fp16_overflow": "fp16"}  # the dtype a model case loads in (default fp32)


def count() -> int:
    """Hostile inputs in the catalogue (numeric ones counted per value)."""
    return (len(PROMPTS) + len(NOT_TEXT) + len(PROMPT_IDS) + len(CONTROLS) * len(VALUES) + len(DEVICES)
            + len(TRACE_FILES) + len(REQUEST_TRACES) + len(PROMPT_FILES) + len(MODEL_FOLDERS) + len(PO_FOLDERS))
