"""Session: one generation on a shared, read-only model, driven one step at a time (C5, C6, C18).

A session owns its KV cache, its torch.Generator and its trace; the model is only read, so several
sessions (Streamlit browser sessions are threads) can step on one cached model at once.
Step 0 is the prefill and produces the first new token; step t >= 1 decodes one token.
"""

from __future__ import annotations

from dataclasses import asdict

import numpy as np
import torch

from llmviz.engine.capture import RunContext
from llmviz.engine.config import DEFAULT_MAX_SEQ, EngineConfig
from llmviz.engine.devices import dtype_name, resolve_device, same_device, set_cpu_threads, torch_dtype
from llmviz.engine.hook_points import matches
from llmviz.engine.kv_cache import make_kv_cache
from llmviz.engine.loading import LoadedModel
from llmviz.engine.memory import check_fits, process_memory, typed_out_of_memory
from llmviz.engine.phases import decode, prefill
from llmviz.engine.sampling import sample
from llmviz.engine.timing import StepTimer
from llmviz.engine.trace import HookRecord, RunTrace, StepTrace
from llmviz.errors import CaptureTooLargeError, ConfigError, PromptError, SessionFinishedError

SHORTER = "use a shorter prompt or max_seq_len, capture meta instead of full, or dtype fp16/bf16"
FULL_LOGITS_MAX_VOCAB = 65536  # above this a step keeps the top-k logits and the log-sum-exp only
TOP_K_KEPT = 20


def max_seq_for(lm: LoadedModel, config: EngineConfig) -> int:
    context = lm.cfg.max_position_embeddings
    if config.max_seq_len is None:
        return min(context, DEFAULT_MAX_SEQ)
    if config.max_seq_len > context:
        raise ConfigError(f"max_seq_len={config.max_seq_len} exceeds the model's context of {context} tokens")
    return config.max_seq_len


