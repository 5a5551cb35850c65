"""A claim of the article is one declaration (docs/concepts.md's K1-K11): one file in
llmviz/analysis/claimdefs/ holds what the article states and its figure, the effects with their units and bands,
the lab and workload that measure it, the rule from the lab's figures to the effects, what the arithmetic
predicts, the measured facts its sentences may name, its concepts and slips. The Claims page, the lesson's
Reveal, the CLI, the exports and the labs iterate over `declared()`; nothing outside a declaration keys on a
claim's id (the lesson step that places it aside). A new claim is one new module (plus its catalogue lines:
claims.article.<id>, concept.<id>, lesson.behind.<id>, lesson.cause.<id>).

Pure Python: a declaration's rule reads numbers; the lab it names (llmviz/labs/claim_labs.LABS) runs the engine.
"""

from __future__ import annotations

import importlib
import math
import pkgutil
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache

from llmviz.errors import ConfigError

# How an effect reads: a ratio as "x1.80" (the effect + 1), a share as "50%", a gain in points as "+40 pts"
RATIO, SHARE, POINTS = "ratio", "share", "points"
KINDS = (RATIO, SHARE, POINTS)
# The models a claim's lab runs: the embedded one, the GPT-2-124M shape (2,048 tokens of context), or the plan's
# base model (the embedded one in a quick run, the GPT-2 shape in a full one)
EMBEDDED, LONG, BASE = "embedded", "long", "base"
SERVING_SLOTS = 8  # the serving claims' slots (their lab: labs/claim_labs.serving_lab; K7's Gantt in the lesson)
MODELS = (EMBEDDED, LONG, BASE)
_ID = re.compile(r"K[1-9][0-9]*")


@dataclass(frozen=True)
class EffectSpec:
    """One effect a claim is judged on: its name (catalogue claims.effect.<name>), how it reads, the article's
    number in the effect's own unit (a speed-up of x1.8: 0.8; memory halved: 0.5), and what bounds it."""

    name: str
    kind: str
    article: float
    bounded: bool = False  # a law (K1: "linear"), not "at least this much": also at most 1.5 times the article's
    from_bytes: bool = False  # a decode step's time, predicted by the bytes each side's step reads
    physical: tuple[float, float] | None = None  # the values it can take at all (a share of a step: 0 to 1)

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"effect {self.name!r}: kind must be one of {KINDS}, got {self.kind!r}")
        if not math.isfinite(self.article) or self.article == 0:
            raise ValueError(f"effect {self.name!r}: the article's effect is a finite, non-zero number")
        if self.physical is not None and not self.physical[0] < self.physical[1]:
            raise ValueError(f"effect {self.name!r}: a physical range runs from low to high, got {self.physical}")


@dataclass(frozen=True)
class Lab:
    """What measures a claim: a lab kind of llmviz/labs/claim_labs.LABS, the model it runs, and its options."""

    kind: str
    model: str = EMBEDDED
    options: Mapping = field(default_factory=dict)

    def __post_init__(self):
        if self.model not in MODELS:
            raise ValueError(f"a lab runs one of the models {MODELS}, got {self.model!r}")


Figures = dict  # what a lab returned for the claim: numbers, {median, min, max, all} spreads, its workload


