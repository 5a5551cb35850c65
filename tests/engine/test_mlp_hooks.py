"""The MLP's two hook points against the transformers oracle: `mlp_in` is the input of the
MLP (the output of the post-attention norm) and `mlp_act` the input of its down projection, per layer, at the
prefill; and the residual bookkeeping the Layer view draws holds: resid = input + attn_out + mlp_out."""

import numpy as np
import pytest
import torch
from parity import oracle

from llmviz.engine.loading.model import load_model
from llmviz.engine.session import Session
from llmviz.trace.config import EngineConfig, SamplingConfig

PROMPT = "The quick brown fox jumps over the lazy dog"


def oracle_mlp_io(hf, ids: list[int]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Per layer: (the MLP module's input, its down projection's input) in the oracle's own forward."""
    layers = hf.transformer.h if hasattr(hf, "transformer") else hf.model.layers
    ins, acts, handles = [], [], []
    for layer in layers:
        mlp = layer.mlp
        down = mlp.c_proj if hasattr(mlp, "c_proj") else mlp.down_proj
        handles.append(mlp.register_forward_pre_hook(lambda m, a: ins.append(a[0].detach().float().numpy())))
        handles.append(down.register_forward_pre_hook(lambda m, a: acts.append(a[0].detach().float().numpy())))
    try:
        with torch.no_grad():
            hf(torch.tensor([ids]))
    finally:
        for h in handles:
            h.remove()
    return ins, acts


@pytest.mark.parametrize("kind", ["llama_gqa_rope3", "qwen2", "gpt2"])
def test_mlp_hooks_match_the_oracle(model_dirs, kind):
    folder = model_dirs[kind]
    lm = load_model(str(folder), device="cpu")  # the oracle runs on the CPU: the same device, any machine
    session = Session(lm, PROMPT, EngineConfig(device="cpu", capture="full", sampling=SamplingConfig(temperature=0)))
    step = session.step()
    ids = session.sequences[0].ids[: session.sequences[0].prompt_len]
    ins, acts = oracle_mlp_io(oracle(folder), ids)
    assert len(ins) == lm.cfg.num_layers
    for i in range(lm.cfg.num_layers):
        mine_in, mine_act = step.hook(f"layers.{i}.mlp_in").array, step.hook(f"layers.{i}.mlp_act").array
        assert mine_act.shape == (1, len(ids), lm.cfg.intermediate_size)
        assert np.allclose(mine_in, ins[i], atol=1e-4), (kind, i, np.abs(mine_in - ins[i]).max())
        assert np.allclose(mine_act, acts[i], atol=1e-4), (kind, i, np.abs(mine_act - acts[i]).max())
        before = step.hook("embed").array if i == 0 else step.hook(f"layers.{i - 1}.resid").array
        if i == 0 and lm.cfg.position == "learned":
            before = before + step.hook("pos").array
        total = before + step.hook(f"layers.{i}.attn_out").array + step.hook(f"layers.{i}.mlp_out").array
        assert np.allclose(total, step.hook(f"layers.{i}.resid").array, atol=1e-4)