class Session:
    def __init__(self, lm: LoadedModel, prompt: str, config: EngineConfig | None = None):
        config = config or EngineConfig()
        if dtype_name(lm.dtype) != config.dtype:
            raise ConfigError(f"the model was loaded in {dtype_name(lm.dtype)} but the config asks for "
                              f"{config.dtype}: load it again")
        if config.device != "auto" and not same_device(resolve_device(config.device), lm.device):
            raise ConfigError(f"the model was loaded on {lm.device} but the config asks for {config.device}: "
                              "load it again")
        self.lm, self.config = lm, config
        self.max_seq = max_seq_for(lm, config)
        ids = lm.tokenizer.encode(prompt)
        if len(ids) >= self.max_seq:
            raise PromptError(f"the prompt is {len(ids)} tokens but the context holds {self.max_seq} "
                              "(including the tokens to generate): shorten it", code="prompt_too_long", n=len(ids),
                              limit=self.max_seq)
        if config.threads:
            set_cpu_threads(config.threads)  # process-wide: the CLI and benchmarks set it, the app does not
        b, device = config.batch_size, lm.device
        self.prompt_ids = torch.tensor([ids] * b, dtype=torch.long, device=device)  # [b, n]
        self._check_capture_fits(len(ids))
        kv_dtype = lm.dtype if config.kv_dtype == "auto" else torch_dtype(config.kv_dtype)
        with typed_out_of_memory("allocating the KV cache", SHORTER):
            self.cache = make_kv_cache(config.kv_layout, lm.cfg, b, self.max_seq, kv_dtype, device)
        self.generator = torch.Generator(device=device).manual_seed(config.seed)
        self.history = self.prompt_ids  # [b, t] every token so far (for the repetition penalty)
        self.sampling = config.sampling  # may be changed between steps (the UI's sliders); each step records it
        self.trace = RunTrace(model_card=lm.card(), prompt=prompt, engine_config=config.to_dict(),
                              seed=config.seed, tokens=lm.tokenizer.describe(ids))

    def _check_capture_fits(self, n: int) -> None:
        """Full capture keeps fp32 CPU copies of every attention map: [b, h, n, n] scores and probs per layer."""
        cfg, c = self.config, self.lm.cfg
        if cfg.capture != "full":
            return
        maps = sum(matches(f"layers.{i}.{p}", cfg.capture_filter) for i in range(c.num_layers)
                   for p in ("scores", "probs"))
        if not maps:
            return
        nbytes = maps * cfg.batch_size * c.num_heads * n * n * 4
        check_fits(nbytes, torch.device("cpu"), f"recording the prefill's attention maps ({n} tokens, capture full)",
                   "use capture meta, a capture filter without scores/probs, or a shorter prompt", CaptureTooLargeError)

    @property
    def finished(self) -> str:
        return self.trace.steps[-1].finished if self.trace.steps else ""

    def step(self) -> StepTrace:
        """Run the next step (prefill first) and append it to the trace."""
        if self.finished:
            raise SessionFinishedError(f"the run has ended ({self.finished}); reset to start again")
        index = len(self.trace.steps)
        # A step either completes or leaves no trace: on any failure the cache length and the random
        # stream go back to where they were, so the next try repeats this step exactly.
        seq_len, rng = self.cache.seq_len, self.generator.get_state()
        try:
            step, next_ids = self._run(index)
        except BaseException:
            self.cache.seq_len = seq_len
            self.generator.set_state(rng)
            raise
        self.history = torch.cat([self.history, next_ids[:, None]], dim=1)
        self.trace.steps.append(step)
        return step

    def _run(self, index: int):
        cfg, lm = self.config, self.lm
        timer = StepTimer(lm.device)
        ctx = RunContext(cfg.capture, cfg.capture_filter, timer, keep_lens=cfg.logit_lens_top_k > 0)
        with torch.inference_mode(), typed_out_of_memory(f"step {index}", SHORTER):
            timer.start()
            if index == 0:
                ids = self.prompt_ids
                logits = prefill(lm.model, self.cache, ids, ctx, cfg.attn_backend)
            else:
                ids = self.history[:, -1:]  # [b, 1] the token sampled last step
                logits = decode(lm.model, self.cache, ids, ctx, cfg.attn_backend)
            next_ids = ctx.hook("sample", sample(logits, self.sampling, self.generator, self.history))
            ctx.mark("sample")
            spans = timer.spans_ms()
            # Everything below is outside the timed region.
            ctx.rebuild_attention()
            return self._record(index, ids, logits, next_ids, ctx, spans), next_ids

    def generate(self, max_new_tokens: int) -> RunTrace:
        """Steps until max_new_tokens tokens are generated (prefill included), EOS or the cache is full."""
        while len(self.trace.steps) < max_new_tokens and not self.finished:
            self.step()
        return self.trace

    def _record(self, index, ids, logits, next_ids, ctx: RunContext, spans: dict) -> StepTrace:
        n = ids.shape[1]
        start = self.cache.seq_len - n
        positions = np.arange(start, start + n, dtype=np.int64)[None].repeat(ids.shape[0], 0)
        logits32 = logits.float()
        top = logits32.topk(min(TOP_K_KEPT, logits32.shape[-1]), dim=-1)
        lens_ids, lens_probs = self._logit_lens(ctx)
        sampled = next_ids.cpu().numpy().astype(np.int64)
        step = StepTrace(
            index=index, phase="prefill" if index == 0 else "decode",
            input_ids=ids.cpu().numpy().astype(np.int64), positions=positions, sampled=sampled,
            logits=logits32.cpu().numpy() if logits32.shape[-1] <= FULL_LOGITS_MAX_VOCAB else None,
            topk_ids=top.indices.cpu().numpy().astype(np.int64), topk_logits=top.values.cpu().numpy(),
            logsumexp=logits32.logsumexp(-1).cpu().numpy(), lens_ids=lens_ids, lens_probs=lens_probs,
            hooks=[HookRecord(**r) for r in ctx.finish()], kv=self.cache.snapshot(),
            timings={"spans_ms": spans, "total_ms": sum(spans.values()), "device": str(self.lm.device),
                     "threads": torch.get_num_threads(), "capture": self.config.capture,
                     "attn_backend": self.config.attn_backend, "tokens": int(n)},
            memory=process_memory(self.lm.device), sampling=asdict(self.sampling),
        )
        step.finished = self._finished_reason(sampled)
        shown = [*sampled.ravel(), *step.topk_ids.ravel()]
        if lens_ids is not None:
            shown += list(lens_ids.ravel())
        self.trace.tokens.update(self.lm.tokenizer.describe(t for t in shown if t not in self.trace.tokens))
        return step

    def _logit_lens(self, ctx: RunContext):
        k = self.config.logit_lens_top_k
        if not k or not ctx.lens_resid:
            return None, None
        resid = torch.stack(ctx.lens_resid)  # [L, b, d]
        probs = self.lm.model.lens(resid).float().softmax(-1)  # [L, b, V]
        top = probs.topk(min(k, probs.shape[-1]), dim=-1)
        ctx.lens_resid.clear()
        return top.indices.cpu().numpy().astype(np.int64), top.values.cpu().numpy()

    def _finished_reason(self, sampled: np.ndarray) -> str:
        eos = set(self.lm.tokenizer.eos_ids)
        if self.config.stop_at_eos and eos and all(int(t) in eos for t in sampled):
            return "eos"
        if self.cache.seq_len + 1 > self.max_seq:
            return "max_seq_len"
        return ""
