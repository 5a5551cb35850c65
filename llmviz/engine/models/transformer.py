"""DecoderModel: one pre-norm decoder-only transformer that every family is an instance of.

    ids [b, n] -> embed (+ learned positions) -> L x Block -> final norm -> lm_head -> logits

Block: x = x + attn(norm1(x)); x = x + mlp(norm2(x)). The forward pass reads the model and writes
only into the KV cache and the RunContext it is handed, so the model itself is never mutated.
"""

from __future__ import annotations

import torch
from torch import nn

from llmviz.engine.capture import RunContext
from llmviz.engine.models.attention import Attention
from llmviz.engine.models.layers import Rotary, make_mlp, make_norm
from llmviz.engine.step_batch import StepBatch, StepMask, layer_windows, whole_sequence
from llmviz.errors import ConfigError
from llmviz.trace.hooks import LayerHookNames
from llmviz.trace.model_config import ModelConfig


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig, layer: int):
        super().__init__()
        self.attn_norm = make_norm(cfg)
        self.attn = Attention(cfg, layer)
        self.mlp_norm = make_norm(cfg)
        self.mlp = make_mlp(cfg)
        self.names = LayerHookNames.for_layer(layer)
        self.mark = f"layer.{layer}"

    def forward(self, x, rope, cache, step: StepBatch, mask: StepMask, ctx: RunContext):  # [b, n, d] -> [b, n, d]
        h = ctx.hook(self.names.attn_in, self.attn_norm(x))
        x = x + self.attn(h, rope, cache, step, mask, ctx)
        m = ctx.hook(self.names.mlp_in, self.mlp_norm(x))  # [b, n, d]
        x = x + ctx.hook(self.names.mlp_out, self.mlp(m, lambda a: ctx.hook(self.names.mlp_act, a)))
        return ctx.hook(self.names.resid, x)


def unset_embedding(rows: int, dim: int) -> nn.Embedding:
    """An embedding table [rows, dim] left as allocated: every model is built to take loaded weights (or training's
    init_weights). nn.Embedding's own N(0, 1) init, run on the meta device the loader builds on, imports
    torch._dynamo: 2 s of every load on a 2-core CPU."""
    return nn.Embedding(rows, dim, _weight=torch.empty(rows, dim))


class DecoderModel(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = unset_embedding(cfg.vocab_size, cfg.hidden_size)
        if cfg.position == "learned":
            self.pos_embed = unset_embedding(cfg.max_position_embeddings, cfg.hidden_size)
        else:
            self.rotary = Rotary(cfg)
        self.layers = nn.ModuleList(Block(cfg, i) for i in range(cfg.num_layers))
        self.final_norm = make_norm(cfg)
        self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)
        if cfg.tie_embeddings:
            self.lm_head.weight = self.embed.weight

    def forward(self, step: StepBatch | torch.Tensor, cache=None, ctx: RunContext | None = None,
                last_only: bool = False, backend: str = "sdpa") -> torch.Tensor:
        """One forward pass over a StepBatch (its rows' new tokens, positions, masks and cache addressing).

        A plain ids tensor [b, n] is the whole sequence at positions 0..n-1 with no cache (training),
        run with `backend`. Returns logits [b, V] of each row's last real token when last_only, else
        [b, n, V].
        """
        ctx = ctx if ctx is not None else RunContext()
        if isinstance(step, torch.Tensor):
            step = whole_sequence(step, backend, layer_windows(self.cfg))
        ids, positions = step.ids, step.positions  # [b, n]
        if step.packed:  # every real token end to end in one row: [1, m] (C15's varlen batch)
            if ctx.active:
                raise ConfigError("a packed step records no hooks: run it at capture off")
            ids, positions = step.ids[step.real][None], step.real_positions[None]
        x, rope = self.embed_step(ids, positions, ctx)
        for i, block in enumerate(self.layers):
            x = block(x, rope, cache, step, step.masks[step.layer_windows[i]], ctx)
            if ctx.keep_lens:
                ctx.lens_resid.append(self._last(x, step)[:, 0])  # [b, d], read by the logit lens after the step
            ctx.mark(block.mark)
        if cache is not None:
            if ctx.wants("kv.write"):
                rows = torch.stack([cache.new_rows(i, step) for i in range(self.cfg.num_layers)])
                ctx.hook("kv.write", rows)  # [L, 2, b, kv, n, hd]
            ctx.mark("kv.write")
        if last_only:
            x = self._last(x, step)  # only each row's last real token predicts the next token
        x = ctx.hook("final_norm", self.final_norm(x))
        logits = self.lm_head(x)  # [b, n or 1, V]
        if last_only:
            logits = ctx.hook("logits", logits[:, -1])  # [b, V]
        ctx.mark("head")
        return logits

    def embed_step(self, ids: torch.Tensor, positions: torch.Tensor, ctx: RunContext):
        """ids, positions [b, n] -> x [b, n, d] and rope: (cos, sin) [b, 1, n, hd] each, or None."""
        x = ctx.hook("embed", self.embed(ids))  # [b, n, d] ([1, m, d] packed)
        rope = None
        if self.cfg.position == "learned":
            x = x + ctx.hook("pos", self.pos_embed(positions))  # [b, n, d]
        else:
            angles = ctx.hook("pos", self.rotary.angles(positions))  # [b, n, hd/2]
            rope = Rotary.cos_sin(angles, x.dtype)  # ([b, 1, n, hd], [b, 1, n, hd])
        ctx.mark("embed")
        return x, rope

    @staticmethod
    def _last(x: torch.Tensor, step: StepBatch) -> torch.Tensor:
        """[b, n, d] -> [b, 1, d]: each row's last real token (a view when no row is padded)."""
        if step.packed:  # [1, m, d] -> [b, 1, d]
            return x[0, step.packed_last][:, None]
        if step.uniform:
            return x[:, -1:]
        return x[torch.arange(x.shape[0], device=x.device), step.last_cols][:, None]

    def lens(self, resid: torch.Tensor) -> torch.Tensor:
        """Logit lens: a residual [.., d] read through the final norm and the output head -> [.., V]."""
        return self.lm_head(self.final_norm(resid))
