"""What a loaded trace must be before any page reads it: a file from elsewhere is trusted in nothing.

trace.py reads the bytes (bounded, never a pickle); this module checks what they say, torch-free:
- trace.json's own size and how many values it holds, before it is parsed into Python objects;
- the document's fields as the engine writes them (types and ranges), before any object is built from them;
- the model card's config through ModelConfig, within the bounds a pasted config keeps (MAX_SIZES), and the card
  agreeing with the arrays: the layers the prefill timed, that have hook records and a logit lens; the logits'
  width and every id within its vocabulary;
- the engine config through EngineConfig's own validation, and each step's sampling through SamplingConfig's;
- each step's arrays: integer ids and positions (-1 only as the pad), float logits [rows, V] finite or -inf,
  real lens arrays [L, rows, k], finite hook arrays (a masked `scores` record holds the mask's -inf) of their
  records' shapes, which check_hook_shape holds to the card and the step's tokens before any array is read; its KV
  snapshot, timings and memory as numbers of the right kind and range.
Every failure is a TraceFormatError naming the field, never the folder it was read from (an upload's temporary
folder is the server's own).
"""

from __future__ import annotations

import math
import re

import numpy as np

from llmviz.errors import LlmvizError, TraceFormatError
from llmviz.trace import hooks
from llmviz.trace.config import CAPTURE_LEVELS, KV_LAYOUTS, SEED_RANGE, EngineConfig, SamplingConfig
from llmviz.trace.hooks import declared_point
from llmviz.trace.model_config import MAX_SIZES, SUPPORTED_MODEL_TYPES, ModelConfig

# trace.json is parsed whole into Python objects, which take up to ~24 times its bytes (`[[],[],...]`: 64 bytes of
# list and pointer per 3 bytes of text). The longest run the embedded model can record (its 512-token context at
# capture full, one row) writes 7.6 MB holding 0.3 million values (a value per 26 bytes; gpt2-124m-random: ~35 KB
# a step). 32 MiB is four times that: ~900 steps of a 12-layer model at capture meta, or its 2,048-token context
# at capture full once the session's budget has shed the older steps to their K/V records. A file of tiny values
# reaches the value cap first: 2 million values (~7 times the longest embedded run) are at most ~150 MB while parsed.
MAX_TRACE_JSON_BYTES = 32 * 2**20
MAX_TRACE_JSON_VALUES = 2_000_000
MAX_TEXT = 4096  # a model card's name or setting: a hub id or a folder (PATH_MAX), never more
FINISHED = ("", "eos", "max_seq_len", "max_new_tokens")  # llmviz/engine/sequence.py
_HEX = re.compile(r"(?:[0-9a-f]{2})*")
_LAYER_SPAN = re.compile(r"layer\.([0-9]+)")  # the prefill's timer marks each block it ran (models/transformer.py)


def damaged(what: str) -> TraceFormatError:
    return TraceFormatError(f"the trace is damaged: {what}", code="trace_damaged")


def too_large(what: str, size: int, limit: int, unit: str = "bytes", code: str = "trace_too_large") -> TraceFormatError:
    return TraceFormatError(f"{what} holds {size:,} {unit}; a trace may hold at most {limit:,} (a zip bomb, or a run "
                            "too large to replay)", code=code, size=f"{size:,}", limit=f"{limit:,}")


def json_too_large(size: int) -> TraceFormatError:
    return too_large("trace.json", size, MAX_TRACE_JSON_BYTES, code="trace_json_too_large")


def check_json_text(text: bytes) -> None:
    """Before json.loads: each value but the last of an array or object ends at a comma, so commas bound them."""
    if len(text) > MAX_TRACE_JSON_BYTES:
        raise json_too_large(len(text))
    if (values := text.count(b",")) > MAX_TRACE_JSON_VALUES:
        raise too_large("trace.json", values, MAX_TRACE_JSON_VALUES, "values", "trace_json_values")


