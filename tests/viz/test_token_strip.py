"""C1: the token strip figure (llmviz.viz.tokens): one box per token, one per character group."""

import numpy as np

from llmviz.analysis.tokens import alone, group_by_character
from llmviz.viz.tokens import lines_of, token_strip

JINAN = "济南的冬天"


def jinan_pieces() -> list[bytes]:
    return [bytes([b]) for b in JINAN.encode("utf-8")] + [b" of", b" values"]  # 15 byte tokens + 2 words


def test_every_token_and_group_is_drawn():
    pieces = jinan_pieces()
    groups = group_by_character(pieces)
    fig = token_strip([alone(p) for p in pieces], list(range(100, 117)), [p.hex(" ") for p in pieces], groups,
                      "title", "tokens", "characters")
    tokens, chars = fig.data
    assert len(tokens.text) == 17 and list(chars.text) == [*JINAN, "␣of", "␣values"]
    assert tokens.text[0].startswith("e6<br>") and "100" in tokens.text[0]  # a byte token shows its hex and id
    assert tokens.text[15].startswith("␣of<br>")
    assert len(fig.layout.shapes) == 17 + len(groups)
    # each character box spans exactly its 3 byte tokens
    boxes = [s for s in fig.layout.shapes if s.fillcolor == "#ffc98a"]
    assert len(boxes) == 5 and all(np.isclose(b.x1 - b.x0, 2.92) for b in boxes)


def test_lines_break_between_groups_only():
    groups = group_by_character(jinan_pieces())
    lines = lines_of(groups, per_row=7)
    assert [[g.text for g in line] for line in lines] == [["济", "南"], ["的", "冬"], ["天", " of", " values"]]
    assert all(sum(g.size for g in line) <= 7 for line in lines)
    assert lines_of(groups, per_row=2)[0][0].size == 3  # a group longer than a line gets a line of its own
