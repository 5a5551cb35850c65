"""Replay: what was recorded, read back. A request trace (a serving workload: its requests, their arrival times,
prompts, lengths and seeds) by a built-in name, from a JSON file, or from a file's bytes as uploaded; read bounded,
TraceFormatError otherwise (llmviz/engine/serving/requests.py). A run's own trace needs no door: llmviz.trace reads
it, torch-free (trace/records.load_trace). Part of the service's door (llmviz/service/__init__.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only
    from llmviz.engine.serving.requests import RequestTrace


def request_trace(name_or_path: str) -> RequestTrace:
    """A request trace: a built-in one by name (mixed, mixed-poisson, shared-prompt) or a JSON file, read bounded."""
    from llmviz.engine.serving.requests import load_trace

    return load_trace(name_or_path)


def read_trace(data: bytes, name: str) -> RequestTrace:
    """A request trace from a file's bytes, read or uploaded (bounded UTF-8 JSON)."""
    from llmviz.engine.serving.requests import parse_trace_bytes

    return parse_trace_bytes(data, name)


def requests_of(trace) -> RequestTrace:
    """A RequestTrace as given, or the one a built-in name or JSON file names."""
    return request_trace(trace) if isinstance(trace, str) else trace
