"""C1: byte tokens grouped back into the characters they spell (llmviz.analysis.tokens)."""

from pathlib import Path

import pytest

from llmviz.analysis.tokens import (
    REPLACEMENT,
    alone,
    group_by_character,
    hex_spaced,
    non_ascii_characters,
    position_labels,
    split_groups,
    trace_token_bytes,
    visible,
)

ROOT = Path(__file__).resolve().parents[2]
EMBEDDED = ROOT / "assets" / "llmviz-tiny"
JINAN = "济南的冬天"


def engine_tokens(folder: Path, text: str):
    """ids and the trace's token table, made by the engine's tokenizer wrapper (as a run records them)."""
    from transformers import PreTrainedTokenizerFast

    from llmviz.engine.loading.tokens import Tokenizer

    hf = PreTrainedTokenizerFast.from_pretrained(str(folder))
    tok = Tokenizer(hf, len(hf), ())
    ids = hf.encode(text, add_special_tokens=False)
    return ids, tok.describe(ids)


@pytest.fixture(params=["embedded", "factory"])
def tokenizer_folder(request, tmp_path):
    if request.param == "embedded":
        if not (EMBEDDED / "tokenizer.json").exists():
            pytest.skip("the embedded tokenizer is not in assets/llmviz-tiny")
        return EMBEDDED
    from model_factory import write_tokenizer

    write_tokenizer(tmp_path)
    return tmp_path


def alone_counts(folder, text: str) -> list[int]:
    """The oracle: how many tokens transformers' own tokenizer gives each character of `text` on its own."""
    from transformers import PreTrainedTokenizerFast

    hf = PreTrainedTokenizerFast.from_pretrained(str(folder))
    return [len(hf.encode(c, add_special_tokens=False)) for c in text]


def test_jinan_regroups_into_its_five_characters(tokenizer_folder):
    """The byte-only tokenizer spells all five in 3 bytes each; the embedded one keeps 南, 的 and 天 whole: either
    way each group is one character, as many tokens as the tokenizer gives it alone."""
    ids, table = engine_tokens(tokenizer_folder, JINAN)
    pieces = trace_token_bytes(table, ids)
    counts = alone_counts(tokenizer_folder, JINAN)
    assert len(ids) == sum(counts) and set(counts) <= {1, 3}  # a character is whole or its 3 UTF-8 bytes
    groups = group_by_character(pieces)
    assert [g.text for g in groups] == list(JINAN) and [g.size for g in groups] == counts
    assert [hex_spaced(g.data) for g in groups] == ["e6 b5 8e", "e5 8d 97", "e7 9a 84", "e5 86 ac", "e5 a4 a9"]
    assert all(alone(p) == REPLACEMENT for g in split_groups(groups) for p in pieces[g.start:g.stop])
    assert [g.text for g in split_groups(groups)] == [c for c, n in zip(JINAN, counts, strict=True) if n > 1]


def test_english_tokens_are_groups_of_one(tokenizer_folder):
    ids, table = engine_tokens(tokenizer_folder, "The list of values")
    groups = group_by_character(trace_token_bytes(table, ids))
    assert len(groups) == len(ids) and split_groups(groups) == []
    assert "".join(g.text for g in groups) == "The list of values"


def test_mixed_prompt_keeps_every_byte(tokenizer_folder):
    text = "冬天 The list 的"
    ids, table = engine_tokens(tokenizer_folder, text)
    groups = group_by_character(trace_token_bytes(table, ids))
    assert "".join(g.text for g in groups) == text
    counts = dict(zip("冬天的", alone_counts(tokenizer_folder, "冬天的"), strict=True))
    assert [g.text for g in split_groups(groups)] == [c for c in "冬天的" if counts[c] > 1]
    assert groups[-1].stop == len(ids)


def test_a_token_crossing_a_character_boundary_joins_the_group():
    # "a" + first byte of 济 | last two bytes of 济 + first of 南 | rest of 南: one run, cut only at the end
    groups = group_by_character([b"a\xe6", b"\xb5\x8e\xe5", b"\x8d\x97", b"!"])
    assert [(g.start, g.stop, g.text) for g in groups] == [(0, 3, "a济南"), (3, 4, "!")]


def test_broken_bytes_are_replaced_not_raised():
    groups = group_by_character([b"\xff", b"a", b"\xe6\xb5"])  # an invalid byte; a truncated character
    assert [g.text for g in groups] == [REPLACEMENT, "a", REPLACEMENT]
    assert groups[-1].data == b"\xe6\xb5"


def test_labels_make_spaces_visible_and_stay_unique():
    assert visible(" the\n") == "␣the↵" and visible("") == "∅"
    assert position_labels([b"a", b"a", b" b", b"\xe6"]) == ["0:a", "1:a", "2:␣b", "3:<e6>"]


def test_which_characters_are_whole_and_which_are_bytes_by_hand():
    """南 and 天 whole tokens, 济 three byte tokens, 的 inside a longer token, ASCII left out."""
    pieces = ["济".encode()[:1], "济".encode()[1:2], "济".encode()[2:], "南".encode(), " 的".encode(), b"x",
              "天".encode()]
    chars = non_ascii_characters(group_by_character(pieces))
    assert [(c.char, c.first, c.tokens, c.whole) for c in chars] == [
        ("济", 0, 3, False), ("南", 3, 1, True), ("的", 4, 1, True), ("天", 6, 1, True)]
    assert non_ascii_characters(group_by_character([b"The", b" list"])) == []


def test_byte_tokens_are_named_by_their_character():
    """Issue 38: a heat map's rows spell 济南 rather than <e6> <b5> <8e>; the bytes stay in the hover's notes; a
    broken byte keeps its hex."""
    from llmviz.analysis.tokens import byte_notes, character_labels, position_labels

    pieces = [b"\xe6", b"\xb5", b"\x8e", "南".encode(), b" a", b"\xff"]
    assert character_labels(pieces) == ["济·1/3", "济·2/3", "济·3/3", "南", "␣a", "<ff>"]
    assert position_labels(pieces)[:4] == ["0:济·1/3", "1:济·2/3", "2:济·3/3", "3:南"]
    assert byte_notes(pieces)[:2] == ["济·1/3 (e6)", "济·2/3 (b5)"]
