"""Settings: everything that defines what the app shows, carried in the URL so a link reopens it.

A teacher can share `?model=llmviz-tiny&prompt=...&temperature=0&step=5&lang=zh` and the class opens
the same run at the same step: same seed, same settings, same tokens.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, fields, replace

from llmviz.errors import ConfigError
from llmviz.trace.config import (
    ATTN_BACKENDS,
    DTYPES,
    EMBEDDED_MODEL,
    PADDINGS,
    RANDOM_MODELS,
    EngineConfig,
    SamplingConfig,
)
from llmviz.trace.switches import LOAD_FIELDS, SWITCHES, format_spec, parse_spec
from llmviz.ui.lesson_steps import POSITIONS, STEP_IDS, opened

DEFAULT_MODEL = EMBEDDED_MODEL
# The prompt a session starts from in each interface language (issue 21): the article's own example in Chinese
DEFAULT_PROMPTS = {"en": "The list of", "zh": "济南的冬天"}
LANGS = tuple(DEFAULT_PROMPTS)
EXAMPLE_PROMPTS = ("The list of", "Return the", "This module provides", "济南的冬天")
DEVICES = ("auto", "cpu", "cuda", "mps")
# The UI captures every tensor, attention maps included ([heads, n, n] per layer): runs stay short enough
# for that to fit in memory and draw quickly.
MAX_UI_SEQ = 512
# Torch threads for UI runs: half the cores, so the browser and Streamlit keep the rest. On 2 cores a
# second torch thread made each step of the embedded model ~4x slower (45 vs 10 ms) while Chromium drew.
UI_THREADS = max(1, (os.cpu_count() or 2) // 2)
SLIDERS = {"temperature": (0.0, 2.0, 0.05), "top_k": (0, 100, 1), "top_p": (0.05, 1.0, 0.05)}  # min, max, step
RANGES = {**{name: (low, high) for name, (low, high, _) in SLIDERS.items()}, "seed": (0, 2**32 - 1),
          "step": (0, MAX_UI_SEQ), "present": (0, 1), "cmp_steps": (1, 128), "cmp_repeats": (1, 10), "cmp_run": (0, 1),
          "cmp_ppl": (0, 1), "cmp_ctx": (1, 2**20), "kv_step": (0, MAX_UI_SEQ), "kv_repeats": (1, 10)}
KV_BLOCK_SIZES = (4, 8, 16)  # the KV layouts page's choices
KV_MAX_SEQS = (64, 128, 256, 512)
KV_MAX_EXTRA = 3  # prompts beside the Home one on the KV layouts page


@dataclass(frozen=True)
class Settings:
    model: str = DEFAULT_MODEL
    device: str = "auto"
    dtype: str = "fp32"
    attn: str = "sdpa"
    prompt: str = DEFAULT_PROMPTS["en"]  # Settings.fresh(lang) starts a session in another language
    temperature: float = SamplingConfig.temperature  # the engine's defaults
    top_k: int = SamplingConfig.top_k
    top_p: float = SamplingConfig.top_p
    seed: int = 0
    lang: str = "en"
    present: int = 0  # 1: the presenter view (large type, no sidebar, the stepper and its figures in one screen)
    step: int = 0  # the step shown (0 = prefill)
    # Steps whose token was drawn with other sampling settings than the sliders now hold, as
    # "first-last:temperature,top_k,top_p;..." (see encode_history): with it a link replays a run exactly,
    # even when the sliders moved halfway through it.
    history: str = ""
    # Steps drawn with a fresh seed ("resample from this step"), as "step:seed;...": computing that step
    # starts the generator again from that seed (Session.reseed), so a link replays a resampled run exactly.
    reseed: str = ""
    # The Compare page (C8-C11, C14, C19-C21): the model ("" = the one above), settings A and B as switch specs
    # ("kv-dtype=fp16,attn=eager"), decode steps and timed rounds; cmp_run=1 runs it when the link opens.
    # More engine switches for the stepper's runs, as a switch spec ("kv-layout=paged,kv-dtype=fp16"); dtype
    # and attention have their own boxes.
    engine: str = ""
    cmp_model: str = ""
    cmp_a: str = ""
    cmp_b: str = ""
    cmp_steps: int = 16
    cmp_repeats: int = 3
    cmp_run: int = 0
    cmp_ppl: int = 0  # 1: also each side's held-out perplexity (C11, C19, C21: what a lossy switch costs)
    cmp_ctx: int = 1024  # the long-context section's cached tokens (the quick decode claims', issue 36)
    # The KV layouts page (C6, C8, C9, K3): the paged layout's block size, the live runs' max_seq_len, prompts
    # beside the Home one (one per line), the step shown; the sweep's model (a built-in shape or "home"), its
    # lengths ("" = automatic) and timed rounds.
    kv_bs: int = 4
    kv_max: int = 128
    kv_prompts: str = "Return the\nThis module provides"
    kv_step: int = 0
    kv_model: str = RANDOM_MODELS[0]
    kv_lengths: str = ""
    kv_repeats: int = 3
    # The Batch page (C13): its prompts, one per line ("" = examples of different lengths), and the pad side.
    batch: str = ""
    padding: str = "right"
    # The lesson (issue 23): the step shown, as "1.2.3" (section 1.2, its third step) or "end" (a link may name a
    # chapter, "4.2": it opens that chapter's first step)
    lesson: str = STEP_IDS[0]

    def sampling_for(self, step: int) -> SamplingConfig:
        """The settings step `step` is drawn with: its recorded ones from the link, else the sliders'."""
        recorded = decode_history(self.history).get(step)
        return SamplingConfig(*recorded) if recorded else self.sampling()

    def reseed_at(self, step: int) -> int | None:
        """The fresh seed step `step` is drawn with, if the run was resampled there."""
        return decode_reseed(self.reseed).get(step)

    def run_key(self) -> tuple:
        """What a run depends on at its start: change any of these and the run starts again."""
        return (self.model, self.device, self.dtype, self.attn, self.engine, self.prompt, self.seed)

    def switches(self) -> dict:
        """The EngineConfig changes the `engine` spec makes (ConfigError when it is malformed or names a switch
        that has its own box)."""
        changes = parse_spec(self.engine)
        own = {"dtype", "attn_backend"} & set(changes)
        if own:
            raise ConfigError(f"set {', '.join(sorted(own))} with its own box, not in the engine switches")
        return changes

    def load_options(self) -> dict:
        """The load-time switches of this run (the model is cached per combination)."""
        return {k: v for k, v in self.switches().items() if k in LOAD_FIELDS}

    def sampling(self) -> SamplingConfig:
        return SamplingConfig(temperature=self.temperature, top_k=self.top_k, top_p=self.top_p)

    def engine_config(self, context: int) -> EngineConfig:
        """The engine settings of a UI run on a model whose context is `context` tokens."""
        return EngineConfig(device=self.device, dtype=self.dtype, attn_backend=self.attn, sampling=self.sampling_for(0),
                            seed=self.seed, capture="full", logit_lens_top_k=5, max_seq_len=min(context, MAX_UI_SEQ),
                            **self.switches())

    def for_trace(self, trace) -> Settings:
        """The settings that compute a replayed trace's run live (its model, prompt, seed, first sampling,
        dtype, attention and other switches), so that the URL shown during a replay opens that run, not the
        live one from before. This session's language and other pages' settings stay."""
        c, default = trace.engine_config, EngineConfig()
        own = {"dtype", "attn_backend", "max_seq_len", "padding"}  # own boxes, the UI's cap, the Batch page's
        switches = {s.field: c[s.field] for s in SWITCHES.values()
                    if s.field not in own and s.field in c and c[s.field] != getattr(default, s.field)}
        sampling = c.get("sampling", {})
        device = c.get("device") if c.get("device") in DEVICES else "auto"
        seeds = [step.sampling.get("seed", trace.seed) for step in trace.steps]
        reseed = {j: seeds[j] for j in range(1, len(seeds)) if seeds[j] != seeds[j - 1]}
        return self.with_(model=str(trace.model_card.get("name", self.model)), prompt=trace.prompt,
                          seed=int(trace.seed), device=device, dtype=c.get("dtype", self.dtype),
                          attn=c.get("attn_backend", self.attn), engine=format_spec(switches),
                          temperature=float(sampling.get("temperature", self.temperature)),
                          top_k=int(sampling.get("top_k", self.top_k)), top_p=float(sampling.get("top_p", self.top_p)),
                          reseed=encode_reseed(reseed))

    def with_(self, **changes) -> Settings:
        return replace(self, **changes)

    def with_language(self, lang: str) -> Settings:
        """The interface in `lang`; the prompt follows only while it is still the other language's default."""
        follows = self.prompt == DEFAULT_PROMPTS[self.lang]
        return replace(self, lang=lang, prompt=DEFAULT_PROMPTS[lang] if follows else self.prompt)

    @classmethod
    def fresh(cls, lang: str = "en") -> Settings:
        """What a session opens with in `lang` (and what Reset demo puts back)."""
        return cls(lang=lang, prompt=DEFAULT_PROMPTS[lang])

    def to_query(self) -> dict[str, str]:
        default = Settings(prompt=DEFAULT_PROMPTS[self.lang])  # a link leaves out the prompt its language starts with
        return {k: str(v) for k, v in asdict(self).items() if v != getattr(default, k)}

    @classmethod
    def from_query(cls, params: dict) -> tuple[Settings, list[str]]:
        """Settings from URL parameters; bad values are dropped and reported, never raised."""
        values, problems = {}, []
        for f in fields(cls):
            if f.name not in params:
                continue
            raw = params[f.name]
            try:
                kind = type(getattr(cls(), f.name))
                values[f.name] = kind(raw)
            except (TypeError, ValueError):
                problems.append(f"{f.name}={raw!r}")
        if "lesson" in values:
            values["lesson"] = opened(values["lesson"])  # a chapter's link opens its first step
        checks = {"device": DEVICES, "dtype": DTYPES, "attn": ATTN_BACKENDS, "lang": LANGS, "padding": PADDINGS,
                  "kv_bs": KV_BLOCK_SIZES, "kv_max": KV_MAX_SEQS, "kv_model": (*RANDOM_MODELS, "home"),
                  "lesson": POSITIONS}
        for name, allowed in checks.items():
            if name in values and values[name] not in allowed:
                problems.append(f"{name}={values.pop(name)!r}")
        if values.get("cmp_model", "") not in ("", *RANDOM_MODELS):  # the Compare page's choices only
            problems.append(f"cmp_model={values.pop('cmp_model')!r}")
        for name in ("cmp_a", "cmp_b", "engine"):
            if name in values:
                try:
                    parse_spec(values[name])
                except ConfigError:
                    problems.append(f"{name}={values.pop(name)!r}")
        if "kv_lengths" in values:
            try:
                parse_lengths(values["kv_lengths"])
            except ConfigError:
                problems.append(f"kv_lengths={values.pop('kv_lengths')!r}")
        if len(extra_prompts(values.get("kv_prompts", ""))) > KV_MAX_EXTRA:
            problems.append(f"kv_prompts={values.pop('kv_prompts')!r}")
        if "reseed" in values:
            try:
                decode_reseed(values["reseed"])
            except ValueError:
                problems.append(f"reseed={values.pop('reseed')!r}")
        if "history" in values:
            try:
                decode_history(values["history"])
            except (ValueError, ConfigError):
                problems.append(f"history={values.pop('history')!r}")
        for name, (low, high) in RANGES.items():  # the sliders' ranges, and what the engine accepts
            if name in values and not low <= values[name] <= high:
                problems.append(f"{name}={values.pop(name)!r}")
        values.setdefault("prompt", DEFAULT_PROMPTS[values.get("lang", "en")])
        return cls(**values), problems


