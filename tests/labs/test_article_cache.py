"""The article's cache allocated for real (labs/article_cache.py; C4, §1.2's 6 MB at 1,024 tokens): the bytes torch
holds against the shapes by hand, and bad token counts refused with a typed error."""

import pytest

from llmviz.errors import ConfigError
from llmviz.labs.article_cache import MOST_TOKENS, article_cache_bytes


@pytest.mark.parametrize("tokens", [1, 1024, 1000])
def test_the_allocator_holds_the_articles_bytes(tokens):
    got = article_cache_bytes(tokens)
    assert got["bytes"] == tokens * 12 * 64 * 2 * 4  # K and V, 12 heads of 64, fp32: 6,291,456 at 1,024
    assert got["shape"] == [[2, 1, 12, tokens, 64]] and got["dtype"] == "float32"
    assert got["bytes_allocated"] == got["bytes"]


@pytest.mark.parametrize("tokens", [0, -3, MOST_TOKENS + 1, 2.5, "1024"])
def test_a_bad_token_count_is_refused(tokens):
    with pytest.raises(ConfigError, match="tokens must be a whole number"):
        article_cache_bytes(tokens)