# --- fields: (test, what it must be) -------------------------------------------------------------------------
def _whole(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _real(v) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


TEXT = (lambda v: isinstance(v, str) and len(v) <= MAX_TEXT, f"text of at most {MAX_TEXT} characters")
ANY_TEXT = (lambda v: isinstance(v, str), "text")
COUNT = (lambda v: _whole(v) and v >= 0, "a whole number >= 0")
POSITIVE = (lambda v: _whole(v) and v >= 1, "a whole number >= 1")
WHOLE = (_whole, "a whole number")
DURATION = (lambda v: _real(v) and v >= 0, "a finite number >= 0")
FLAG = (lambda v: isinstance(v, bool), "true or false")
OBJECT = (lambda v: isinstance(v, dict), "an object")
COUNTS = (lambda v: isinstance(v, list) and all(COUNT[0](x) for x in v), "a list of whole numbers >= 0")
TABLES = (lambda v: isinstance(v, list) and all(COUNTS[0](x) for x in v), "a list of lists of whole numbers >= 0")
NAMES = (lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v), "a list of texts")
SCALARS = (lambda v: isinstance(v, dict) and all(isinstance(x, str) or _real(x) for x in v.values()),
           "an object of finite numbers and texts")


def _one_of(allowed: tuple) -> tuple:
    return lambda v: v in allowed, f"one of {', '.join(map(repr, allowed))}"


class _LayoutNames:  # the layouts as they stand when a message is written (one registered after import too)
    def __str__(self) -> str:
        return f"one of {', '.join(map(repr, KV_LAYOUTS.recorded))}"


# Any layout a cache records, the ring ("ring") included; an older trace's ring says "contiguous", also accepted.
KV_LAYOUT = (lambda v: isinstance(v, str) and v in KV_LAYOUTS.recorded, _LayoutNames())


def _at_most(high: int) -> tuple:
    return lambda v: _whole(v) and 1 <= v <= high, f"a whole number from 1 to {high:,}"


def check_fields(obj, where: str, required: dict, optional: dict | None = None) -> dict:
    if not isinstance(obj, dict):
        raise damaged(f"{where} must be an object, not {type(obj).__name__}")
    missing = [key for key in required if key not in obj]
    if missing:
        raise damaged(f"{where} has no {', '.join(missing)}")
    for key, (ok, what) in {**required, **(optional or {})}.items():
        if key in obj and not ok(obj[key]):
            raise damaged(f"{where}.{key} must be {what}")
    return obj


# --- the document ----------------------------------------------------------------------------------------------
CARD = {"name": TEXT, "family": _one_of(SUPPORTED_MODEL_TYPES), "config": OBJECT, "parameters": COUNT,
        "weight_bytes": COUNT, "dtype": TEXT, "device": TEXT}
CARD_OPTIONAL = {"path": ANY_TEXT, "position_scheme": TEXT, "tokenizer_vocab": COUNT, "byte_level": FLAG,
                 "options": OBJECT}
DOCUMENT = {"model_card": OBJECT, "prompt": ANY_TEXT, "engine_config": OBJECT, "seed": WHOLE, "tokens": OBJECT,
            "steps": (lambda v: isinstance(v, list) and bool(v), "a non-empty list"), "prompts": NAMES}
STEP = {"index": COUNT, "phase": _one_of(("prefill", "decode")), "arrays": NAMES, "hooks": (
    lambda v: isinstance(v, list), "a list"), "kv": OBJECT, "timings": OBJECT, "memory": OBJECT, "sampling": OBJECT,
    "finished": _one_of(FINISHED), "row_finished": (lambda v: isinstance(v, list) and all(x in FINISHED for x in v),
                                                    f"a list of {', '.join(map(repr, FINISHED))}")}
HOOK = {"name": TEXT, "shape": (lambda v: isinstance(v, list) and 0 < len(v) <= 8 and all(COUNT[0](x) for x in v)
                                and math.prod(v) <= 2**48, "a list of up to 8 whole numbers >= 0"),
        "dtype": TEXT, "nbytes": COUNT, "norm": (lambda v: v is None or _real(v), "a finite number or null"),
        "note": ANY_TEXT, "has_array": FLAG}
HOOK_OPTIONAL = {"has_row_norms": FLAG, "recomputed": FLAG}  # schema 2 has no norms; older schema 3 no flag


def check_document(doc: dict) -> ModelConfig:
    """Every field but the arrays, before an object is built from it; returns the card's (bounded) config."""
    check_fields(doc, "trace.json", DOCUMENT)
    if not SEED_RANGE[0] <= doc["seed"] < SEED_RANGE[1]:
        raise damaged(f"seed must be in [-2**63, 2**64), got {doc['seed']}")
    for i, entry in enumerate(doc["steps"]):
        check_fields(entry, f"steps[{i}]", STEP)
        for j, meta in enumerate(entry["hooks"]):
            check_fields(meta, f"steps[{i}].hooks[{j}]", HOOK, HOOK_OPTIONAL)
    check_engine_config(doc["engine_config"])
    return check_card(doc["model_card"])


