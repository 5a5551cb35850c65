"""Request traces for the serving schedulers (C15, C22; claims K7, K9): who arrives when, with which prompt,
how many tokens it wants, and how it samples.

A trace is plain JSON (`{"name", "note", "requests": [{"id", "arrival_step", "prompt_ids", "output_len",
"temperature", "top_k", "top_p", "seed"}, ...]}`), read with every field checked. The built-in ones are
made by `make_trace` from held-out text encoded with the embedded tokenizer (so their ids fit every model
that shares it) and kept in assets/traces/:

    mixed          32 requests at step 0; prompts of 16-128 tokens (uniform), outputs geometric with mean
                   32, capped at 256 (seeded)
    mixed-poisson  the same requests arriving as a Poisson process (one every 2 steps on average)
    shared-prompt  16 requests sharing a 192-token system prompt, user parts of 16-64 tokens, 32 outputs each
"""

from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path

from llmviz.engine.config import SamplingConfig
from llmviz.errors import ConfigError, TraceFormatError

TRACES = Path(__file__).resolve().parents[3] / "assets" / "traces"
BUILT_IN = ("mixed", "mixed-poisson", "shared-prompt")
MAX_REQUESTS = 1024
MAX_ARRIVAL_STEP = 10_000  # a simulation runs one engine step per step, idle or not
MAX_TRACE_BYTES = 2_000_000  # a trace file read or uploaded (the built-in ones are ~30 KB)


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class Request:
    id: int
    arrival_step: int  # the engine step at which it may first be scheduled
    prompt_ids: tuple
    output_len: int  # tokens to generate (EOS does not stop a simulated request: every run does the same work)
    sampling: SamplingConfig = field(default_factory=lambda: SamplingConfig(temperature=0))
    seed: int = 0

    def __post_init__(self):
        if not self.prompt_ids or not all(_whole(i) and i >= 0 for i in self.prompt_ids):
            raise ConfigError(f"request {self.id}: prompt_ids must be a non-empty list of token ids")
        if not _whole(self.output_len) or self.output_len < 1:
            raise ConfigError(f"request {self.id}: output_len must be a whole number >= 1")
        if not _whole(self.arrival_step) or not 0 <= self.arrival_step <= MAX_ARRIVAL_STEP:
            raise ConfigError(f"request {self.id}: arrival_step must be a whole number in 0..{MAX_ARRIVAL_STEP}")
        if not _whole(self.seed) or not 0 <= self.seed < 2**63:
            raise ConfigError(f"request {self.id}: seed must be a whole number in [0, 2**63)")

    def to_dict(self) -> dict:
        s = asdict(self.sampling)
        return {"id": self.id, "arrival_step": self.arrival_step, "prompt_ids": list(self.prompt_ids),
                "output_len": self.output_len, "temperature": s["temperature"], "top_k": s["top_k"],
                "top_p": s["top_p"], "seed": self.seed}


@dataclass(frozen=True)
class RequestTrace:
    name: str
    requests: tuple
    note: str = ""

    def __post_init__(self):
        if not self.requests:
            raise ConfigError(f"trace {self.name!r} has no requests")
        if len(self.requests) > MAX_REQUESTS:
            raise ConfigError(f"trace {self.name!r} has {len(self.requests)} requests; at most {MAX_REQUESTS}")
        ids = [r.id for r in self.requests]
        if len(set(ids)) != len(ids):
            raise ConfigError(f"trace {self.name!r} repeats a request id")

    def check_vocab(self, vocab_size: int) -> None:
        bad = next((i for r in self.requests for i in r.prompt_ids if i >= vocab_size), None)
        if bad is not None:
            raise ConfigError(f"trace {self.name!r} holds token id {bad}, outside this model's vocabulary "
                              f"(0..{vocab_size - 1}): it was made for another tokenizer")

    def to_json(self) -> str:
        return json.dumps({"name": self.name, "note": self.note, "requests": [r.to_dict() for r in self.requests]})


