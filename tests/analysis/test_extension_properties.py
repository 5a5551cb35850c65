"""Extensions declare what they do, not only their names (trace/extensions.Extension: `scores`, `growth`): the
pages' sentences and the memory calculator read those properties, so a layout or backend declared out of tree is
described and priced by what it does. Hand cases, and toy declarations added to the tables and removed again."""

from __future__ import annotations

from contextlib import contextmanager

import pytest

from llmviz.analysis.lab import attention_change
from llmviz.analysis.memory_calc import MemoryQuestion, answer, bundled_text, savings
from llmviz.engine.models import config_from_text
from llmviz.errors import ConfigError
from llmviz.trace.config import ATTN_BACKENDS, KV_LAYOUTS
from llmviz.trace.extensions import GROWTHS, Extension, block_slots, kept_slots, row_slots


@contextmanager
def declared(table, ext: Extension):
    table.add(ext)
    try:
        yield ext
    finally:
        table.remove(ext.name)


def test_every_stock_choice_says_what_it_does():
    """Read from the tables, so a new stock choice must say it too."""
    assert all(isinstance(ATTN_BACKENDS.describe(b).scores, bool) for b in ATTN_BACKENDS)
    assert all(KV_LAYOUTS.describe(x).growth in GROWTHS for x in KV_LAYOUTS.recorded)
    # by hand, from the engine's own code: eager materializes softmax(QK^T); the fused kernels never do
    assert ATTN_BACKENDS.having(scores=True) == ("eager",)
    assert KV_LAYOUTS.having(growth="reserves") == ("contiguous",) and KV_LAYOUTS.having(growth="blocks") == ("paged",)


@pytest.mark.parametrize(("fields", "says"), [({"scores": "yes"}, "scores is True"),
                                               ({"growth": "teleports"}, "growth is one of reserves, copies")])
def test_a_property_it_cannot_have_is_refused(fields, says):
    with pytest.raises(ConfigError, match=says):
        Extension("toy", **fields)


@pytest.mark.parametrize(("a", "b", "key"), [("eager", "sdpa", "attn"), ("eager", "flash", "attn"),
                                             ("sdpa", "eager", "attn_scores"), ("sdpa", "flash", "attn_kernel")])
def test_the_compare_pages_sentence_follows_what_each_backend_does(a, b, key):
    assert attention_change({"attn_backend": a}, {"attn_backend": b}) == key


def test_an_out_of_tree_backend_is_described_by_its_declaration():
    with declared(ATTN_BACKENDS, Extension("toy-online", scores=False)):
        assert attention_change({"attn_backend": "eager"}, {"attn_backend": "toy-online"}) == "attn"
    with declared(ATTN_BACKENDS, Extension("toy-silent")):  # it does not say: only "the kernel differs"
        assert attention_change({"attn_backend": "eager"}, {"attn_backend": "toy-silent"}) == "attn_kernel"


def test_the_calculator_prices_a_layout_by_how_it_grows():
    """Llama-2-7B, 4 sequences of 1,000 tokens, max_seq 4,096 (fp16: 0.5 MiB a token). A toy layout that reserves
    its rows is offered the paged move (4 x (4,096 - 1,008) tokens saved: the paged blocks of 16 hold 1,008) as
    contiguous is; one that copies as it grows holds its 1,000 tokens and is offered none."""
    c = config_from_text(bundled_text("llama-2-7b"), "llama-2-7b").to_dict()
    per_token = 32 * 2 * 32 * 128 * 2
    with declared(KV_LAYOUTS, Extension("toy-rows", slots=row_slots, growth="reserves")):
        q = MemoryQuestion(batch=4, max_seq=4096, tokens=1000, dtype="fp16", layout="toy-rows")
        assert answer(c, q).kv_total == 4 * 4096 * per_token
        moves = {s.key: s for s in savings(c, q)}
        assert moves["paged"].changes["layout"] == "paged" and moves["paged"].saved == 4 * (4096 - 1008) * per_token
    with declared(KV_LAYOUTS, Extension("toy-copies", slots=kept_slots, growth="copies")):
        q = MemoryQuestion(batch=4, max_seq=4096, tokens=1000, dtype="fp16", layout="toy-copies")
        assert answer(c, q).kv_total == 4 * 1000 * per_token and "paged" not in {s.key for s in savings(c, q)}
    with declared(KV_LAYOUTS, Extension("toy-pool", slots=block_slots, growth="blocks")):
        assert KV_LAYOUTS.having(growth="blocks") == ("paged", "toy-pool")  # the stock one first
