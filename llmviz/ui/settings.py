"""Settings: everything that defines what the app shows, carried in the URL so a link reopens it.

A teacher can share `?model=llmviz-tiny&prompt=...&temperature=0&step=5&lang=zh` and the class opens
the same run at the same step: same seed, same settings, same tokens.

`Settings` is written out here: the fields every page shares, then each page family's own section nested in it, a
typed dataclass declared beside the family's code (ui/compare/compare_url.py, ui/layouts/layouts_url.py,
ui/batch/batch_url.py, ui/memory_url.py, the lesson's in ui/lesson/lesson_steps.py). Each field names its URL
parameter, its default and its check (ui/url_fields.py); one loop reads them all, and each section writes its own.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace

from llmviz.errors import ConfigError
from llmviz.trace.config import ATTN_BACKENDS, DTYPES, EMBEDDED_MODEL, EngineConfig, SamplingConfig
from llmviz.trace.switches import LOAD_FIELDS, SWITCHES, format_spec, parse_spec
from llmviz.ui import memory_url
from llmviz.ui.batch import batch_url
from llmviz.ui.batch.batch_url import BatchSettings
from llmviz.ui.compare import compare_url
from llmviz.ui.compare.compare_url import CompareSettings
from llmviz.ui.layouts import layouts_url
from llmviz.ui.layouts.layouts_url import LayoutsSettings
from llmviz.ui.lesson import lesson_steps
from llmviz.ui.lesson.lesson_steps import LessonSettings
from llmviz.ui.memory_url import MemorySettings
from llmviz.ui.url_fields import Section, between, flag, one_of, parses, read, url

DEFAULT_MODEL = EMBEDDED_MODEL
# The prompt a session starts from in each interface language: the article's own example in Chinese
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
SEEDS = (0, 2**32 - 1)  # the seeds a link and the seed box take


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
        if not 1 <= step <= MAX_UI_SEQ or not SEEDS[0] <= seed <= SEEDS[1]:
            raise ValueError(f"bad reseed entry {part}")
        out[step] = seed
    return out


def _slider(name: str):
    low, high, _ = SLIDERS[name]
    return field(default=getattr(SamplingConfig, name), metadata=url(name, between(low, high)))  # the engine's


@dataclass(frozen=True)
class Settings:
    """Everything that defines what the app shows, carried in the URL so a link reopens it: the fields every page
    shares, then each page family's own section (its dataclass, with its URL fields)."""

    model: str = field(default=DEFAULT_MODEL, metadata=url("model"))
    device: str = field(default="auto", metadata=url("device", one_of(DEVICES)))
    dtype: str = field(default="fp32", metadata=url("dtype", one_of(DTYPES)))
    attn: str = field(default="sdpa", metadata=url("attn", one_of(ATTN_BACKENDS)))  # a plugin's too (loaded first)
    prompt: str = field(default=DEFAULT_PROMPTS["en"], metadata=url("prompt"))  # a link without one: its language's
    temperature: float = _slider("temperature")
    top_k: int = _slider("top_k")
    top_p: float = _slider("top_p")
    seed: int = field(default=0, metadata=url("seed", between(*SEEDS)))
    lang: str = field(default="en", metadata=url("lang", one_of(LANGS)))
    present: bool = field(default=False, metadata=flag("present"))  # the presenter view: large type, one screen
    step: int = field(default=0, metadata=url("step", between(0, MAX_UI_SEQ)))  # the step shown (0 = prefill)
    # Steps whose token was drawn with other sampling settings than the sliders now hold, as
    # "first-last:temperature,top_k,top_p;..." (see encode_history): with it a link replays a run exactly,
    # even when the sliders moved halfway through it.
    history: str = field(default="", metadata=url("history", parses(decode_history)))
    # Steps drawn with a fresh seed ("resample from this step"), as "step:seed;...": computing that step
    # starts the generator again from that seed (Session.reseed), so a link replays a resampled run exactly.
    reseed: str = field(default="", metadata=url("reseed", parses(decode_reseed)))
    # More engine switches for the stepper's runs, as a switch spec ("kv-layout=paged,kv-dtype=fp16"); dtype
    # and attention have their own boxes.
    engine: str = field(default="", metadata=url("engine", parses(parse_spec)))
    compare: CompareSettings = field(default_factory=CompareSettings)
    layouts: LayoutsSettings = field(default_factory=LayoutsSettings)
    batch: BatchSettings = field(default_factory=BatchSettings)
    lesson: LessonSettings = field(default_factory=LessonSettings)
    memory: MemorySettings = field(default_factory=MemorySettings)

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
        """These fields changed; a section's changes as a dict of its own (with_(lesson={"at": "1.2.3"}))."""
        for name, value in changes.items():
            if name in NESTED and isinstance(value, dict):
                changes[name] = replace(getattr(self, name), **value)
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
        """The link's parameters: each section writes its own fields that differ from their defaults (the prompt its
        language starts with left out)."""
        shared = SHARED.written(self)
        if self.prompt == DEFAULT_PROMPTS[self.lang]:
            shared.pop("prompt", None)
        else:
            shared["prompt"] = self.prompt
        return {**shared, **{k: v for name, section in NESTED.items() for k, v in
                             section.written(getattr(self, name)).items()}}

    @classmethod
    def from_query(cls, params: dict) -> tuple[Settings, list[str]]:
        """Settings from URL parameters (every section's fields, one loop); bad values are dropped and reported,
        never raised."""
        values, problems = read(SECTIONS, params)
        values.setdefault("prompt", DEFAULT_PROMPTS[values.get("lang", "en")])
        shared = {f.attr: values[f.name] for f in SHARED.fields if f.name in values}
        return cls(**shared, **{name: section.build(values) for name, section in NESTED.items()}), problems


SHARED = Section.of("shared", Settings)  # the fields every page shares
NESTED = {"compare": compare_url.SECTION, "layouts": layouts_url.SECTION, "batch": batch_url.SECTION,
          "lesson": lesson_steps.SECTION, "memory": memory_url.SECTION}  # Settings' attribute -> its section
SECTIONS = (SHARED, *NESTED.values())
_NAMES = [f.name for section in SECTIONS for f in section.fields]
if len(set(_NAMES)) != len(_NAMES):
    raise ConfigError("two URL sections declare the same field")


def language_of(locale: str | None) -> str | None:
    """The interface language a browser's locale asks for (navigator.language: "zh-CN", "zh-Hant-TW", "en-GB"),
    when the app speaks it; None otherwise. A Chinese locale of any region or script reads the zh interface."""
    tag = (locale or "").strip().lower().replace("_", "-")
    return next((lang for lang in LANGS if tag == lang or tag.startswith(f"{lang}-")), None)
