"""Trace: what one run recorded, as plain dataclasses of numbers and numpy arrays (no torch).

This is the only engine module the upper layers read, so every page can be drawn (and a class can
replay a run) with no model and no torch. Saved as `trace.json` + `arrays.npz`, loaded with
`allow_pickle=False`. Tensors keep their batch dimension: row i of every array is sequence i; padding
is -1 in input_ids, positions and sampled.

Saving writes each file under a temporary name in the folder and renames it into place when complete, so a
failed or killed write never leaves a half file. Loading a file from elsewhere (an upload) trusts nothing:
each archive's members are checked as declared before anything is unpacked, and the .zip's two files are not
inflated past 100 times what they store (llmviz/trace/archive.py: a zip bomb is refused unread, whoever the
caller); every array's header is checked against the bytes that hold it, and before any array is read the arrays'
declared bytes against the caller's bound and against ARRAY_INFLATION times the bytes they came in (arrays.npz's,
and the archive's), each step's tokens (its input_ids' header) against the model's context, and every hook
record's shape against the model card's dimensions and its step's tokens (check_hook_shape: a record
and its array could agree on 2 GB of deflated zeros); each array's shape is then checked against the one the
document gives it before it is read (then read never beyond its declared size: llmviz/trace/arrays.py); every
failure is a TraceFormatError.

Schema 2 (engine 2) added the batch's prompts and each row's finished reason; schema 1 traces (one
prompt, no padding) load through `_migrate_v1`. Schema 3 added a hook record's `row_norms` (kept when its array
was dropped); a schema 2 file reads as one where no record has them.
"""

from __future__ import annotations

import io
import json
import lzma
import os
import secrets
import tempfile
import zipfile
import zlib
from dataclasses import dataclass, field, fields
from pathlib import Path

import numpy as np

from llmviz.errors import LlmvizError, TraceFormatError
from llmviz.trace.archive import check_arrays_inflation, checked_members, copy_member
from llmviz.trace.arrays import LOCAL_ARRAY_BYTES, MAX_UNPACKED_BYTES, BoundedArrays
from llmviz.trace.check import (
    MAX_TRACE_JSON_BYTES,
    check_document,
    check_hook_shape,
    check_json_text,
    check_prompts,
    check_steps,
    damaged,
    json_too_large,
    model_dims,
    token_table,
)
from llmviz.trace.schedule import schedule_of, step_record

SCHEMA_VERSION = 3
RECOMPUTED_NOTE = "recomputed"  # how the note of a rebuilt map begins (engine/capture.py); read for older traces
READABLE_VERSIONS = (1, 2, 3)
_RECORD_ARRAYS = {"array": "hook", "row_norms": "norms"}  # a hook record's arrays -> their key in arrays.npz
_STEP_ARRAYS = ("input_ids", "positions", "sampled", "logits", "topk_ids", "topk_logits", "logsumexp",
                "lens_ids", "lens_probs")
FILES = ("trace.json", "arrays.npz")
MAX_MEMBERS = 64  # in a trace's .zip: its two files, and a few a person may have added (never read)
# What a damaged file or archive raises on the way in (zipfile: RuntimeError for an encrypted member,
# NotImplementedError for an unknown compression; json: RecursionError for absurd nesting).
_DAMAGED = (OSError, ValueError, EOFError, RuntimeError, zipfile.BadZipFile, zlib.error, lzma.LZMAError)
_MISSING = (KeyError, TypeError, AttributeError, IndexError)  # a field or an array the document does not have


@dataclass(slots=True)
class HookRecord:
    name: str
    shape: list
    dtype: str
    nbytes: int
    norm: float | None
    note: str = ""
    array: np.ndarray | None = None  # float32 copy, only at capture level "full"
    # True for an attention map (scores, probs) that the timed backend never built: rebuilt after the timed region
    # from the recorded q and k (engine/capture.py). A check of the map against q and k is then circular.
    recomputed: bool = False
    # The L2 norm of each vector along the array's last axis ([..., hd] -> [...]), kept when the array itself is
    # dropped to bound a long run's memory (llmviz/trace/budget.py): the cache grid colours every K row by it.
    row_norms: np.ndarray | None = None