def check_card(card: dict) -> ModelConfig:
    """The card's fields, and its config as a ModelConfig within the sizes a pasted config may have (MAX_SIZES)."""
    check_fields(card, "model_card", CARD, CARD_OPTIONAL)
    config = card["config"]
    check_fields(config, "model_card.config", {name: _at_most(high) for name, high in MAX_SIZES.items()},
                 {"sliding_windows": COUNTS, "eos_token_ids": COUNTS, "rope_scaling": SCALARS})
    window_cap = MAX_SIZES["max_position_embeddings"]  # config_from_text bounds a sliding window the same way
    if any(w > window_cap for w in config.get("sliding_windows", ())):
        raise damaged(f"model_card.config.sliding_windows must be at most {window_cap:,} tokens")
    try:
        model = ModelConfig.from_dict(config)
    except LlmvizError as exc:
        raise damaged(f"model_card.config: {exc}") from exc
    except (TypeError, ValueError, AttributeError) as exc:  # a field unknown, missing or of another type
        raise damaged(f"model_card.config is not a model's config ({exc})") from exc
    if model.family != card["family"]:
        raise damaged(f"model_card.family {card['family']!r} disagrees with its config's {model.family!r}")
    special = [*model.eos_token_ids, *([] if model.bos_token_id is None else [model.bos_token_id])]
    if not all(COUNT[0](i) and i < model.vocab_size for i in special):
        raise damaged("model_card.config: a BOS or EOS id beyond the vocabulary")
    return model


def check_engine_config(config: dict) -> EngineConfig:
    """As the engine would take it: EngineConfig validates every setting (schema 1's retired ones dropped)."""
    filters = config.get("capture_filter", [])
    if not NAMES[0](filters):
        raise damaged("engine_config.capture_filter must be a list of texts")
    try:
        return EngineConfig.from_dict(config)
    except LlmvizError as exc:
        raise damaged(f"engine_config: {exc}") from exc
    except (TypeError, ValueError, AttributeError) as exc:
        raise damaged(f"engine_config is not an engine's settings ({exc})") from exc


def check_prompts(prompt: str, prompts: list, rows: int) -> None:
    if len(prompts) != rows or prompts[0] != prompt:
        raise damaged(f"'prompts' must hold one text per row ({rows}), the first being 'prompt'")


# --- each step: KV snapshot, timings, memory, sampling -------------------------------------------------------
KV = {"layout": KV_LAYOUT, "seq_len": COUNT, "max_seq": _at_most(MAX_SIZES["max_position_embeddings"]),
      "kv_heads": _at_most(MAX_SIZES["num_kv_heads"]), "head_dim": _at_most(MAX_SIZES["head_dim"]),
      "element_bytes": _at_most(8), "bytes_used": COUNT, "bytes_allocated": POSITIVE, "layers": POSITIVE,
      "batch": COUNT, "dtype": TEXT}
KV_OPTIONAL = {"kv_dtype": TEXT, "seq_lens": COUNTS, "seq_ids": COUNTS, "bytes_per_token": COUNT,
               "slots_allocated": COUNT, "wasted_slots": WHOLE, "rows": COUNTS, "capacity": COUNT,
               "block_size": POSITIVE, "num_blocks": COUNT,
               "blocks_free": COUNT, "block_tables": TABLES, "bytes_held": COUNT, "bytes_copied_step": COUNT,
               "bytes_copied_total": COUNT, "window": POSITIVE, "rollback": COUNT, "slots_per_row": POSITIVE,
               "storage_shape": (lambda v: v is None or (COUNTS[0](v) and 0 < len(v) <= 8),
                                 "a list of at most 8 whole numbers >= 0, or null")}
# A compiled decode step's timings["compile"]: whether its forward pass included compiling the graph (a timing to
# leave out of a mean) or reused a graph compiled before. Absent on an eager step.
COMPILE_STATES = ("compiled now", "reused")
TIMINGS = {"spans_ms": (lambda v: isinstance(v, dict) and all(isinstance(k, str) and DURATION[0](x) for k, x in
                                                               v.items()), "an object of finite numbers >= 0"),
           "total_ms": DURATION}
