"""The Batch page's URL section (C13; ui/url_fields.py): its prompts, one per line ("" = examples of different
lengths), and the side a padded batch puts its pad tokens."""

from __future__ import annotations

from llmviz.trace.config import PADDINGS
from llmviz.ui.url_fields import Field, Section, one_of

SECTION = Section("batch", (
    Field("batch", ""),
    Field("padding", "right", one_of(PADDINGS)),
))