def parse_trace(text: str, name: str = "trace") -> RequestTrace:
    """A trace from its JSON text; anything malformed is a TraceFormatError saying what and where."""
    try:
        doc = json.loads(text)
    except (ValueError, TypeError, RecursionError) as exc:  # RecursionError: absurdly nested brackets
        raise TraceFormatError(f"{name} is not JSON: {exc}") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("requests"), list):
        raise TraceFormatError(f"{name} needs an object with a list of \"requests\"")
    out = []
    for i, r in enumerate(doc["requests"]):
        try:
            sampling = SamplingConfig(temperature=float(r.get("temperature", 0.0)), top_k=int(r.get("top_k", 50)),
                                      top_p=float(r.get("top_p", 1.0)))
            out.append(Request(int(r.get("id", i)), r.get("arrival_step", 0), tuple(r["prompt_ids"]),
                               r["output_len"], sampling, r.get("seed", 0)))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise TraceFormatError(f"{name}: request {i} is malformed ({type(exc).__name__}: {exc})") from exc
    try:
        return RequestTrace(str(doc.get("name", name)), tuple(out), str(doc.get("note", "")))
    except ConfigError as exc:
        raise TraceFormatError(f"{name}: {exc}") from exc


def parse_trace_bytes(data: bytes, name: str = "trace") -> RequestTrace:
    """A trace from a file's bytes (a file read or uploaded): at most MAX_TRACE_BYTES of UTF-8 JSON."""
    if len(data) > MAX_TRACE_BYTES:
        raise TraceFormatError(f"{name} holds {len(data):,} bytes; a request trace may hold at most "
                               f"{MAX_TRACE_BYTES:,}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TraceFormatError(f"{name} is not UTF-8 text (byte {exc.start}: {exc.reason})") from exc
    return parse_trace(text, name)


def load_trace(name_or_path: str) -> RequestTrace:
    """A built-in trace by name, or a JSON file."""
    path = TRACES / f"{name_or_path}.json" if name_or_path in BUILT_IN else Path(name_or_path)
    try:
        if path.stat().st_size > MAX_TRACE_BYTES:
            raise TraceFormatError(f"{name_or_path} holds {path.stat().st_size:,} bytes; a request trace may hold "
                                   f"at most {MAX_TRACE_BYTES:,}")
        with open(path, "rb") as f:  # bounded: a device file (/dev/zero) has no size to check first
            data = f.read(MAX_TRACE_BYTES + 1)
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        raise TraceFormatError(f"cannot read the request trace {name_or_path!r} ({exc}); built-in traces: "
                               f"{', '.join(BUILT_IN)}") from exc
    return parse_trace_bytes(data, str(name_or_path))


def make_trace(kind: str, text_ids: list[int], seed: int = 0) -> RequestTrace:
    """A built-in trace drawn (seeded) from a stream of real token ids (held-out text)."""
    rng = random.Random(seed)

    def span(n: int) -> tuple:
        start = rng.randrange(0, len(text_ids) - n)
        return tuple(text_ids[start:start + n])

    def geometric(mean: float, cap: int) -> int:
        n = 1
        while rng.random() > 1 / mean and n < cap:
            n += 1
        return n

    if kind in ("mixed", "mixed-poisson"):
        reqs = [Request(i, 0, span(rng.randint(16, 128)), geometric(32, 256), seed=seed + i) for i in range(32)]
        arrivals = "all at step 0"
        if kind == "mixed-poisson":  # the same requests, arriving one every 2 steps on average
            clock, step, timed = random.Random(seed + 1), 0, []
            for r in reqs:
                timed.append(Request(r.id, step, r.prompt_ids, r.output_len, r.sampling, r.seed))
                step += round(clock.expovariate(0.5))
            reqs, arrivals = timed, "Poisson arrivals, one every 2 steps on average"
        note = f"32 requests, prompts of 16-128 tokens (uniform), outputs geometric (mean 32, at most 256); {arrivals}"
        return RequestTrace(kind, tuple(reqs), note)
    if kind == "shared-prompt":
        system = span(192)
        reqs = [Request(i, 0, system + span(rng.randint(16, 64)), 32, seed=seed + i) for i in range(16)]
        return RequestTrace(kind, tuple(reqs), "16 requests sharing a 192-token system prompt; user parts of 16-64 "
                                               "tokens; 32 output tokens each")
    raise ConfigError(f"unknown trace kind {kind!r}; kinds: {', '.join(BUILT_IN)}")