@dataclass
class StepTrace:
    index: int  # 0 = prefill
    phase: str  # "prefill" | "decode"
    input_ids: np.ndarray  # [b, n] int64, -1 in pad slots
    positions: np.ndarray  # [b, n] int64, -1 in pad slots
    sampled: np.ndarray  # [b] int64, -1 for a row that had already finished
    logits: np.ndarray | None  # [b, V] float32 when the vocab is small enough to keep whole
    topk_ids: np.ndarray  # [b, K] the K most likely next tokens
    topk_logits: np.ndarray  # [b, K]
    logsumexp: np.ndarray  # [b] so that top-k probabilities are exact without the full logits
    lens_ids: np.ndarray | None = None  # [L, b, k] logit lens: each layer's top tokens
    lens_probs: np.ndarray | None = None  # [L, b, k]
    hooks: list = field(default_factory=list)  # HookRecord
    kv: dict = field(default_factory=dict)  # KV snapshot: layout, shapes, bytes allocated and used
    timings: dict = field(default_factory=dict)  # spans_ms, total_ms, device, threads, capture
    memory: dict = field(default_factory=dict)  # rss_bytes (+ cuda_* on a GPU)
    sampling: dict = field(default_factory=dict)  # the sampling settings this step's token was drawn with
    finished: str = ""  # "eos" | "max_seq_len" once every row has finished, "" while the run can go on
    row_finished: list = field(default_factory=list)  # per row: its finished reason, "" while it runs

    def hook(self, name: str) -> HookRecord:
        for record in self.hooks:
            if record.name == name:
                return record
        raise TraceFormatError(f"step {self.index} has no hook record {name!r}: record the run with capture full "
                               "(and a filter that keeps it)", code="trace_no_hook", name=name)


@dataclass
class RunTrace:
    model_card: dict
    prompt: str
    engine_config: dict
    seed: int
    tokens: dict = field(default_factory=dict)  # id -> {"piece", "bytes" (hex), "text"}
    steps: list = field(default_factory=list)  # StepTrace
    prompts: list = field(default_factory=list)  # one text per row; prompts[0] == prompt
    # a serving scheduler's log of the steps this run's rows come from (trace/schedule.py: which request held which
    # slot, the tokens fed and of which kind, blocks, preemptions), when a request of a serving run is opened alone
    schedule: list = field(default_factory=list)
    schema_version: int = SCHEMA_VERSION

    @property
    def rows(self) -> int:
        return int(self.steps[0].input_ids.shape[0]) if self.steps else len(self.prompts)

    def row_prompt_ids(self, row: int) -> list[int]:
        return [int(i) for i in self.steps[0].input_ids[row] if i >= 0] if self.steps else []

    def row_output_ids(self, row: int) -> list[int]:
        return [int(s.sampled[row]) for s in self.steps if s.sampled[row] >= 0]

    @property
    def prompt_ids(self) -> list[int]:
        return self.row_prompt_ids(0)

    @property
    def output_ids(self) -> list[int]:
        return self.row_output_ids(0)

    def save(self, folder: str | Path) -> Path:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        arrays: dict[str, np.ndarray] = {}
        steps = []
        for step in self.steps:
            entry = {k: v for k, v in step.__dict__.items() if k not in _STEP_ARRAYS and k != "hooks"}
            for key in _STEP_ARRAYS:
                value = getattr(step, key)
                if value is not None:
                    arrays[f"s{step.index}.{key}"] = np.asarray(value)
            entry["arrays"] = [k for k in _STEP_ARRAYS if getattr(step, k) is not None]
            entry["hooks"] = []
            for record in step.hooks:
                meta = {f.name: getattr(record, f.name) for f in fields(record) if f.name not in _RECORD_ARRAYS}
                for key, prefix in _RECORD_ARRAYS.items():
                    value = getattr(record, key)
                    meta[f"has_{key}"] = value is not None
                    if value is not None:
                        arrays[f"s{step.index}.{prefix}.{record.name}"] = value
                entry["hooks"].append(meta)
            steps.append(entry)
        doc = {"schema_version": self.schema_version, "model_card": self.model_card, "prompt": self.prompt,
               "engine_config": self.engine_config, "seed": self.seed, "prompts": self.prompts,
               "tokens": {str(k): v for k, v in self.tokens.items()}, "steps": steps,
               "schedule": [step_record(r).to_dict() for r in self.schedule]}
        try:
            text = json.dumps(doc, ensure_ascii=False, indent=1).encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate (a path from undecodable bytes): escaped, the file stays UTF-8
            text = json.dumps(doc, indent=1).encode("ascii")
        _write_atomic(folder / "arrays.npz", lambda f: np.savez_compressed(f, **arrays))
        _write_atomic(folder / "trace.json", lambda f: f.write(text))
        return folder


