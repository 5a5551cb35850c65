"""DecoderModel: one pre-norm decoder-only transformer that every family is an instance of.

    ids [b, n] -> embed (+ learned positions) -> L x Block -> final norm -> lm_head -> logits

Block: x = x + attn(norm1(x)); x = x + mlp(norm2(x)). The forward pass reads the model and writes
only into the KV cache and the RunContext it is handed, so the model itself is never mutated.
"""

from __future__ import annotations

import torch
from torch import nn

from llmviz.engine.capture import RunContext
from llmviz.engine.hook_points import LayerHookNames
from llmviz.engine.kv_cache import KVCache
from llmviz.engine.models.attention import Attention, StepMask, step_mask
from llmviz.engine.models.config import ModelConfig
from llmviz.engine.models.layers import Rotary, make_mlp, make_norm


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig, layer: int):
        super().__init__()
        self.attn_norm = make_norm(cfg)
        self.attn = Attention(cfg, layer)
        self.mlp_norm = make_norm(cfg)
        self.mlp = make_mlp(cfg)
        self.names = LayerHookNames.for_layer(layer)
        self.mark = f"layer.{layer}"

    def forward(self, x, rope, cache, start, mask, backend, ctx: RunContext):  # [b, n, d] -> [b, n, d]
        h = ctx.hook(self.names.attn_in, self.attn_norm(x))
        x = x + self.attn(h, rope, cache, start, mask, backend, ctx)
        x = x + ctx.hook(self.names.mlp_out, self.mlp(self.mlp_norm(x)))
        return ctx.hook(self.names.resid, x)


class DecoderModel(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        if cfg.position == "learned":
            self.pos_embed = nn.Embedding(cfg.max_position_embeddings, cfg.hidden_size)
        else:
            self.rotary = Rotary(cfg)
        self.layers = nn.ModuleList(Block(cfg, i) for i in range(cfg.num_layers))
        self.final_norm = make_norm(cfg)
        self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)
        if cfg.tie_embeddings:
            self.lm_head.weight = self.embed.weight

    def forward(self, ids: torch.Tensor, positions: torch.Tensor | None = None,
                cache: KVCache | None = None, ctx: RunContext | None = None,
                backend: str = "sdpa", last_only: bool = False) -> torch.Tensor:
        """ids [b, n] at `positions` [b, n] (default 0..n-1 after what the cache holds).

        Returns logits [b, V] of the last position when last_only, else [b, n, V].
        """
        ctx = ctx if ctx is not None else RunContext()
        b, n = ids.shape
        start = cache.seq_len if cache is not None else 0
        if positions is None:
            positions = torch.arange(start, start + n, device=ids.device).expand(b, n)
        x = ctx.hook("embed", self.embed(ids))  # [b, n, d]
        rope = None
        if self.cfg.position == "learned":
            x = x + ctx.hook("pos", self.pos_embed(positions))  # [b, n, d]
        else:
            angles = ctx.hook("pos", self.rotary.angles(positions))  # [b, n, hd/2]
            rope = Rotary.cos_sin(angles, x.dtype)  # ([b, 1, n, hd], [b, 1, n, hd])
        ctx.mark("embed")
        masks: dict[int, StepMask] = {w: step_mask(positions, start + n, w) for w in self.cfg.windows}
        ctx.mark("mask")
        for i, block in enumerate(self.layers):
            x = block(x, rope, cache, start, masks[self.cfg.window(i)], backend, ctx)
            if ctx.keep_lens:
                ctx.lens_resid.append(x[:, -1])  # [b, d] view, read by the logit lens after the step
            ctx.mark(block.mark)
        if cache is not None:
            self._hook_kv_write(cache, start, n, ctx)
            cache.advance(n)
            ctx.mark("kv.write")
        if last_only:
            x = x[:, -1:]  # only the last position predicts the next token
        x = ctx.hook("final_norm", self.final_norm(x))
        logits = self.lm_head(x)  # [b, n or 1, V]
        if last_only:
            logits = ctx.hook("logits", logits[:, -1])  # [b, V]
        ctx.mark("head")
        return logits

    def _hook_kv_write(self, cache: KVCache, start: int, n: int, ctx: RunContext) -> None:
        if ctx.wants("kv.write"):
            rows = torch.stack([cache.rows(i, start, start + n) for i in range(self.cfg.num_layers)])
            ctx.hook("kv.write", rows)  # [L, 2, b, kv, n, hd]

    def lens(self, resid: torch.Tensor) -> torch.Tensor:
        """Logit lens: a residual [.., d] read through the final norm and the output head -> [.., V]."""
        return self.lm_head(self.final_norm(resid))
