"""Load-time switches (C10, C19): fused or split projections are exact; GQA by mean-pooling matches
transformers' own grouped-query attention on weights pooled here by hand."""

import json
import shutil

import numpy as np
import pytest
import torch
from parity import TOL, run_parity
from safetensors.numpy import load_file, save_file

from llmviz.engine.loading.model import load_model
from llmviz.engine.session import Session
from llmviz.errors import ConfigError
from llmviz.trace.config import EngineConfig, SamplingConfig


@pytest.mark.parametrize("kind,fused", [("gpt2", "off"), ("llama_tied", "on"), ("qwen2", "on"),
                                        ("llama_gqa_rope3", "on"), ("mistral", "off")])
def test_fused_and_split_projections_match_the_oracle(model_dirs, kind, fused):
    lm = load_model(str(model_dirs[kind]), fused_qkv=fused)
    assert lm.cfg.fused_qkv == (fused == "on")
    assert lm.cfg.fused_mlp == (fused == "on" and lm.cfg.mlp == "gated")
    names = set(dict(lm.model.named_parameters()))
    assert ("layers.0.attn.qkv_proj.weight" in names) == (fused == "on")
    diffs = run_parity(model_dirs[kind], "sdpa", lm=lm)
    assert max(diffs) <= TOL, f"{kind} fused={fused}: {diffs}"


def pooled_by_hand(src, dst, heads: int, kv_before: int, kv_after: int):
    """A copy of a Llama-family checkpoint with each run of kv_before/kv_after K/V heads averaged (numpy)."""
    shutil.copytree(src, dst)
    tensors = load_file(str(src / "model.safetensors"))
    for name, t in list(tensors.items()):
        if ".k_proj." in name or ".v_proj." in name:
            hd = t.shape[0] // kv_before
            r = kv_before // kv_after
            rows = [t[(g * r + j) * hd:(g * r + j + 1) * hd] for g in range(kv_after) for j in range(r)]
            tensors[name] = np.concatenate([np.mean(rows[g * r:(g + 1) * r], axis=0) for g in range(kv_after)])
    save_file(tensors, str(dst / "model.safetensors"), metadata={"format": "pt"})
    config = json.loads((src / "config.json").read_text())
    config["num_key_value_heads"] = kv_after
    (dst / "config.json").write_text(json.dumps(config))
    return dst


@pytest.mark.parametrize("kind,kv_before,kv_after", [("llama_tied", 4, 2), ("llama_tied", 4, 1), ("qwen2", 2, 1)])
def test_mean_pooled_gqa_matches_transformers(model_dirs, tmp_path, kind, kv_before, kv_after):
    oracle_dir = pooled_by_hand(model_dirs[kind], tmp_path / "pooled", 4, kv_before, kv_after)
    lm = load_model(str(model_dirs[kind]), kv_heads=kv_after)
    assert lm.cfg.num_kv_heads == kv_after and lm.cfg.group_size == 4 // kv_after
    diffs = run_parity(oracle_dir, "sdpa", lm=lm)  # the oracle runs transformers' GQA on hand-pooled weights
    assert max(diffs) <= TOL, diffs


def test_gqa_shrinks_the_cache_and_the_model_says_what_it_did():
    cfg = EngineConfig(kv_heads=2, sampling=SamplingConfig(temperature=0), stop_at_eos=False)
    lm = load_model("llmviz-tiny", kv_heads=2)
    full = Session(load_model("llmviz-tiny"), "The list of", EngineConfig()).step().kv
    kv = Session(lm, "The list of", cfg).step().kv
    assert kv["kv_heads"] == 2 and kv["bytes_used"] * 4 == full["bytes_used"]  # 2 of 8 heads: 1/4
    assert lm.card()["options"]["kv_heads"] == 2
    with pytest.raises(ConfigError, match="loaded with kv_heads=2"):
        Session(lm, "The list of", EngineConfig())


def test_gpt2_fused_attention_is_split_before_pooling(model_dirs):
    lm = load_model(str(model_dirs["gpt2"]), kv_heads=1)
    full = load_model(str(model_dirs["gpt2"]), fused_qkv="off")
    assert lm.cfg.fused_qkv and lm.cfg.num_kv_heads == 1  # GPT-2 keeps one fused projection
    w = dict(lm.model.named_parameters())["layers.0.attn.qkv_proj.weight"]  # [(4 + 2) * 16, 64]
    k_full = dict(full.model.named_parameters())["layers.0.attn.k_proj.weight"]  # [4 * 16, 64]
    assert torch.allclose(w[64:80], k_full.reshape(4, 16, 64).mean(0), atol=1e-6)
    out = Session(lm, "The quick brown fox", EngineConfig(kv_heads=1)).step()
    assert np.isfinite(out.logits).all() and out.kv["kv_heads"] == 1


@pytest.mark.parametrize("kv_heads,needle", [(3, "must divide the 8 query heads"), (0, "positive integer")])
def test_impossible_kv_heads_are_config_errors(kv_heads, needle):
    with pytest.raises(ConfigError, match=needle):
        load_model("llmviz-tiny", kv_heads=kv_heads)


def test_kv_heads_cannot_split_a_checkpoints_heads(model_dirs):
    with pytest.raises(ConfigError, match="divide the checkpoint's 2 KV heads"):
        load_model(str(model_dirs["qwen2"]), kv_heads=4)  # 2 KV heads cannot become 4 by pooling
