"""Train the embedded tiny Llama on CPython's own text and save it as a Hugging Face model folder.

    corpus (topics + stdlib docstrings) -> byte-level BPE -> one token stream (docs joined by EOS)
    -> random windows of seq_len + 1 tokens -> AdamW, warmup + cosine, bf16 autocast on CPU
    -> fp16 safetensors + config.json + tokenizer -> check against transformers -> held-out ppl
    -> model card (README.md + card.json) + NOTICE (PSF License of the corpus)

Run it as `python -m llmviz.training --preset main|draft [--minutes M] [--smoke] [--out DIR]`.
The run is time-budgeted: after a few timed steps the step count that fits the budget is fixed,
and the learning-rate schedule follows that count.
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import time
from dataclasses import replace
from pathlib import Path

import torch
import torch.nn.functional as F

from llmviz.engine.models.transformer import DecoderModel
from llmviz.errors import ConfigError
from llmviz.labs.evaluation import EVAL_WINDOW, perplexity
from llmviz.paths import ASSETS
from llmviz.trace.model_config import ModelConfig
from llmviz.training import bilingual, card
from llmviz.training import corpus as corpus_mod
from llmviz.training import tokenizer as tok_mod
from llmviz.training.command import Parser
from llmviz.training.export import check_with_transformers, load_ours, save_model
from llmviz.training.presets import DERIVED, PRESETS, Preset


def main_copies(folder: Path) -> int:
    """How many times the main model's stream repeats English (its card): a derived model draws from the same mix."""
    info = json.loads((folder / "card.json").read_text(encoding="utf-8"))
    if "english_copies" not in info:
        raise ConfigError(f"{folder} is not a bilingual model (its card has no english_copies)")
    return info["english_copies"]


def model_config(p: Preset, vocab: int, eos: int) -> ModelConfig:
    return ModelConfig(family="llama", vocab_size=vocab, hidden_size=p.hidden, num_layers=p.layers,
                       num_heads=p.heads, num_kv_heads=p.kv_heads or p.heads, head_dim=p.hidden // p.heads,
                       intermediate_size=p.intermediate, max_position_embeddings=512, norm_eps=1e-5,
                       rope_theta=10000.0, tie_embeddings=True, bos_token_id=eos, eos_token_ids=(eos,))


def converted(folder: Path, cfg: ModelConfig, kv_heads: int, heldout_ids: list[int]) -> tuple[DecoderModel, dict]:
    """The model in `folder` with its K/V heads mean-pooled to kv_heads (the engine's own conversion), and
    the held-out perplexity before and after pooling."""
    from llmviz.engine.loading.model import checkpoint_state, checkpoint_tensors
    from llmviz.engine.models.convert import convert

    full_cfg = replace(cfg, num_kv_heads=cfg.num_heads)
    before = load_ours(folder, full_cfg)
    state = checkpoint_state(full_cfg, {k: v.float() for k, v in checkpoint_tensors(folder).items()})
    pooled_cfg, state = convert(full_cfg, state, kv_heads=kv_heads)
    assert pooled_cfg == cfg, (pooled_cfg, cfg)
    model = DecoderModel(cfg)
    missing, unexpected = model.load_state_dict(state, strict=False)
    assert not unexpected and set(missing) <= {"lm_head.weight"}, (missing, unexpected)
    model.eval()
    with torch.no_grad():
        info = {"perplexity_before": round(perplexity(before, heldout_ids), 4),
                "perplexity_mean_pooled": round(perplexity(model, heldout_ids), 4), "init_from": folder.name}
    return model, info


def init_weights(model: DecoderModel) -> None:
    """GPT-2 style: N(0, 0.02), residual output projections scaled by 1/sqrt(2 * layers); norms at 1."""
    std = 0.02
    for name, p in model.named_parameters():
        if p.dim() < 2:
            continue
        scale = 1 / math.sqrt(2 * model.cfg.num_layers) if name.endswith(("o_proj.weight", "down_proj.weight")) else 1
        torch.nn.init.normal_(p, mean=0.0, std=std * scale)


def parameter_count(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())  # .parameters() yields a tied tensor once