def _write_atomic(path: Path, write) -> None:
    """`write(file)` into a temporary file beside `path`, renamed to `path` once complete: readers see the old
    file or the whole new one, never half of one; on any failure the temporary file is removed."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask applies, as to a plain write
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def trace_to_zip(trace: RunTrace) -> bytes:
    """The trace as one .zip holding trace.json and arrays.npz (what the UI offers for download)."""
    with tempfile.TemporaryDirectory() as tmp:
        trace.save(tmp)
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
            for name in ("trace.json", "arrays.npz"):
                archive.write(Path(tmp) / name, name)
    return buffer.getvalue()


def save_zip(trace: RunTrace, path: str | Path) -> Path:
    """Write the trace as one .zip (the file the app's Trace page opens), atomically; its folder is created."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = trace_to_zip(trace)
    _write_atomic(path, lambda f: f.write(data))
    return path


def trace_from_zip(data: bytes, max_array_bytes: int = LOCAL_ARRAY_BYTES) -> RunTrace:
    """Read a .zip written by trace_to_zip; anything else raises TraceFormatError. One whose arrays unpack to more
    than `max_array_bytes` raises NotAllowedError before any is read (llmviz/trace/arrays.py), one whose arrays
    declare more than ARRAY_INFLATION times `data`'s bytes TraceFormatError (llmviz/trace/archive.py). No message
    names the temporary folder it is unpacked in (on a server, a path of the server's own)."""
    if not isinstance(data, bytes | bytearray | memoryview):
        raise TraceFormatError(f"a trace archive is bytes, not {type(data).__name__}", code="trace_damaged")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive, tempfile.TemporaryDirectory() as tmp:
            infos = checked_members(archive, MAX_UNPACKED_BYTES, "the archive", MAX_MEMBERS)  # as declared, unread
            members = {info.filename: info for info in infos}
            if not set(FILES) <= set(members):
                raise TraceFormatError("the archive must hold trace.json and arrays.npz", code="trace_damaged")
            if members["trace.json"].file_size > MAX_TRACE_JSON_BYTES:  # refused as declared, before inflating
                raise json_too_large(members["trace.json"].file_size)
            for name, limit in zip(FILES, (MAX_TRACE_JSON_BYTES, MAX_UNPACKED_BYTES), strict=True):
                with open(Path(tmp) / name, "wb") as dst:  # a bomb refused unread, the rest counted as inflated
                    copy_member(archive, members[name], dst, limit, "the archive")
            return _load(Path(tmp), "the archive", max_array_bytes, memoryview(data).nbytes)
    except LlmvizError:  # typed already: damaged (TraceFormatError), or over the bound (NotAllowedError)
        raise
    except _DAMAGED as exc:  # writing the members out (a full disk) names the temporary folder
        detail = _detail(exc, Path(tempfile.gettempdir()), "the temporary folder")
        raise TraceFormatError(f"not a trace archive: {detail}", code="trace_damaged") from exc


def _read_json(path: Path) -> bytes:
    """trace.json's bytes, read a MiB at a time up to its cap (a device file such as /dev/zero has no size)."""
    chunks, total = [], 0
    with open(path, "rb") as f:
        while chunk := f.read(2**20):
            total += len(chunk)
            if total > MAX_TRACE_JSON_BYTES:
                raise json_too_large(total)
            chunks.append(chunk)
    return b"".join(chunks)


def load_trace(folder: str | Path, where: str | None = None, max_array_bytes: int = LOCAL_ARRAY_BYTES) -> RunTrace:
    """Read a saved trace; a damaged or foreign one raises TraceFormatError, one whose arrays declare more than
    `max_array_bytes` NotAllowedError (before any is read), never anything else. Messages name the folder as `where`
    (default: its path), never anything inside it."""
    return _load(Path(folder), where, max_array_bytes, None)


def _load(folder: Path, where: str | None, max_array_bytes: int, source: int | None) -> RunTrace:
    """load_trace; `source`: the bytes of the archive the folder was unpacked from (trace_from_zip), which bound the
    arrays' declared bytes as arrays.npz's own do (archive.ARRAY_INFLATION), before any array is read."""
    named = where is not None
    where = where or f"the trace in {folder}"
    try:
        text = _read_json(folder / "trace.json")
        check_json_text(text)
        doc = json.loads(text.decode("utf-8"))
        del text
        with zipfile.ZipFile(folder / "arrays.npz") as npz:
            arrays = _Arrays(npz, max_array_bytes)  # the archive checked, every header read and summed; no array
            check_arrays_inflation(arrays.declared, (folder / "arrays.npz").stat().st_size, None)
            if source is not None:
                check_arrays_inflation(arrays.declared, source, "an archive")
            if not isinstance(doc, dict) or doc.get("schema_version") not in READABLE_VERSIONS:
                found = doc.get("schema_version") if isinstance(doc, dict) else None
                raise TraceFormatError(f"trace schema version {found!r} is not one of {READABLE_VERSIONS}",
                                       code="trace_damaged")
            return _build(_migrate_v1(doc) if doc["schema_version"] == 1 else doc, arrays)
    except LlmvizError:  # typed already: damaged (TraceFormatError), or over the bound (NotAllowedError)
        raise
    except _DAMAGED as exc:
        detail = _detail(exc, folder, where if named else None)
        raise TraceFormatError(f"cannot read {where}: {detail}", code="trace_damaged") from exc
    except _MISSING as exc:
        raise damaged(f"missing or bad {_detail(exc, folder, where if named else None)}") from exc


def _detail(exc: BaseException, folder: Path, where: str | None) -> str:
    """An exception's text on one line; numpy's and the OS's messages name the file: given `where`, the folder is
    named so instead (an upload's temporary folder is the server's)."""
    text = str(exc) if where is None else str(exc).replace(str(folder), where)
    return " ".join(text.split())


class _Arrays(BoundedArrays):
    """BoundedArrays that also tell what an array's .npy header declares, read already (no array is)."""

    def declared_shape(self, key: str) -> tuple:
        if key not in self._members:
            raise damaged(f"trace.json names {key}, which arrays.npz does not hold")
        return self._members[key].shape


def _build(doc: dict, npz: _Arrays) -> RunTrace:
    """The trace from a checked document and the arrays its steps name (llmviz/trace/check.py). Before any array is
    read: each step's tokens (its input_ids' header) and every hook record's shape, held to the model card and the
    step (check_hook_shape), so every array read is refused unread unless it has the size they give it."""
    model = check_document(doc)
    rows, context = len(doc["prompts"]), model.max_position_embeddings
    try:
        tokens = [_tokens(i, entry, npz, rows, context) for i, entry in enumerate(doc["steps"])]
        for i, (entry, n) in enumerate(zip(doc["steps"], tokens, strict=True)):
            where, dims = f"steps[{i}]", model_dims(model, rows, n)
            for meta in entry["hooks"]:
                check_hook_shape(meta["name"], meta["shape"], where, dims, context)
        steps = [_load_step(entry, npz, _step_shapes(rows, n, model), model.vocab_size)
                 for entry, n in zip(doc["steps"], tokens, strict=True)]
    except (KeyError, TypeError) as exc:
        raise damaged(f"missing or bad {exc}") from exc
    check_steps(steps, model, doc["engine_config"])
    check_prompts(doc["prompt"], doc["prompts"], int(steps[0].input_ids.shape[0]))
    return RunTrace(model_card=doc["model_card"], prompt=doc["prompt"], engine_config=doc["engine_config"],
                    seed=doc["seed"], tokens=token_table(doc["tokens"], steps, model.vocab_size), steps=steps,
                    prompts=list(doc["prompts"]), schedule=schedule_of(doc.get("schedule", [])))


def _migrate_v1(doc: dict) -> dict:
    """Schema 1 -> 2: one prompt, every row a copy of it; engine settings that no longer exist dropped."""
    doc = dict(doc)
    if not isinstance(doc.get("engine_config"), dict) or not isinstance(doc.get("steps"), list) or \
            not all(isinstance(entry, dict) for entry in doc["steps"]):
        raise damaged("a schema 1 trace needs an engine_config object and a list of steps")
    config = {k: v for k, v in doc["engine_config"].items() if k not in ("batch_size", "threads")}
    doc["engine_config"] = config
    doc["prompts"] = [doc.get("prompt")]
    doc["steps"] = [{**entry, "row_finished": []} for entry in doc["steps"]]
    doc["schema_version"] = SCHEMA_VERSION
    return doc


def _tokens(i: int, entry: dict, npz: _Arrays, rows: int, context: int) -> int:
    """The tokens step i reads per row (n), as its input_ids' .npy header declares them: [rows, n], n from 1 to the
    model's context in the prefill, 1 in a decode step (check_arrays: nothing else is recorded). The step is the one
    its entry names (whose arrays are read): check_steps then holds each entry's index to its place."""
    if "input_ids" not in entry["arrays"]:
        raise damaged(f"'steps[{i}]' names no input_ids")
    shape, most = npz.declared_shape(f"s{entry['index']}.input_ids"), 1 if entry["index"] else context
    if len(shape) != 2 or shape[0] != rows or not 1 <= shape[1] <= most:
        raise damaged(f"'steps[{i}]': input_ids declares {list(shape)}, not [{rows} rows, 1 to {most:,} tokens]")
    return shape[1]


def _step_shapes(rows: int, tokens: int, model) -> dict[str, tuple]:
    """The shape each of a step's arrays may declare before it is read (check_arrays then checks each as read):
    batch-first, a row per prompt, its tokens as _tokens found them; logits over the vocabulary; the lens a row of k
    per layer. None: a dimension check_arrays leaves free (top k, the lens' k), at most the vocabulary."""
    layers, vocab = model.num_layers, model.vocab_size
    return {"input_ids": (rows, tokens), "positions": (rows, tokens), "sampled": (rows,), "logsumexp": (rows,),
            "logits": (rows, vocab), "topk_ids": (rows, None), "topk_logits": (rows, None),
            "lens_ids": (layers, rows, None), "lens_probs": (layers, rows, None)}


def _load_step(entry: dict, npz: _Arrays, shapes: dict[str, tuple], free: int) -> StepTrace:
    """One step from its checked entry; its arrays read from arrays.npz as it names them (others stay unread), each
    refused unread unless its header declares the shape the document gives it: `shapes` for the step's own, the
    record's for a hook's (its row norms: that shape less its last dimension)."""
    index, named = entry["index"], entry["arrays"]
    if not set(named) <= set(_STEP_ARRAYS):
        raise damaged(f"'steps[{index}]': arrays names one a step does not have")
    values = {k: npz.read(f"s{index}.{k}", shapes[k], free) if k in named else None for k in _STEP_ARRAYS}
    hooks = []
    for meta in entry["hooks"]:
        meta = dict(meta)
        held = {"array": meta.pop("has_array"), "row_norms": meta.pop("has_row_norms", False)}  # schema 2: no norms
        # traces written before the field existed said so in the note alone (which the engine still writes)
        meta.setdefault("recomputed", meta["note"].startswith(RECOMPUTED_NOTE))
        wanted = {"array": tuple(meta["shape"]), "row_norms": tuple(meta["shape"][:-1])}
        hooks.append(HookRecord(**meta, **{key: npz.read(f"s{index}.{prefix}.{meta['name']}", wanted[key], free)
                                           if held[key] else None for key, prefix in _RECORD_ARRAYS.items()}))
    scalars = {k: v for k, v in entry.items() if k not in ("arrays", "hooks")}
    return StepTrace(**scalars, **values, hooks=hooks)
