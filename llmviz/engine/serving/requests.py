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
import math
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path

from llmviz.errors import ConfigError, NotAllowedError, TraceFormatError
from llmviz.files import read_regular
from llmviz.paths import TRACES
from llmviz.trace.config import SamplingConfig

BUILT_IN = ("mixed", "mixed-poisson", "shared-prompt")
MAX_REQUESTS = 1024
MAX_ARRIVAL_STEP = 10_000  # a simulation runs one engine step per step, idle or not
MAX_TRACE_BYTES = 2_000_000  # a trace file read or uploaded (the built-in ones are ~30 KB)
# The most work (trace_work: prompt + output tokens, static batching's padding included) an uploaded trace may
# ask of a public server, so that no visitor holds the heavy slot for long. Measured on this project's
# 2-core CPU (shared, load ~3), the embedded model: the worst case is 1 slot, one engine step per token, where
# 8,192 tokens took 67 s through static and 37 s through continuous batching (122 and 223 tokens/s): the
# Serving page's two runs in under 2 minutes. The built-in "mixed" (3,253 tokens) takes 2.0 s + 1.0 s at 8 slots;
# the built-in traces need at most 6,640 at any slot count 1-16 (mixed in 16 slots), so they pass.
PUBLIC_MAX_TRACE_TOKENS = 8_192


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
            raise ConfigError(f"trace {_shown(self.name)} has no requests")
        if len(self.requests) > MAX_REQUESTS:
            raise ConfigError(f"trace {_shown(self.name)} has {len(self.requests)} requests; at most {MAX_REQUESTS}")
        ids = [r.id for r in self.requests]
        if len(set(ids)) != len(ids):
            raise ConfigError(f"trace {_shown(self.name)} repeats a request id")

    def check_vocab(self, vocab_size: int) -> None:
        bad = next((i for r in self.requests for i in r.prompt_ids if i >= vocab_size), None)
        if bad is not None:
            raise ConfigError(f"trace {_shown(self.name)} holds token id {_shown(bad)}, outside this model's "
                              f"vocabulary (0..{vocab_size - 1}): it was made for another tokenizer")

    def to_json(self) -> str:
        return json.dumps({"name": self.name, "note": self.note, "requests": [r.to_dict() for r in self.requests]})


def _shown(value) -> str:
    """A value as an error message names it, cut short (an uploaded file could hold a megabyte in one field)."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _unique_keys(pairs: list) -> dict:
    """json.loads' object hook: a key written twice is an error, not silently the last one."""
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        twice = next(k for k in keys if keys.count(k) > 1)
        raise TraceFormatError(f"the key {_shown(twice)} appears twice in one object")
    return dict(pairs)


def _number(r: dict, key: str, default, whole: bool):
    """A field read strictly: a JSON number (whole where `whole`), never a bool or a string, and finite."""
    value = r.get(key, default)
    if whole and not _whole(value):
        raise ConfigError(f"{key} must be a whole number, got {_shown(value)}")
    if not whole and (isinstance(value, bool) or not isinstance(value, int | float) or not _finite(value)):
        raise ConfigError(f"{key} must be a finite number, got {_shown(value)}")
    return value


def _finite(value: int | float) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an int beyond any float (JSON allows 10**400)
        return False


def _request(r, i: int) -> Request:
    if not isinstance(r, dict):
        raise ConfigError(f"a request is an object, got {type(r).__name__}")
    rid = _number(r, "id", i, whole=True)
    if not 0 <= rid < 2**63:  # the JSON number 1e400 is a float (inf), refused above; 10**400 is an int
        raise ConfigError(f"id must be a whole number in [0, 2**63), got {_shown(rid)}")
    top_k = _number(r, "top_k", 50, whole=True)
    sampling = SamplingConfig(temperature=_number(r, "temperature", 0.0, whole=False), top_k=top_k,
                              top_p=_number(r, "top_p", 1.0, whole=False))
    if not isinstance(r.get("prompt_ids"), list):
        raise ConfigError(f"prompt_ids must be a list of token ids, got {_shown(r.get('prompt_ids'))}")
    return Request(rid, r.get("arrival_step", 0), tuple(r["prompt_ids"]), r.get("output_len"), sampling,
                   r.get("seed", 0))