def lr_at(step: int, total: int, peak: float, warmup: int) -> float:
    """Linear warmup, then cosine from the peak down to 10% of it at step `total`."""
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def train_loop(model: DecoderModel, stream: torch.Tensor, p: Preset, budget_s: float, steps: int | None,
               seed: int, eval_ids: list[int]) -> dict:
    """AdamW on random windows of `stream` [N] until the planned step count (or the time budget) is reached."""
    decay = [q for q in model.parameters() if q.dim() >= 2]
    no_decay = [q for q in model.parameters() if q.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=p.lr, betas=(0.9, 0.95), eps=1e-8)
    gen = torch.Generator().manual_seed(seed)
    offsets = torch.arange(p.seq_len + 1)  # [n+1]
    forward = model
    if p.compile:
        forward = torch.compile(model)
    cap = max(1, int(p.max_epochs * len(stream) / (p.batch * p.seq_len)))  # steps in max_epochs
    total = steps or cap
    start, step, loss_avg, compiled = time.perf_counter(), 0, None, p.compile
    model.train()
    while step < total:
        starts = torch.randint(0, len(stream) - p.seq_len - 1, (p.batch,), generator=gen)  # [b]
        window = stream[starts[:, None] + offsets]  # [b, n+1]
        x, y = window[:, :-1], window[:, 1:]  # inputs and next-token targets, [b, n] each
        for group in opt.param_groups:
            group["lr"] = lr_at(step, total, p.lr, p.warmup)
        opt.zero_grad(set_to_none=True)
        try:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                logits = forward(x)  # [b, n, V]
            loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), y.reshape(-1))  # [b*n, V]
            loss.backward()
        except Exception as err:  # inductor missing a compiler or failing on this graph: go eager
            if forward is model:
                raise
            log(f"torch.compile failed ({type(err).__name__}: {err}); falling back to eager")
            forward, compiled = model, False
            continue
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        loss_avg = loss.item() if loss_avg is None else 0.95 * loss_avg + 0.05 * loss.item()
        elapsed = time.perf_counter() - start
        if step == 3:
            t3 = elapsed  # steps 1-2 include compilation; time the rest
        if step == 10 and not steps:  # fix the step count that fits the budget
            per_step = (elapsed - t3) / 7
            total = min(cap, max(step + 1, int((budget_s - elapsed) / per_step) + step))
            log(f"{per_step:.3f} s/step ({p.batch * p.seq_len / per_step:.0f} tokens/s): planning {total} steps "
                f"(the {p.max_epochs:g}-epoch cap is {cap})")
        if step % 50 == 0 or step == total:
            log(f"step {step}/{total} loss {loss_avg:.4f} lr {opt.param_groups[0]['lr']:.2e} {elapsed:.0f}s")
        if step % 250 == 0:  # a progress readout only: nothing is selected by it
            model.eval()
            with torch.autocast("cpu", dtype=torch.bfloat16):
                log(f"step {step}: held-out perplexity ~{perplexity(model, eval_ids):.2f} (bf16)")
            model.train()
        if not steps and elapsed > budget_s * 1.05 and step > 10:
            log(f"time budget exceeded at step {step}; stopping")
            break
    wall = time.perf_counter() - start
    tokens = step * p.batch * p.seq_len
    return {"steps": step, "tokens_seen": tokens, "train_wall_s": round(wall, 1),
            "tokens_per_s": round(tokens / wall), "final_train_loss": round(loss_avg, 4), "compiled": compiled}


