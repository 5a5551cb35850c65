"""The prediction arithmetic against published parameter counts and hand-computed bytes and FLOPs (C4, C7,
C19, C21). The engine's own bytes are checked against it in tests/labs/test_lab.py."""

import pytest

from llmviz.analysis.predict import (
    Setup,
    Shape,
    decode_flops,
    kv_allocated_bytes,
    kv_bytes_per_token,
    kv_read_bytes,
    predict,
    weight_bytes,
    weight_read_bytes,
)

# shared/model-configs.md
GPT2 = Shape(vocab_size=50257, hidden_size=768, num_layers=12, num_heads=12, num_kv_heads=12, head_dim=64,
             intermediate_size=3072, max_position_embeddings=1024, mlp="plain", norm="layer", position="learned",
             qkv_bias=True, out_bias=True, mlp_bias=True, tie_embeddings=True)
LLAMA3_8B = Shape(vocab_size=128256, hidden_size=4096, num_layers=32, num_heads=32, num_kv_heads=8, head_dim=128,
                  intermediate_size=14336, max_position_embeddings=8192)
MISTRAL_7B = Shape(vocab_size=32000, hidden_size=4096, num_layers=32, num_heads=32, num_kv_heads=8, head_dim=128,
                   intermediate_size=14336, max_position_embeddings=32768, sliding_windows=(4096,) * 32)


def test_gpt2_bytes_and_flops():
    fp32 = Setup(GPT2, max_seq=1024)
    assert weight_bytes(fp32) == 124_439_808 * 4  # GPT-2's published parameter count
    assert weight_bytes(Setup(GPT2, dtype="fp16")) == 124_439_808 * 2
    assert weight_read_bytes(fp32) == (124_439_808 - 1023 * 768) * 4  # one row of the position table
    assert kv_bytes_per_token(fp32) == 12 * 2 * 768 * 4 == 73_728
    assert kv_bytes_per_token(Setup(GPT2, kv_dtype="fp16")) == 36_864
    assert kv_bytes_per_token(Setup(GPT2, kv_dtype="int8")) == 12 * 2 * 12 * (64 + 4)  # with fp32 scales
    assert kv_bytes_per_token(Setup(GPT2, kv_heads=4)) == 12 * 2 * 4 * 64 * 4
    # 2 FLOPs per weight of 12 x (4 x 768^2 + 2 x 768 x 3072) and the 50257 x 768 head, plus 4 x 768 per
    # attended token per layer
    assert decode_flops(fp32, 100) == 2 * (12 * 7_077_888 + 38_597_376) + 36_864 * 100


def test_llama3_8b_gqa_and_quant():
    bf16 = Setup(LLAMA3_8B, dtype="bf16", max_seq=8192)
    assert weight_bytes(bf16) == 8_030_261_248 * 2  # the published parameter count
    assert weight_read_bytes(bf16) == (8_030_261_248 - 128_255 * 4096) * 2  # untied: one embedding row
    assert kv_read_bytes(bf16, 8192) == 1_073_741_824  # model-configs.md's worked example: 1 GiB
    # int8 blocks: one byte per matrix weight, one bf16 scale per output row (43,008 per layer), norms in bf16
    int8 = Setup(LLAMA3_8B, dtype="bf16", quant="int8")
    per_layer = 218_103_808 + (43_008 + 2 * 4096) * 2
    assert weight_bytes(int8) == 32 * per_layer + (4096 + 2 * 128_256 * 4096) * 2


def test_sliding_window_caps_what_is_read_and_kept():
    mistral = Setup(MISTRAL_7B, dtype="fp16", max_seq=32768)
    assert kv_read_bytes(mistral, 32768) == 536_870_912  # model-configs.md: 4096 positions, not 32768
    ring = Setup(GPT2, sliding_window=64, kv_rollback=4, max_seq=1024)
    assert kv_allocated_bytes(ring, 500) == 68 * 73_728
    assert kv_allocated_bytes(Setup(GPT2, kv_layout="paged", kv_block_size=16), 33) == 48 * 73_728
    assert kv_allocated_bytes(Setup(GPT2, kv_layout="dynamic"), 33) == 33 * 73_728
    assert kv_allocated_bytes(Setup(GPT2, max_seq=1024), 33) == 1024 * 73_728


def test_predicted_run_and_bound():
    fp32 = Setup(GPT2, max_seq=1024)
    p = predict(fp32, prompt_tokens=10, decode_steps=4, bandwidth_gb_per_s=25.0)
    # decode steps read 11, 12, 13, 14 cached tokens: 12.5 on average
    assert p.kv_read_bytes == 73_728 * 12.5
    assert p.kv_used_bytes == 14 * 73_728
    assert p.bound_ms == pytest.approx((494_616_576 + 73_728 * 12.5) / 25e9 * 1000)
    # a batch-1 fp32 decode step does 2 FLOPs per 4-byte weight it reads: about half a FLOP per byte (C7)
    assert p.intensity == pytest.approx(0.5, rel=0.01)
    assert predict(fp32, 10, 4, None).bound_ms is None


def test_setup_of_a_spec_keeps_only_what_moves_bytes():
    s = Setup.of(GPT2, {"kv_dtype": "fp8", "attn_backend": "flash", "compile": True}, max_seq=256)
    assert (s.kv_dtype, s.max_seq) == ("fp8", 256)
    assert Shape.from_config({**GPT2.__dict__, "family": "gpt2", "rope_theta": 1.0}) == GPT2
