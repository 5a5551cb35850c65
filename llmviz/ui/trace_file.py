"""The Trace page's arithmetic, kept out of the page so tests can call it: file names and the run summary.

No streamlit and no torch here: it reads a RunTrace (plain numbers and numpy arrays) and nothing else.
"""

from __future__ import annotations

import dataclasses
import re
from datetime import UTC, datetime
from pathlib import Path, PurePath

from llmviz.trace.arrays import LOCAL_ARRAY_BYTES
from llmviz.trace.budget import REPLAY_HELD_BUDGETS
from llmviz.trace.records import RunTrace
from llmviz.ui.markdown import escape as markdown_escape  # noqa: F401 - the UI's one escaper

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def short_name(name: str) -> str:
    """The last part of a model's hub id or folder ("HuggingFaceTB/SmolLM2-135M" -> "SmolLM2-135M")."""
    return PurePath(name.replace("\\", "/").rstrip("/")).name or name


def is_server_path(name: str) -> bool:
    """Whether a model's name is a folder of this machine (absolute, relative or ~), not a hub id or a built-in
    model's name: "/srv/models/x", "./x", "~/x", or an "owner/name" that is a folder here."""
    try:
        path = Path(name).expanduser()
        return path.is_absolute() or name.startswith((".", "~")) or ("/" in name and path.exists())
    except (OSError, ValueError, RuntimeError):  # a NUL in the name, no home folder: a path-like name, kept short
        return True


def public_copy(trace: RunTrace) -> RunTrace:
    """What a public server hands out for download: the run without the server's own facts, its
    folders (the model card's path; the name where it is a folder here, shortened to its last part) and its
    process's memory (every step's RSS and CUDA figures). The live run keeps them: the arrays are shared, not
    copied."""
    card = {k: v for k, v in trace.model_card.items() if k != "path"}
    name = str(card.get("name", "model"))
    card["name"] = short_name(name) if is_server_path(name) else name
    steps = [dataclasses.replace(step, memory={}) for step in trace.steps]
    return dataclasses.replace(trace, model_card=card, steps=steps)


def replay_bound(policy) -> int:
    """The bytes of arrays an uploaded trace may unpack to, checked before any is read (a 5.6 MB file of
    deflated zeros made the server hold 2 GB before it was refused). A public server: what bound_replay lets a
    session keep (REPLAY_HELD_BUDGETS budgets), since a file holding more would be refused once read anyway; the
    local tool: the archive's own bound (llmviz/trace/arrays.LOCAL_ARRAY_BYTES), the person's own files."""
    return REPLAY_HELD_BUDGETS * policy.trace_budget_bytes if policy.public else LOCAL_ARRAY_BYTES


def download_name(trace: RunTrace, when: datetime | None = None) -> str:
    """`llmviz-<model>-<UTC timestamp>.zip` (no second "llmviz-" for our own models): the model's short
    name, made safe for every file system."""
    when = when or datetime.now(UTC)
    model = _UNSAFE.sub("-", short_name(str(trace.model_card.get("name", "model")))).strip("-.") or "model"
    prefix = "" if model.startswith("llmviz") else "llmviz-"
    return f"{prefix}{model}-{when.strftime('%Y%m%d-%H%M%S')}.zip"


def generated_text(trace: RunTrace, row: int = 0) -> str:
    """One row's sampled tokens as text, from the token table the trace carries (no tokenizer needed): their
    bytes joined first and decoded together, so a character split over several byte tokens (济 is three)
    comes out whole, as the engine's own decode gives it; special tokens (EOS) left out."""
    return ids_text(trace.tokens, trace.row_output_ids(row))


def ids_text(table: dict, ids: list[int]) -> str:
    """Token ids as text from a trace's token table: their bytes joined, then decoded; special tokens left out."""
    data = b"".join(bytes.fromhex(table.get(i, {}).get("bytes", "")) for i in ids
                    if not table.get(i, {}).get("special", False))
    return data.decode("utf-8", errors="replace")


def summary(trace: RunTrace) -> dict:
    """What the Trace page shows about a run: model, prompt, steps, engine config, tokens generated."""
    card, config = trace.model_card, trace.engine_config
    sampling = config.get("sampling", {})
    last = trace.steps[-1] if trace.steps else None
    return {
        "model": str(card.get("name", "?")),
        "model_short": short_name(str(card.get("name", "?"))),
        "family": str(card.get("family", "?")),
        "parameters": int(card.get("parameters", 0)),
        "prompt": trace.prompt,
        "prompt_tokens": len(trace.prompt_ids),
        "steps": len(trace.steps),  # step 0 is the prefill
        "decode_steps": max(0, len(trace.steps) - 1),
        "generated_tokens": len(trace.output_ids),  # every step, the prefill included, samples one token
        "generated_text": generated_text(trace),
        "kv_len": int(last.kv.get("seq_len", 0)) if last is not None else 0,
        "finished": last.finished if last is not None else "",
        "device": str(card.get("device", config.get("device", "?"))),
        "dtype": str(config.get("dtype", "?")),
        "attn": str(config.get("attn_backend", "?")),
        "kv_layout": str(config.get("kv_layout", "?")),
        "kv_dtype": str(config.get("kv_dtype", "?")),
        "capture": str(config.get("capture", "?")),
        "seed": trace.seed,
        "temperature": sampling.get("temperature", "?"),
        "top_k": sampling.get("top_k", "?"),
        "top_p": sampling.get("top_p", "?"),
        "schema_version": trace.schema_version,
    }