def language_of(locale: str | None) -> str | None:
    """The interface language a browser's locale asks for (navigator.language: "zh-CN", "zh-Hant-TW", "en-GB"),
    when the app speaks it; None otherwise. A Chinese locale of any region or script reads the zh interface."""
    tag = (locale or "").strip().lower().replace("_", "-")
    return next((lang for lang in LANGS if tag == lang or tag.startswith(f"{lang}-")), None)


def extra_prompts(text: str) -> list[str]:
    """The non-empty lines of a prompts box."""
    return [line.strip() for line in text.splitlines() if line.strip()]


def parse_lengths(text: str) -> list[int] | None:
    """ "64, 512 1024" -> [64, 512, 1024]; "" -> None (automatic); ConfigError when not whole numbers."""
    parts = text.replace(",", " ").split()
    if not parts:
        return None
    try:
        return [int(p) for p in parts]
    except ValueError as exc:
        raise ConfigError(f"lengths must be whole numbers separated by commas, got {text!r}",
                          code="sweep_lengths_text", text=text) from exc


def encode_history(per_step: list[tuple], now: tuple) -> str:
    """(temperature, top_k, top_p) of each computed step -> the runs of steps that differ from `now`."""
    parts, start = [], None
    for i, value in enumerate([*per_step, None]):
        if start is not None and value != per_step[start]:
            t, k, p = per_step[start]
            parts.append(f"{start}-{i - 1}:{t:g},{k},{p:g}")
            start = None
        if start is None and value is not None and value != now:
            start = i
    return ";".join(parts)