def parse(argv: list[str] | None) -> argparse.Namespace:
    ap = Parser(prog="python -m llmviz.training", description=__doc__.split("\n")[0])
    ap.add_argument("--preset", choices=tuple(p for p in PRESETS if p != "smoke"), default="main",
                    help="gqa4/gqa2: the main model's K/V heads mean-pooled to 4 or 2, then uptrained")
    ap.add_argument("--smoke", action="store_true", help="seconds-long run: topics subset, tiny model, no compile")
    ap.add_argument("--minutes", type=float, help="training time budget (default: the preset's)")
    ap.add_argument("--steps", type=int, help="a fixed step count instead of a time budget")
    ap.add_argument("--out", type=Path, help="output folder (default: assets/<preset folder>)")
    ap.add_argument("--tokenizer", type=Path, help="reuse this folder's tokenizer (draft default: the main model's)")
    ap.add_argument("--heldout-dir", type=Path, help="write heldout.txt + README.md here (main default: assets/corpus)")
    ap.add_argument("--zh-po", type=Path, help="bilingual: the folder `git archive 3.11` of python-docs-zh-cn was "
                    "extracted into (with --smoke: a few of its documents)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--compile", action="store_true", help="torch.compile the model (slower here)")
    return ap.parse_args(argv)


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def main(argv: list[str] | None = None) -> dict:
    import sys

    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse(argv)
    name = "smoke" if args.smoke else args.preset
    p = PRESETS[name]
    if args.compile:
        p = replace(p, compile=True)
    if args.smoke and args.zh_po:  # the bilingual smoke run: a few Chinese documents, English exposure small
        p = replace(p, zh=True, cjk_min=2, english_tokens=1024)
    # read first: a folder that is missing, empty or holds a binary, malformed or FIFO .po file stops the command in
    # one line (llmviz/training/command.py) before the English corpus, the tokenizer or the model take any time
    zh = bilingual.chinese_corpus(args.zh_po, p.limit) if p.zh else None
    out = args.out or ASSETS / p.out
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    t0 = time.perf_counter()
    corpus = corpus_mod.build(p.sources, p.limit)
    log(f"corpus: {len(corpus.train)} train + {len(corpus.heldout)} held-out docs, {corpus.chars} chars, "
        f"sha256 {corpus.sha256}")
    tok_src = args.tokenizer or (ASSETS / PRESETS["main"].out if name in DERIVED else None)
    if tok_src is not None and (tok_src / "tokenizer.json").exists():
        tok = tok_mod.Tokenizer.from_file(str(tok_src / "tokenizer.json"))
        log(f"tokenizer: reused from {tok_src}")
    else:
        tok = tok_mod.train(corpus.train + (zh.train if zh else []), p.vocab, cjk_min=p.cjk_min)
    tok_mod.save(tok, out)
    tok_mod.verify(out, corpus.heldout[0] if corpus.heldout else corpus.train[0])
    eos = tok.token_to_id(corpus_mod.EOS)
    train_ids = tok_mod.encode_documents(tok, corpus.train)
    heldout_ids = tok_mod.encode_documents(tok, corpus.heldout or corpus.train[-1:])
    log(f"tokens: {len(train_ids)} train, {len(heldout_ids)} held-out, vocab {tok.get_vocab_size()}")
    budget = 60 * (args.minutes if args.minutes is not None else p.minutes)
    steps = 20 if args.smoke else args.steps
    mixed = None
    if p.zh:
        planned = steps * p.batch * p.seq_len if steps else int(p.tokens_per_s * budget)
        copies = main_copies(tok_src) if name in DERIVED else None
        mixed = bilingual.mix(tok, tok_mod.encode_documents, train_ids, zh, p.english_tokens, planned, copies)
        log(f"bilingual: English x{mixed.copies} ({mixed.share:.1%} of the stream), {len(mixed.stream)} tokens, "
            f"{len(mixed.heldout_zh_ids)} held-out Chinese tokens")

    cfg = model_config(p, tok.get_vocab_size(), eos)
    conversion = {}
    if p.init_from:
        model, conversion = converted(ASSETS / p.init_from, cfg, p.kv_heads, heldout_ids)
        log(f"from {p.init_from}: perplexity {conversion['perplexity_before']:.2f} with every K/V head, "
            f"{conversion['perplexity_mean_pooled']:.2f} after mean-pooling to {p.kv_heads}")
    else:
        model = DecoderModel(cfg)
        init_weights(model)
    params = parameter_count(model)
    log(f"model: {params} parameters, compile={p.compile}, threads={args.threads}")
    stream = mixed.stream if mixed else train_ids
    stats = train_loop(model, torch.tensor(stream), p, budget, steps, args.seed, heldout_ids)
    log(f"trained: {stats}")

    save_model(model, out)
    ours = load_ours(out, cfg)
    ppl = check_with_transformers(out, ours, heldout_ids)
    log(f"held-out perplexity {ppl:.3f} (transformers fp32), {perplexity(ours, heldout_ids):.3f} (DecoderModel)")
    samples = card.samples(ours, tok, eos, args.seed, bilingual.prompts(mixed.zh) if mixed else [])
    extra = {}
    if mixed:
        with torch.no_grad():
            extra = bilingual.figures(ours, tok, heldout_ids, mixed)
        extra["english_tokens_seen"] = round(stats["tokens_seen"] * mixed.share)  # drawn uniformly from the stream
        extra["tokenizer"] = {"vocab": p.vocab, "cjk_min": p.cjk_min}
        log(f"bilingual: {extra['bits_per_char']} bits/char; Chinese baselines {extra['zh_baselines_bits_per_char']}")
    if args.heldout_dir is not None:  # the committed assets/corpus/heldout.txt is never rewritten by a run
        heldout_sha = corpus_mod.write_heldout(args.heldout_dir, corpus, f"tokenizer.json of {out.name}")
    else:
        heldout_sha = corpus_mod.committed_heldout_sha256(corpus) if not p.limit else None
    card.write_notice(out, args.zh_po if mixed else None, extra)
    info = {
        "name": out.name, "preset": name, "parameters": params, "architecture": cfg.to_dict(),
        "heldout_perplexity": round(ppl, 4), **conversion, **extra, "eval_window": EVAL_WINDOW,
        "heldout_tokens": len(heldout_ids),
        "heldout_documents": len(corpus.heldout), "heldout_sha256": heldout_sha,
        "corpus_sha256": corpus.sha256, "corpus_documents": len(corpus.train) + len(corpus.heldout),
        "corpus_chars": corpus.chars, "train_tokens": len(train_ids), "python": corpus.python,
        "train_command": "python -m llmviz.training " + shlex.join(argv),
        "training": {**stats, "batch": p.batch, "seq_len": p.seq_len, "peak_lr": p.lr, "threads": args.threads,
                     "epochs": round(stats["tokens_seen"] / len(stream), 2), "max_epochs": p.max_epochs,
                     "seed": args.seed, "torch": torch.__version__, "machine": card.machine(),
                     "total_wall_s": round(time.perf_counter() - t0)},
    }
    card.write_card(out, info, samples)
    log(f"wrote {out} ({(out / 'model.safetensors').stat().st_size / 1e6:.2f} MB safetensors)")
    return info
