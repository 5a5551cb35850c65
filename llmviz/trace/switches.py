"""Every optimization switch of the engine, declared once: its name (the CLI flag without `--`), the
EngineConfig field it sets, the values it takes, whether it changes the weights at load, and whether it
is exact (the same arithmetic, up to float rounding) or lossy (C8-C11, C13, C14, C19-C21).

The CLI, the compare spec ("kv-dtype=fp16,attn=eager"), the Compare page and the Home page all read this
table; the pages' one-line explanations live in the message catalogs under `switch.<name>`. No torch here.
The KV layouts and attention backends are tables of declarations (trace/extensions.py), so one an extension
registers is a choice here too, exact or lossy as its declaration says.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, fields

from llmviz.errors import ConfigError
from llmviz.trace.config import (
    ATTN_BACKENDS,
    DTYPES,
    FUSED_CHOICES,
    KV_DTYPES,
    KV_LAYOUTS,
    PADDINGS,
    QUANT_MODES,
    EngineConfig,
)
from llmviz.trace.extensions import Names

LOAD_FIELDS = ("dtype", "kv_heads", "fused_qkv", "quant", "quant_group")  # each rewrites the weights at load


@dataclass(frozen=True)
class Switch:
    name: str  # as written on the command line and in a compare spec: "kv-dtype"
    field: str  # the EngineConfig field: "kv_dtype"
    kind: type  # str, int or bool
    choices: Collection[str] = ()  # for str switches: a tuple, or a table an extension extends (extensions.Names)
    exact: bool = True  # False: the outputs may change (a lossy approximation); a Names value: its declaration's
    concept: str = ""  # the concept id of shared/concepts.md it shows

    @property
    def at_load(self) -> bool:
        return self.field in LOAD_FIELDS

    @property
    def optional(self) -> bool:
        """It can be off ("none"): the EngineConfig default is None."""
        return EngineConfig.__dataclass_fields__[self.field].default is None

    def parse(self, raw: str):
        """The value a spec writes as text -> the EngineConfig value; ConfigError when it is not one."""
        text = raw.strip()
        if self.kind is bool:
            if text.lower() in ("", "on", "true", "1", "yes"):
                return True
            if text.lower() in ("off", "false", "0", "no"):
                return False
            raise ConfigError(f"{self.name}={raw!r}: write on or off")
        if self.kind is int:
            if self.optional and text.lower() in ("none", "off", "auto"):
                return None
            try:
                return int(text)
            except ValueError:
                raise ConfigError(f"{self.name}={raw!r} is not a whole number") from None
        if isinstance(self.choices, Names):  # a registered layout or backend is a choice; "ring" says how to get it
            return self.choices.check(text, self.name)
        if text not in self.choices:
            raise ConfigError(f"{self.name}={raw!r} is not one of {', '.join(self.choices)}")
        return text

    def exact_at(self, value) -> bool:
        """Whether this switch at `value` computes what the default does (up to float rounding)."""
        if isinstance(self.choices, Names) and value in self.choices.recorded:
            return self.choices.describe(value).exact
        return self.exact or value in _EXACT_VALUES.get(self.name, ())

    def show(self, value) -> str:
        if self.kind is bool:
            return "on" if value else "off"
        return "auto" if value is None else str(value)


SWITCHES = {s.name: s for s in (
    Switch("dtype", "dtype", str, DTYPES, exact=False, concept="C11"),
    Switch("attn", "attn_backend", str, ATTN_BACKENDS, concept="C14"),
    Switch("kv-layout", "kv_layout", str, KV_LAYOUTS, concept="C8"),
    Switch("kv-dtype", "kv_dtype", str, KV_DTYPES, exact=False, concept="C11"),
    Switch("kv-block-size", "kv_block_size", int, concept="C9"),
    Switch("kv-pool-blocks", "kv_pool_blocks", int, concept="C9"),
    Switch("kv-budget-bytes", "kv_budget_bytes", int, concept="C17"),
    Switch("kv-heads", "kv_heads", int, exact=False, concept="C19"),
    Switch("fused-qkv", "fused_qkv", str, FUSED_CHOICES, concept="C10"),
    Switch("sliding-window", "sliding_window", int, exact=False, concept="C20"),
    Switch("kv-rollback", "kv_rollback", int, concept="C20"),
    Switch("sparse-block", "sparse_block", int, exact=False, concept="C20"),
    Switch("sparse-local", "sparse_local", int, concept="C20"),  # alone they change nothing: sparse-block is lossy
    Switch("sparse-global", "sparse_global", int, concept="C20"),
    Switch("quant", "quant", str, QUANT_MODES, exact=False, concept="C21"),
    Switch("quant-group", "quant_group", int, exact=False, concept="C21"),
    Switch("compile", "compile", bool, concept="C10"),
    Switch("padding", "padding", str, PADDINGS, concept="C13"),
)}
# Which values of a lossy switch still compute the same thing as the default (e.g. kv-dtype=auto).
_EXACT_VALUES = {"dtype": ("fp32",), "kv-dtype": ("auto", "fp32"), "kv-heads": (None,), "sliding-window": (None,),
                 "sparse-block": (None,),
                 "quant": ("none",)}


def parse_spec(spec: str) -> dict:
    """"kv-dtype=fp16,attn=eager" -> {"kv_dtype": "fp16", "attn_backend": "eager"} (EngineConfig fields).
    An empty spec is the defaults. A bare name sets a boolean switch ("compile")."""
    changes: dict = {}
    for part in filter(None, (p.strip() for p in (spec or "").split(","))):
        name, _, value = part.partition("=")
        name = name.strip()
        if name not in SWITCHES:
            raise ConfigError(f"unknown switch {name!r} in {spec!r}; switches: {', '.join(SWITCHES)}")
        switch = SWITCHES[name]
        if switch.field in changes:
            raise ConfigError(f"{name} is set twice in {spec!r}")
        if not value and switch.kind is not bool:
            raise ConfigError(f"{name} needs a value: {name}=...")
        changes[switch.field] = switch.parse(value)
    return changes


def format_spec(changes: dict) -> str:
    """The inverse of parse_spec, in the table's order: {"kv_dtype": "fp16"} -> "kv-dtype=fp16"."""
    by_field = {s.field: s for s in SWITCHES.values()}
    unknown = set(changes) - set(by_field)
    if unknown:
        raise ConfigError(f"not switches: {sorted(unknown)}")
    return ",".join(f"{s.name}={s.show(changes[s.field])}" for s in SWITCHES.values() if s.field in changes)


def lossy_changes(changes: dict) -> list[str]:
    """The switches in `changes` that may change the outputs (their names): a lossy switch set to another value
    than its exact ones, or a layout or backend whose declaration says it is lossy."""
    return [s.name for s in SWITCHES.values() if s.field in changes and not s.exact_at(changes[s.field])]


def load_options(config: EngineConfig) -> dict:
    """The load-time switches of a config: what a loaded model must have been loaded with."""
    return {f: getattr(config, f) for f in LOAD_FIELDS}


def engine_fields() -> set[str]:
    return {f.name for f in fields(EngineConfig)}