def trace_work(trace: RequestTrace, slots: int | None = None) -> int:
    """A trace's work in tokens: every request's prompt and output, summed (continuous batching feeds each once).
    With `slots`, at least what static batching in that many slots computes: each batch of `slots` requests (in
    arrival order) pads every row to its longest prompt and runs until its longest output, so a batch of one long
    and fifteen one-token requests costs sixteen long rows (the waste K7 measures)."""
    tokens = sum(len(r.prompt_ids) + r.output_len for r in trace.requests)
    if slots is None:
        return tokens
    ordered = sorted(trace.requests, key=lambda r: (r.arrival_step, r.id))
    batches = [ordered[i:i + slots] for i in range(0, len(ordered), slots)]
    padded = sum(len(b) * (max(len(r.prompt_ids) for r in b) + max(r.output_len for r in b)) for b in batches)
    return max(tokens, padded)


def check_work(trace: RequestTrace, max_seq: int, limit: int | None = PUBLIC_MAX_TRACE_TOKENS,
               slots: int | None = None) -> int:
    """Refuse, before anything runs, a trace that a run cannot hold or (with a `limit`) should not be given; the work.

    Its longest request (prompt + output) must fit `max_seq`, a sequence's tokens (ConfigError); its work
    (trace_work, with static batching's padding when `slots` is given) must be at most `limit` tokens
    (NotAllowedError, code "serving_work", the figures as params). A public server passes PUBLIC_MAX_TRACE_TOKENS
    (1,024 requests x 2,047 tokens held the heavy slot for hours); `limit=None` checks the length only."""
    if slots is not None and (not isinstance(slots, int) or isinstance(slots, bool) or slots < 1):
        raise ConfigError(f"slots must be a whole number >= 1, got {slots!r}")
    longest = max(trace.requests, key=lambda r: (len(r.prompt_ids) + r.output_len, -r.id))
    need = len(longest.prompt_ids) + longest.output_len
    if need > max_seq:
        raise ConfigError(f"request {longest.id} of trace {_shown(trace.name)} needs {need:,} tokens (prompt + "
                          f"output) but a sequence holds {max_seq:,}")
    work = trace_work(trace, slots)
    if limit is not None and work > limit:
        tokens = trace_work(trace)
        padded = f"; static batching in {slots} slots, padding included" if slots else ""
        # a refusal that the padding makes (1,080 tokens, 16,320 in 16 slots) says so in its own message
        code = "serving_work_padded" if work > tokens else "serving_work"
        raise NotAllowedError(f"trace {_shown(trace.name)} asks for {work:,} tokens of work (prompt + output over "
                              f"its {len(trace.requests):,} requests{padded}); this server runs at most {limit:,} "
                              "per trace", code=code, work=work, limit=limit, requests=len(trace.requests),
                              tokens=tokens, slots=slots or 0)
    return work


def parse_trace(text: str, name: str = "trace") -> RequestTrace:
    """A trace from its JSON text; anything malformed is a TraceFormatError saying what and where.

    Strict: a bool is not a number, a string is not a number, non-finite numbers are refused, a key
    written twice in one object is an error; a leading UTF-8 byte order mark is dropped."""
    try:
        doc = json.loads(text.removeprefix("\ufeff"), object_pairs_hook=_unique_keys)
    except TraceFormatError as exc:
        raise TraceFormatError(f"{name}: {exc}") from exc
    except (ValueError, TypeError, RecursionError) as exc:  # RecursionError: absurdly nested brackets
        raise TraceFormatError(f"{name} is not JSON: {exc}") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("requests"), list):
        raise TraceFormatError(f"{name} needs an object with a list of \"requests\"")
    out = []
    for i, r in enumerate(doc["requests"]):
        try:
            out.append(_request(r, i))
        except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:  # ConfigError is a ValueError
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
        # a regular file only (a FIFO blocked the read forever, a device never ends), read bounded
        data = read_regular(path, MAX_TRACE_BYTES, "the request trace", TraceFormatError)
    except TraceFormatError as exc:
        raise TraceFormatError(f"{exc}; built-in traces: {', '.join(BUILT_IN)}") from exc
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
