"""BERT's input as token + position + segment rows (analysis/bert_input.py; C2, §1.1's segment ids), against
transformers' own BertEmbeddings given the same random tables: its output is LayerNorm(our sum)."""

import numpy as np
import pytest

from llmviz.analysis.article import BERT_VOCAB, bert_view
from llmviz.analysis.bert_input import BERT_POSITIONS, BERT_WIDTH, bert_input


def test_the_sum_is_berts_own_embedding_before_its_layernorm():
    torch = pytest.importorskip("torch")
    from transformers import BertConfig
    from transformers.models.bert.modeling_bert import BertEmbeddings

    view = bert_view("济南的冬天")
    tokens = view["tokens"] + ["济"]  # a repeated token reads the same row
    positions, segments = list(range(len(tokens))), [0] * 5 + [1] * 3  # a second segment too
    got = bert_input(tokens, positions, segments, seed=3)
    assert got.summed.shape == (8, BERT_WIDTH) and got.token_ids[1] == got.token_ids[-1]
    assert got.shapes == {"token": (BERT_VOCAB, 768), "position": (BERT_POSITIONS, 768), "segment": (2, 768)}
    config = BertConfig(vocab_size=BERT_VOCAB, hidden_size=BERT_WIDTH, max_position_embeddings=BERT_POSITIONS,
                        type_vocab_size=2, hidden_dropout_prob=0.0)
    emb = BertEmbeddings(config).eval()
    with torch.no_grad():  # the random rows placed in BERT's own tables, where our ids and positions point
        for i, (tid, p, s) in enumerate(zip(got.token_ids, positions, segments, strict=True)):
            emb.word_embeddings.weight[tid] = torch.from_numpy(got.token_rows[i])
            emb.position_embeddings.weight[p] = torch.from_numpy(got.position_rows[i])
            emb.token_type_embeddings.weight[s] = torch.from_numpy(got.segment_rows[i])
        out = emb(input_ids=torch.tensor([got.token_ids]), token_type_ids=torch.tensor([segments]),
                  position_ids=torch.tensor([positions]))[0].numpy()
        ours = torch.nn.functional.layer_norm(torch.from_numpy(got.summed), (BERT_WIDTH,),
                                              emb.LayerNorm.weight, emb.LayerNorm.bias, config.layer_norm_eps).numpy()
    assert np.allclose(out, ours, atol=1e-5)
