"""What the trainer writes and checks once training is done: the Hugging Face folder (fp16 safetensors +
config), the check that transformers reads it back with our logits, and the sampler of the card's samples (the
card itself: llmviz/training/card.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from llmviz.engine.models import llama
from llmviz.engine.models.transformer import DecoderModel
from llmviz.labs.evaluation import perplexity
from llmviz.trace.model_config import ModelConfig


def save_model(model: DecoderModel, folder: Path) -> None:
    """fp16 safetensors under Hugging Face names (the tied lm_head is not stored), config files."""
    cfg = model.cfg
    tensors = {llama.ours_to_hf(k): v.detach().to(torch.float16).contiguous() for k, v in model.state_dict().items()
               if not (cfg.tie_embeddings and k == "lm_head.weight")}
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    (folder / "model.safetensors").chmod(0o644)  # safetensors writes 0600
    (folder / "config.json").write_text(json.dumps(llama.hf_config(cfg, torch_dtype="float16"), indent=2) + "\n")
    gen = {"bos_token_id": cfg.bos_token_id, "eos_token_id": cfg.eos_token_ids[0], "pad_token_id": cfg.eos_token_ids[0]}
    (folder / "generation_config.json").write_text(json.dumps(gen, indent=2) + "\n")


def load_ours(folder: Path, cfg: ModelConfig) -> DecoderModel:
    """Our model in fp32 on the saved (fp16-rounded) weights."""
    model = DecoderModel(cfg)
    state = {llama.hf_to_ours(k): v.float() for k, v in load_file(str(folder / "model.safetensors")).items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    assert not unexpected and set(missing) <= {"lm_head.weight"}, (missing, unexpected)
    return model.eval()


def check_with_transformers(folder: Path, ours: DecoderModel, heldout: list[int]) -> float:
    """The folder loads in LlamaForCausalLM with no missing/unexpected keys and the same logits as ours.

    Returns the held-out perplexity computed by transformers (fp32): the number the model card reports.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaForCausalLM

    hf, info = LlamaForCausalLM.from_pretrained(str(folder), dtype=torch.float32, output_loading_info=True)
    bad = {k: v for k, v in info.items() if v and k in ("missing_keys", "unexpected_keys", "mismatched_keys")}
    assert not bad, f"loading {folder} in transformers: {bad}"
    hf.eval()
    probe = torch.tensor(heldout[:128])[None]  # [1, 128]
    with torch.no_grad():
        diff = (hf(probe).logits - ours(probe)).abs().max().item()
    assert diff < 1e-4, f"transformers and DecoderModel logits differ by {diff}"
    AutoModelForCausalLM.from_pretrained(str(folder))  # the Auto* path the app and tests use
    AutoTokenizer.from_pretrained(str(folder))
    return perplexity(lambda x: hf(x).logits, heldout)


@torch.no_grad()
def generate(model: DecoderModel, ids: list[int], new: int, eos: int, sample: bool, seed: int) -> list[int]:
    """A plain loop, no cache (the prompts are short): greedy, or temperature 0.8 with top-40 sampling."""
    gen = torch.Generator().manual_seed(seed)
    out = list(ids)
    for _ in range(new):
        logits = model(torch.tensor(out)[None], last_only=True)[0].float()  # [V]
        if sample:
            top = torch.topk(logits / 0.8, 40)
            nxt = int(top.indices[torch.multinomial(top.values.softmax(-1), 1, generator=gen)])
        else:
            nxt = int(logits.argmax())
        if nxt == eos:
            break
        out.append(nxt)
    return out
