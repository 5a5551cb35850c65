"""The bilingual tokenizer: a CJK character seen at least cjk_min times is one token, any other stays
its UTF-8 bytes; nothing is ever unknown; transformers loads it and agrees with it."""

from llmviz.training import tokenizer as tok_mod

CJK_MIN = 5
DOCS = (["The list of items is returned by the function."] * 30 + ["南方的天气：南北不同。"] * 6
        + ["济南。"] * 2 + ["Return the value, 的确。"] * 10)


def ids(tok, text):
    return tok.encode(text, add_special_tokens=False).ids


def test_frequent_characters_are_tokens_and_rare_ones_stay_bytes(tmp_path):
    tok = tok_mod.train(DOCS, vocab_size=400, cjk_min=CJK_MIN)
    # counted by hand: 南 12, 的 16, 方 6, 天 6, 气 6, 北 6, 不 6, 同 6, 确 10 times; 济 twice; 冬 never
    assert tok_mod.cjk_tokens(DOCS, CJK_MIN) == ["的", "南", "确", "不", "北", "同", "天", "方", "气"]
    for ch in "的南确天":
        assert len(ids(tok, ch)) == 1, ch
    for ch in "济冬":  # below the count: their 3 UTF-8 bytes, no partial merge
        assert len(ids(tok, ch)) == len(ch.encode("utf-8")) == 3, ch
    text = "济南的冬天"
    assert len(ids(tok, text)) == 3 + 1 + 1 + 3 + 1
    assert tok.decode(ids(tok, text)) == text  # byte-level: nothing unknown, every text round-trips
    assert tok.get_vocab_size() <= 400
    # every character of the corpus: one token at or above the count, its bytes below it
    counts = {ch: sum(d.count(ch) for d in DOCS) for d in DOCS for ch in d if tok_mod._CJK.match(ch)}
    for ch, n in counts.items():
        assert len(ids(tok, ch)) == (1 if n >= CJK_MIN else 3), (ch, n)


def test_transformers_loads_it_and_encodes_the_same(tmp_path):
    from transformers import AutoTokenizer

    tok = tok_mod.train(DOCS, vocab_size=400, cjk_min=CJK_MIN)
    tok_mod.save(tok, tmp_path)
    hf = AutoTokenizer.from_pretrained(str(tmp_path), local_files_only=True)
    for text in ("济南的冬天", "The list of 南方 items。", "a<|endoftext|>b"):
        assert hf.encode(text, add_special_tokens=False) == ids(tok, text)
        assert hf.decode(hf.encode(text, add_special_tokens=False)) == text


def test_a_rare_character_that_ends_like_a_common_symbol_stays_three_bytes():
    # 舞 (E8 88 9E) ends like ሞ ∞ ㈞ ꈞ 숞 (E1/E2/E3/EA/EC 88 9E): in this corpus 88 9E is the most frequent pair,
    # and a merge of it would split 舞 into 2 pieces
    docs = [*DOCS, *["ሞ ∞ ㈞ ꈞ 숞"] * 40]
    plain = tok_mod.train(docs, vocab_size=400)  # without the rule, BPE learns that merge
    assert len(ids(plain, "舞")) < 3
    tok = tok_mod.train(docs, vocab_size=400, cjk_min=CJK_MIN)
    assert len(ids(tok, "舞")) == 3 and tok.decode(ids(tok, "∞舞ሞ")) == "∞舞ሞ"


def test_the_byte_table_the_rule_reads_is_the_byte_levels_own():
    from tokenizers import pre_tokenizers

    from llmviz.engine.loading.tokens import byte_decoder

    table = byte_decoder()
    assert sorted(table.values()) == list(range(256)) and set(table) == set(pre_tokenizers.ByteLevel.alphabet())
    (piece, _), = pre_tokenizers.ByteLevel(add_prefix_space=False).pre_tokenize_str("舞")
    assert [table[c] for c in piece] == list("舞".encode())  # E8 88 9E, as the library writes it
