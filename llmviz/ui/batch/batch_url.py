"""The Batch page's URL section (C13; ui/url_fields.py): its prompts, one per line ("" = examples of different
lengths), and the side a padded batch puts its pad tokens."""

from __future__ import annotations

from dataclasses import dataclass, field

from llmviz.trace.config import PADDINGS
from llmviz.ui.url_fields import Section, one_of, url


@dataclass(frozen=True)
class BatchSettings:
    prompts: str = field(default="", metadata=url("batch"))
    padding: str = field(default="right", metadata=url("padding", one_of(PADDINGS)))


SECTION = Section.of("batch", BatchSettings)