@dataclass(frozen=True)
class ClaimSpec:
    """One claim, whole. `rule(figures)` gives ({effect name: Estimate}, {headline name: number}): the effects
    judged by the one rule (analysis/claims.py) and the numbers the table and the JSON show beside them."""

    id: str
    concepts: tuple[str, ...]
    article: str  # the article's figures as it gives them (its catalogue line claims.article.<id> says them)
    effects: tuple[EffectSpec, ...]
    lab: Lab
    rule: Callable[[Figures], tuple[dict, dict]]
    predicted: str  # the effect a student predicts: the one the article's sentence is about
    second: str | None = None  # an effect the student may predict after the first ("predict again")
    # a counted claim's numbers behind it (lesson.behind.<id>); a timed one shows its rounds (ui/claims/claim_rounds)
    behind: Callable[[dict], dict | None] | None = None
    beside: Callable[[dict], dict | None] | None = None  # headline -> values of claims.beside.<id>, or None
    depends: Callable[[dict], tuple[str, dict] | None] | None = None  # a count's inputs: (catalogue key, values)
    facts: tuple[str, ...] = ()  # the measured facts lesson.cause.<id> names (lesson_reveal.measured_facts)
    bytes_why: str = "why_kv"  # lesson.arithmetic.<this>: why the bytes predict what they do
    slips: tuple[str, ...] = ()  # the article's slips about it (analysis/article.SLIPS)
    step_map: Mapping = field(default_factory=dict)  # {side: tensors the measurement turns on} (analysis/step_map)

    def __post_init__(self):
        if not _ID.fullmatch(self.id):
            raise ValueError(f"a claim's id is K and a number, got {self.id!r}")
        names = [e.name for e in self.effects]
        if not names or len(set(names)) != len(names):
            raise ValueError(f"{self.id}: one or more effects, each named once, got {names}")
        for name in (self.predicted, self.second):
            if name is not None and name not in names:
                raise ValueError(f"{self.id}: {name!r} is not one of its effects {names}")

    def effect(self, name: str) -> EffectSpec:
        return next(e for e in self.effects if e.name == name)

    @property
    def article_effects(self) -> dict[str, float]:
        """{effect name: the article's effect}."""
        return {e.name: e.article for e in self.effects}

    @property
    def from_bytes(self) -> tuple[EffectSpec, ...]:
        """The effects the bytes a decode step reads predict (a decode pair's claims)."""
        return tuple(e for e in self.effects if e.from_bytes)


PACKAGE = "llmviz.analysis.claimdefs"


@cache
def declared() -> dict[str, ClaimSpec]:
    """Every claim declared in llmviz/analysis/claimdefs/ (each module's CLAIM), in the order of their numbers.
    One effect name reads one way in every claim that names it (K4's and K9's memory saved are both shares)."""
    package = importlib.import_module(PACKAGE)
    found: dict[str, ClaimSpec] = {}
    for info in pkgutil.iter_modules(package.__path__):
        claim = getattr(importlib.import_module(f"{PACKAGE}.{info.name}"), "CLAIM", None)
        if not isinstance(claim, ClaimSpec):
            raise TypeError(f"{PACKAGE}.{info.name} declares no CLAIM (a ClaimSpec)")
        if claim.id in found:
            raise ValueError(f"claim {claim.id} is declared twice")
        found[claim.id] = claim
    kinds: dict[str, str] = {}
    for claim in found.values():
        for e in claim.effects:
            if kinds.setdefault(e.name, e.kind) != e.kind:
                raise ValueError(f"effect {e.name!r} reads as {kinds[e.name]} in one claim and {e.kind} in {claim.id}")
    return dict(sorted(found.items(), key=lambda item: int(item[0][1:])))


def ids() -> tuple[str, ...]:
    return tuple(declared())


def claim(claim_id: str) -> ClaimSpec:
    """The declaration of `claim_id`; ConfigError listing the claims otherwise."""
    try:
        return declared()[claim_id]
    except KeyError:
        raise ConfigError(f"no claim {claim_id!r}; the claims are {', '.join(declared())}") from None


def effect_kind(name: str) -> str:
    """How an effect reads (RATIO, SHARE or POINTS), whichever claim names it."""
    for c in declared().values():
        for e in c.effects:
            if e.name == name:
                return e.kind
    raise KeyError(f"no claim has an effect {name!r}")


def measured_by(lab_kind: str) -> tuple[ClaimSpec, ...]:
    """The claims a lab kind measures: a full page judges its own sweep as these (the KV layouts page's as K3)."""
    return tuple(c for c in declared().values() if c.lab.kind == lab_kind)


def sharing(claim_id: str) -> tuple[str, ...]:
    """The claims one measurement of `claim_id`'s workload serves, in declaration order, itself included: those
    whose lab (kind, model, options) is the same (K2 and K4 read one kv-fp16 decode pair). A run of the workload
    judges them all (labs/claims.Measurer.measure), so a lesson's run ahead of K2 reveals K4 too."""
    lab = claim(claim_id).lab
    return tuple(c.id for c in declared().values() if c.lab == lab)