TIMINGS_OPTIONAL = {"device": TEXT, "threads": COUNT, "capture": _one_of(CAPTURE_LEVELS), "attn_backend": TEXT,
                    "tokens": COUNT, "padded_slots": COUNT, "logit_lens": ANY_TEXT, "compile": _one_of(COMPILE_STATES)}
# rss_bytes may be left out: a public server's download leaves out its memory (llmviz/ui/trace_file.public_copy)
MEMORY = {"rss_bytes": COUNT, "cuda_allocated_bytes": COUNT, "cuda_reserved_bytes": COUNT,
          "cuda_peak_allocated_bytes": COUNT}


def check_records(step, i: int, layers: int) -> None:
    """KV snapshot, timings, memory and sampling: the numbers the pages divide by, format and loop over."""
    where = f"steps[{i}]"
    kv = check_fields(step.kv, f"{where}.kv", KV, KV_OPTIONAL)
    if kv["layers"] != layers:
        raise damaged(f"{where}.kv.layers is {kv['layers']}, the model card's config {layers}")
    check_fields(step.timings, f"{where}.timings", TIMINGS, TIMINGS_OPTIONAL)
    check_fields(step.memory, f"{where}.memory", {}, MEMORY)
    if "cuda_allocated_bytes" in step.memory and "cuda_peak_allocated_bytes" not in step.memory:
        raise damaged(f"{where}.memory has cuda_allocated_bytes but no cuda_peak_allocated_bytes")
    sampling = check_fields(step.sampling, f"{where}.sampling", {"temperature": DURATION, "top_k": COUNT,
                                                                  "top_p": DURATION}, {"seed": WHOLE})
    if "seed" in sampling and not SEED_RANGE[0] <= sampling["seed"] < SEED_RANGE[1]:
        raise damaged(f"{where}.sampling.seed must be in [-2**63, 2**64)")
    try:
        SamplingConfig(**{k: v for k, v in sampling.items() if k != "seed"})
    except LlmvizError as exc:
        raise damaged(f"{where}.sampling: {exc}") from exc
    except TypeError as exc:
        raise damaged(f"{where}.sampling is not a sampler's settings ({exc})") from exc


def check_layers(steps, layers: int, filtered: bool) -> None:
    """The card's layer count is the layers the trace shows: the prefill timed each block it ran, every layer has
    hook records when nothing filtered them (a step keeps all or none of a layer's K/V), the lens one row per
    layer. So a card that claims millions of layers needs them in the file, within its size cap."""
    timed = {int(m.group(1)) for name in steps[0].timings["spans_ms"] if (m := _LAYER_SPAN.fullmatch(name))}
    if timed != set(range(layers)):
        raise damaged(f"the prefill timed {len(timed)} layers, the model card's config has {layers}")
    for step in steps:
        held = {hooks.layer_of(r.name) for r in step.hooks} - {None}
        if held and (max(held) >= layers or (not filtered and held != set(range(layers)))):
            raise damaged(f"steps[{step.index}] holds hook records of {len(held)} layers, the model card's config "
                          f"has {layers}")


# --- each step: arrays ---------------------------------------------------------------------------------------
def _ints(a) -> bool:
    return isinstance(a, np.ndarray) and a.dtype.kind in "iu"


def _floats(a) -> bool:
    return isinstance(a, np.ndarray) and a.dtype.kind == "f"


def _finite_or_neg_inf(a: np.ndarray) -> bool:
    """No NaN and no +inf: -inf is what a mask writes (a token or position ruled out)."""
    return not (np.isnan(a).any() or np.isposinf(a).any())


