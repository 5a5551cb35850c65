"""The Compare page's URL section (C8-C11, C14, C19-C21; ui/url_fields.py): the model ("" = Home's), settings A and
B as switch specs ("kv-dtype=fp16,attn=eager"), decode steps and timed rounds, cmp_run=1 to run it when the link
opens, cmp_ppl=1 for each side's held-out perplexity, and the long-context section's cached tokens."""

from __future__ import annotations

from dataclasses import dataclass, field

from llmviz.trace.config import RANDOM_MODELS
from llmviz.trace.switches import parse_spec
from llmviz.ui.url_fields import Section, between, flag, one_of, parses, url


@dataclass(frozen=True)
class CompareSettings:
    model: str = field(default="", metadata=url("cmp_model", one_of(("", *RANDOM_MODELS))))  # the page's choices only
    a: str = field(default="", metadata=url("cmp_a", parses(parse_spec)))
    b: str = field(default="", metadata=url("cmp_b", parses(parse_spec)))
    steps: int = field(default=16, metadata=url("cmp_steps", between(1, 128)))
    repeats: int = field(default=6, metadata=url("cmp_repeats", between(1, 10)))
    run: bool = field(default=False, metadata=flag("cmp_run"))
    ppl: bool = field(default=False, metadata=flag("cmp_ppl"))  # what a lossy switch costs (C11, C19, C21)
    ctx: int = field(default=1024, metadata=url("cmp_ctx", between(1, 2**20)))  # the quick decode claims' context


SECTION = Section.of("compare", CompareSettings)
