"""What the trainer writes and checks once training is done: the Hugging Face folder (fp16 safetensors +
config), the check that transformers reads it back with our logits, a few samples, and the model card.
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


def write_card(out: Path, info: dict, samples: list[dict]) -> None:
    """card.json (machine-readable) and README.md (the same numbers for people)."""
    info = {**info, "samples": samples}
    (out / "card.json").write_text(json.dumps(info, indent=2) + "\n")
    a, t = info["architecture"], info["training"]
    gqa = ""
    if info.get("init_from"):
        gqa = f"""
## Grouped-query attention by uptraining (C19)

Made from `{info["init_from"]}` (every one of its {a["num_heads"]} K/V heads) by mean-pooling each run of \
{a["num_heads"] // a["num_kv_heads"]} consecutive K/V heads into one (llmviz's `--kv-heads` conversion), then \
training on the same corpus at a lower learning rate (the GQA paper's uptraining). Held-out perplexity, same \
text and windows:

| | perplexity |
|---|---|
| before conversion ({a["num_heads"]} KV heads) | {info["perplexity_before"]:.2f} |
| after mean-pooling to {a["num_kv_heads"]} KV heads | {info["perplexity_mean_pooled"]:.2f} |
| after uptraining | **{info["heldout_perplexity"]:.2f}** |

The uptraining is also extra training on the corpus, so part of what it recovers is not specific to GQA.
"""
    sample_md = "\n\n".join(f"**{s['mode']}**, prompt `{s['prompt']}`:\n\n```text\n{s['text']}\n```" for s in samples)
    (out / "README.md").write_text(f"""---
license: other
license_name: psf-2.0
library_name: transformers
pipeline_tag: text-generation
---

# {info["name"]}

A tiny Llama-architecture language model that ships inside llmviz, trained from scratch on English text that
ships with CPython. It writes docstring-flavoured English; it knows no facts worth trusting.

| | |
|---|---|
| architecture | LlamaForCausalLM: {a["num_layers"]} layers, hidden {a["hidden_size"]}, {a["num_heads"]} heads \
({a["num_kv_heads"]} KV heads), head_dim {a["head_dim"]}, SwiGLU {a["intermediate_size"]}, RoPE theta \
{a["rope_theta"]:g}, RMSNorm, tied embeddings |
| parameters | {info["parameters"]:,} |
| vocabulary | {a["vocab_size"]} byte-level BPE tokens; id 0 `<|endoftext|>` = bos = eos = pad |
| context | {a["max_position_embeddings"]} tokens |
| weights | fp16 safetensors |
| held-out perplexity | **{info["heldout_perplexity"]:.2f}** (transformers LlamaForCausalLM, fp32, non-overlapping \
{info["eval_window"]}-token windows, {info["heldout_tokens"]} tokens) |

## Corpus

pydoc topics plus standard-library module/class/function docstrings of CPython {info["python"]}, cleaned and
de-duplicated: {info["corpus_documents"]} documents, {info["corpus_chars"]:,} characters, sha256
`{info["corpus_sha256"]}`. About 2% of the documents (chosen by a hash of their text) are held out:
`assets/corpus/heldout.txt` (see `assets/corpus/README.md`). Text under the PSF License: see `NOTICE`.

## Training

```
{info["train_command"]}
```

AdamW (betas 0.9/0.95, weight decay 0.1), peak learning rate {t["peak_lr"]}, warmup then cosine to 10%, batch \
{t["batch"]} x {t["seq_len"]} tokens, bf16 autocast on CPU, torch.compile: {t["compiled"]}, seed {t["seed"]}, \
{t["threads"]} CPU thread(s). {t["steps"]} steps, {t["tokens_seen"]:,} tokens seen in {t["train_wall_s"]:.0f} s \
({t["tokens_per_s"]} tokens/s), {t["epochs"]} epochs (capped at {t["max_epochs"]:g}: more overfits this small \
corpus); final training loss {t["final_train_loss"]}.
{gqa}
## Samples

Verbatim, from the saved weights in fp32, no BOS token before the prompt, 48 new tokens at most; sampled =
temperature 0.8, top-k 40, seed {t["seed"]} + prompt index.

{sample_md}
""")