def check_arrays(step, i: int, rows: int, vocab: int, layers: int) -> None:
    """The step's arrays as the engine writes them (llmviz/engine/recording.py), batch-first with `rows` rows."""
    where = f"steps[{i}]"
    ints, floats = (step.input_ids, step.positions, step.sampled, step.topk_ids), (step.topk_logits, step.logsumexp)
    if not all(_ints(a) for a in ints) or not all(_floats(a) for a in floats):
        raise damaged(f"'{where}': input_ids, positions, sampled, topk_ids must be integer arrays, topk_logits and "
                      "logsumexp float arrays")
    if step.input_ids.ndim != 2 or step.input_ids.shape[0] != rows or not step.input_ids.shape[1]:
        raise damaged(f"'{where}': input_ids must be [{rows} rows, tokens], not {list(step.input_ids.shape)}")
    b = rows
    if step.positions.shape != step.input_ids.shape or step.sampled.shape != (b,) or step.topk_ids.ndim != 2 or \
            step.topk_ids.shape[0] != b or step.topk_logits.shape != step.topk_ids.shape or \
            step.logsumexp.shape != (b,) or not 1 <= step.topk_ids.shape[1] <= vocab:
        raise damaged(f"'{where}': the shapes of input_ids, positions, sampled, topk_ids, topk_logits and logsumexp "
                      "disagree")
    if i and step.input_ids.shape[1] != 1:
        raise damaged(f"'{where}': a decode step reads one token")
    pads = step.input_ids < 0
    if step.input_ids.min() < -1 or step.positions.min() < -1 or (pads != (step.positions < 0)).any() or \
            step.sampled.min() < -1:
        raise damaged(f"'{where}': ids and positions are >= 0, or -1 in the same pad slots")
    if step.topk_ids.min() < 0 or step.topk_ids.max() >= vocab:
        raise damaged(f"'{where}': a top-k id beyond the vocabulary of {vocab:,}")
    if not _finite_or_neg_inf(step.topk_logits) or not np.isfinite(step.logsumexp).all():
        raise damaged(f"'{where}': topk_logits must be finite or -inf, logsumexp finite")
    if step.logits is not None and (not _floats(step.logits) or step.logits.shape != (b, vocab)
                                    or not _finite_or_neg_inf(step.logits)):
        raise damaged(f"'{where}': logits must be a [{b}, {vocab}] float array, finite or -inf")
    check_lens(step, where, b, vocab, layers)


def check_lens(step, where: str, rows: int, vocab: int, layers: int) -> None:
    ids, probs = step.lens_ids, step.lens_probs
    if ids is None and probs is None:
        return
    if ids is None or probs is None or not _ints(ids) or not _floats(probs) or ids.ndim != 3 or \
            ids.shape != probs.shape or ids.shape[:2] != (layers, rows) or not 1 <= ids.shape[2] <= vocab:
        raise damaged(f"'{where}': the logit lens must be [{layers} layers, {rows} rows, k] integer ids and real "
                      "probabilities")
    if ids.min() < 0 or ids.max() >= vocab or not np.isfinite(probs).all() or probs.min() < 0 or \
            probs.max() > 1 + 1e-5:
        raise damaged(f"'{where}': the logit lens holds ids beyond the vocabulary or probabilities outside [0, 1]")