def decode_history(text: str) -> dict[int, tuple]:
    """The inverse of encode_history: {step: (temperature, top_k, top_p)}; ValueError when malformed."""
    out: dict[int, tuple] = {}
    for part in filter(None, text.split(";")):
        span, values = part.split(":")
        first, last = (int(x) for x in span.split("-"))
        t, k, p = values.split(",")
        sampling = (float(t), int(k), float(p))
        SamplingConfig(*sampling)  # the engine's checks (ConfigError)
        if not 0 <= first <= last <= MAX_UI_SEQ:
            raise ValueError(f"bad step range {span}")
        out.update(dict.fromkeys(range(first, last + 1), sampling))
    return out


def encode_reseed(seeds: dict[int, int]) -> str:
    """{step: seed} -> "3:912;7:44" (steps in order)."""
    return ";".join(f"{step}:{seed}" for step, seed in sorted(seeds.items()))


def decode_reseed(text: str) -> dict[int, int]:
    """The inverse of encode_reseed; ValueError when malformed or out of range."""
    out: dict[int, int] = {}
    for part in filter(None, text.split(";")):
        step, seed = (int(x) for x in part.split(":"))
        if not 1 <= step <= MAX_UI_SEQ or not 0 <= seed < 2**32:
            raise ValueError(f"bad reseed entry {part}")
        out[step] = seed
    return out
