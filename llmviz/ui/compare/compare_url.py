"""The Compare page's URL section (C8-C11, C14, C19-C21; ui/url_fields.py): the model ("" = Home's), settings A and
B as switch specs ("kv-dtype=fp16,attn=eager"), decode steps and timed rounds, cmp_run=1 to run it when the link
opens, cmp_ppl=1 for each side's held-out perplexity, and the long-context section's cached tokens."""

from __future__ import annotations

from llmviz.trace.config import RANDOM_MODELS
from llmviz.trace.switches import parse_spec
from llmviz.ui.url_fields import Field, Section, between, one_of, parses

SECTION = Section("compare", (
    Field("cmp_model", "", one_of(("", *RANDOM_MODELS))),  # the page's choices only
    Field("cmp_a", "", parses(parse_spec)),
    Field("cmp_b", "", parses(parse_spec)),
    Field("cmp_steps", 16, between(1, 128)),
    Field("cmp_repeats", 6, between(1, 10)),
    Field("cmp_run", 0, between(0, 1)),
    Field("cmp_ppl", 0, between(0, 1)),  # what a lossy switch costs (C11, C19, C21)
    Field("cmp_ctx", 1024, between(1, 2**20)),  # the quick decode claims' context
))