def model_dims(model: ModelConfig, rows: int, tokens: int) -> dict[str, int]:
    """What each named dimension of hooks.py is in a step reading `tokens` tokens (n) of each of `rows` rows: all but
    n_k, the keys attended (at most the context: check_hook_shape)."""
    return {"b": rows, "n": tokens, "d": model.hidden_size, "h": model.num_heads, "kv": model.num_kv_heads,
            "hd": model.head_dim, "f": model.intermediate_size, "V": model.vocab_size, "L": model.num_layers, "1": 1,
            "2": 2, "pos_dim": model.hidden_size if model.position == "learned" else model.head_dim // 2}


def check_hook_shape(name: str, shape: list, where: str, dims: dict[str, int], context: int):
    """A record's hook point (returned), its shape that point's dimensions as `dims` says and its keys (n_k) at most
    `context`: the pages index a record's arrays by that shape. Run on the document before any array is read
    (llmviz/trace/records.py), so an array only ever has the size the model and its step give it."""
    if not name.isascii():  # str.isdigit takes "²", which int() does not
        raise damaged(f"'{where}': hook names are ASCII")
    try:
        point = declared_point(name)
    except LlmvizError as exc:
        raise damaged(f"'{where}': {exc}") from exc
    if len(shape) != len(point.dims) or any(size != dims[d] if d in dims else size > context
                                            for d, size in zip(point.dims, shape, strict=True)):
        wanted = ", ".join(str(dims[d]) if d in dims else f"at most {context:,}" for d in point.dims)
        raise damaged(f"'{where}': hook {name!r} has shape {list(shape)}, not [{wanted}] as the model card's config "
                      f"and the step ({dims['b']:,} rows × {dims['n']:,} tokens) say")
    return point


def check_hooks(step, where: str, dims: dict[str, int], context: int) -> None:
    """Each record is a declared hook point of its step's shape (check_hook_shape: so a card's intermediate_size is
    the one its `mlp_act` records hold) and its arrays are of that shape; only a masked `scores` record holds -inf."""
    for record in step.hooks:
        point = check_hook_shape(record.name, record.shape, where, dims, context)
        wanted = {"array": tuple(record.shape), "row_norms": tuple(record.shape[:-1])}
        for key, shape in wanted.items():
            value = getattr(record, key)
            if value is not None and (value.shape != shape or value.dtype.kind != "f"):
                raise damaged(f"'{where}': hook {record.name!r} declares shape {list(record.shape)}, but its {key} is "
                              f"a {list(value.shape)} {value.dtype} array")
        masked = point.name == "scores"  # the mask's -inf (capture.py keeps it in the copy)
        if record.array is not None and not (_finite_or_neg_inf(record.array) if masked else
                                             np.isfinite(record.array).all()):
            raise damaged(f"'{where}': hook {record.name!r} holds NaN or infinite values")
        if record.row_norms is not None and (not np.isfinite(record.row_norms).all() or record.row_norms.min() < 0):
            raise damaged(f"'{where}': hook {record.name!r} holds row norms that are not finite numbers >= 0")


def check_steps(steps, model: ModelConfig, engine: dict) -> None:
    """Steps 0..N-1, the prefill first, every one with `rows` rows and arrays within the card's vocabulary."""
    rows = steps[0].input_ids.shape[0] if isinstance(steps[0].input_ids, np.ndarray) and \
        steps[0].input_ids.ndim == 2 else 0
    if not rows:
        raise damaged("'steps[0]': input_ids must be [rows, tokens] with at least one row")
    for i, step in enumerate(steps):
        if step.index != i or step.phase != ("prefill" if i == 0 else "decode"):
            raise damaged(f"'steps[{i}]': index {step.index} / phase {step.phase!r} out of order")
        if step.row_finished and len(step.row_finished) != rows:
            raise damaged(f"'steps[{i}]': row_finished must name every row's state")
        check_records(step, i, model.num_layers)
        check_arrays(step, i, rows, model.vocab_size, model.num_layers)
        check_hooks(step, f"steps[{i}]", model_dims(model, rows, step.input_ids.shape[1]),
                    model.max_position_embeddings)
    check_layers(steps, model.num_layers, bool(engine.get("capture_filter")))


# --- the token table -----------------------------------------------------------------------------------------
ENTRY = {"piece": ANY_TEXT, "bytes": (lambda v: isinstance(v, str) and _HEX.fullmatch(v) is not None,
                                      "lower-case hex digits in pairs"), "text": ANY_TEXT}
ENTRY_OPTIONAL = {"special": FLAG}


def shown_ids(steps) -> set[int]:
    """Every id a page looks up in the token table: inputs, samples, top-k and logit-lens ids (as recording.py)."""
    parts = [a.ravel() for s in steps for a in (s.input_ids, s.sampled, s.topk_ids, s.lens_ids) if a is not None]
    ids = np.unique(np.concatenate(parts))
    return {int(i) for i in ids[ids >= 0]}


def token_table(raw: dict, steps, vocab: int) -> dict[int, dict]:
    """The table as {id: entry} for the ids the steps show: an entry for each, well formed; an id beyond the
    vocabulary is refused, one no step shows (a resampled run's earlier draws) is left out, so what the table holds
    is bounded by the arrays, not by what a file lists."""
    table = {}
    for key, entry in raw.items():
        if not (key.isascii() and key.isdigit() and str(int(key)) == key and int(key) < vocab):
            raise damaged(f"'tokens': an id beyond the vocabulary of {vocab:,}, or not a decimal id")
        table[int(key)] = entry
    shown = shown_ids(steps)
    if not shown <= table.keys():
        raise damaged("a token id has no entry in the token table")
    for token in shown:
        check_fields(table[token], f"tokens[{token}]", ENTRY, ENTRY_OPTIONAL)
    return {token: entry for token, entry in table.items() if token in shown}
