"""Session: one generation of a batch of sequences on a shared, read-only model, one step at a time
(C5, C6, C13, C18).

A session owns its sequences (token ids, sampling settings, generators), its KV cache (which owns each
sequence's cached length) and its trace; the model is only read, so several sessions (Streamlit
browser sessions are threads) can step on one cached model at once. Step 0 is the prefill of every
prompt and produces each row's first new token (after fill_random, a timing workload's cache filled without a
prefill, step 0 decodes too); step t >= 1 decodes one token per unfinished row.
A batch of prompts of different lengths is one padded forward pass per step (static batching): a row
that has finished stays in the pass as padding until every row is done.
"""

from __future__ import annotations

import operator
from dataclasses import asdict, replace
from numbers import Integral

import torch

from llmviz.engine.capture import RunContext
from llmviz.engine.kv import make_kv_cache
from llmviz.engine.loading.model import LoadedModel
from llmviz.engine.phases import decode, prefill
from llmviz.engine.platform.devices import dtype_name, resolve_device, same_device
from llmviz.engine.platform.memory import check_fits, typed_out_of_memory
from llmviz.engine.random_fill import fill_random
from llmviz.engine.recording import FULL_LOGITS_MAX_VOCAB, TOP_K_KEPT, Recorder, record_step
from llmviz.engine.sampling import sample_rows
from llmviz.engine.sequence import Sequence
from llmviz.engine.step_batch import layer_windows
from llmviz.engine.step_loop import Feed, run_step
from llmviz.engine.timing import StepTimer
from llmviz.errors import (
    CaptureTooLargeError,
    ConfigError,
    LlmvizError,
    NotAllowedError,
    PromptError,
    SessionFinishedError,
)
from llmviz.trace import hooks
from llmviz.trace.budget import held_bytes, plan_capture, step_bytes
from llmviz.trace.config import EngineConfig, SamplingConfig, default_max_seq
from llmviz.trace.hooks import matches
from llmviz.trace.records import RunTrace, StepTrace

SHORTER = "use a shorter prompt or max_seq_len, capture meta instead of full, or dtype fp16/bf16"


def max_seq_for(lm: LoadedModel, config: EngineConfig) -> int:
    context = lm.cfg.max_position_embeddings
    if config.max_seq_len is None:
        return default_max_seq(context)
    if config.max_seq_len > context:
        raise ConfigError(f"max_seq_len={config.max_seq_len} exceeds the model's context of {context} tokens")
    return config.max_seq_len


class Session:
    def __init__(self, lm: LoadedModel, prompt: str | list[str] | None = None, config: EngineConfig | None = None,
                 *, prompt_ids: list[list[int]] | None = None, seeds: list[int] | None = None,
                 budget: int | None = None):
        """`prompt`: one text or a list of texts (one row each); or `prompt_ids`: rows of token ids.

        `budget`: the bytes this run may hold, its KV cache and its trace's arrays (None: no bound). Each step's
        capture copies only the hook points that fit in what the budget leaves (trace/budget.plan_capture), and a
        cache larger than the budget alone is refused (NotAllowedError) before any step runs.

        Row i samples with its own generator seeded `config.seed + i` (or `seeds[i]`: a serving trace's
        per-request seeds), so row i of a batch draws what the same prompt alone draws with that seed.
        """
        config = config or EngineConfig()
        self._check_model(lm, config)
        self.lm, self.config = lm, config
        self.max_seq = max_seq_for(lm, config)
        texts, rows = self._prompts(prompt, prompt_ids)
        for ids in rows:
            if len(ids) >= self.max_seq:
                raise PromptError(f"the prompt is {len(ids)} tokens but the context holds {self.max_seq} "
                                  "(including the tokens to generate): shorten it", code="prompt_too_long",
                                  n=len(ids), limit=self.max_seq)
        if seeds is not None and (len(seeds) != len(rows) or not all(0 <= s < 2**64 for s in seeds)):
            raise ConfigError(f"seeds needs one seed in [0, 2**64) per row ({len(rows)} rows)")
        if config.seed + len(rows) - 1 >= 2**64:
            raise ConfigError(f"seed {config.seed} is too large for {len(rows)} rows: row i draws with seed + i, "
                              "which must stay below 2**64")
        self.budget = budget
        self._check_capture_fits(rows)
        self._check_compile(config)
        device = lm.device
        row_seeds = seeds if seeds is not None else [config.seed + i for i in range(len(rows))]
        self.sequences = [Sequence.start(i, ids, config.sampling, row_seeds[i], device, text)
                          for i, (text, ids) in enumerate(zip(texts, rows, strict=True))]
        self.windows = layer_windows(lm.cfg, config.attention_mask)
        with typed_out_of_memory("allocating the KV cache", SHORTER):
            self.cache = make_kv_cache(config.kv_layout, lm.cfg, self.max_seq, capacity=len(rows),
                                       kv_dtype=config.kv_dtype, model_dtype=lm.dtype, device=device,
                                       block_size=config.kv_block_size, pool_blocks=config.kv_pool_blocks,
                                       window=config.sliding_window,
                                       rollback=config.kv_rollback, budget=config.kv_budget_bytes)
        for seq in self.sequences:
            self.cache.add(seq.seq_id)
        self._check_budget()
        self.filled = False  # fill_random: the prompt is in the cache, every step decodes
        self.trace = RunTrace(model_card=lm.card(), prompt=texts[0], engine_config=config.to_dict(),
                              seed=config.seed, tokens=lm.tokenizer.describe(i for r in rows for i in r),
                              prompts=texts)
        self.recorder = Recorder(lm, self.cache, config.capture, config.attn_backend, config.logit_lens_top_k,
                                 self.trace.tokens)

    def fill_random(self, seed: int = 0) -> None:
        """Before the first step: every prompt token but each row's last goes into the cache as seeded random K
        and V, with no forward pass (engine/random_fill.py), so step 0 decodes the last prompt token at the
        prompt's length: a timing workload at a long context, whose drawn tokens mean nothing."""
        if self.trace.steps or any(self.cache.length(s.seq_id) for s in self.sequences):
            raise ConfigError("fill_random fills an empty cache, before the run's first step")
        if any(s.prompt_len < 2 for s in self.sequences):
            raise ConfigError("fill_random needs prompts of at least 2 tokens (the last one is decoded)")
        gen = torch.Generator().manual_seed(seed)
        with torch.inference_mode(), typed_out_of_memory("filling the KV cache", SHORTER):
            for seq in self.sequences:
                fill_random(self.cache, self.lm.cfg, seq.seq_id, seq.ids[:-1], gen, self.lm.dtype, self.lm.device)
        self.filled = True

    def _check_budget(self) -> None:
        """A cache that alone fills the session's budget leaves no room for the run."""
        if self.budget is None or (held := self.cache.bytes_allocated()) <= self.budget:
            return
        size, limit = f"{held / 1e6:,.1f} MB", f"{self.budget / 1e6:,.1f} MB"
        self.cache = None
        raise NotAllowedError(f"this run's KV cache alone needs {size}; a session here keeps at most {limit} "
                              "(LLMVIZ_TRACE_BUDGET_MB): use a smaller model, a shorter max_seq_len or a smaller KV "
                              "dtype", code="session_budget", size=size, limit=limit)

    def kv_bytes(self) -> int:
        """Bytes the run's KV cache holds now, read from its tensors (what a session's budget counts beside the
        trace)."""
        return self.cache.bytes_allocated()

    def _copy_plan(self, step) -> frozenset | None:
        """Which hook points this step copies (capture full) within what the budget leaves once the cache, the
        arrays earlier steps keep whatever is shed (ids, top-k, timings) and this step's own logits are counted."""
        if self.budget is None or self.config.capture != "full":
            return None
        c = self.lm.cfg
        n_k = min(self.max_seq, max(self.cache.length(s.seq_id) for s in self.sequences) + step.width)
        dims = {"b": step.batch, "n": step.width, "n_k": n_k, "d": c.hidden_size, "h": c.num_heads,
                "kv": c.num_kv_heads, "hd": c.head_dim, "f": c.intermediate_size,
                "pos_dim": c.hidden_size if c.position == "learned" else c.head_dim // 2,
                "V": c.vocab_size, "L": c.num_layers}
        b, lens = step.batch, self.config.logit_lens_top_k
        own = b * c.vocab_size * 4 if c.vocab_size <= FULL_LOGITS_MAX_VOCAB else 0  # the full logits, float32
        own += b * step.width * 16 + b * (8 + 4 + TOP_K_KEPT * 12) + c.num_layers * b * lens * 12  # ids, top-k, lens
        kept_anyway = held_bytes(self.trace) - sum(step_bytes(s) for s in self.trace.steps)
        return plan_capture(dims, self.budget - self.kv_bytes() - kept_anyway - own)

    @staticmethod
    def _check_model(lm: LoadedModel, config: EngineConfig) -> None:
        if dtype_name(lm.dtype) != config.dtype:
            raise ConfigError(f"the model was loaded in {dtype_name(lm.dtype)} but the config asks for "
                              f"{config.dtype}: load it again")
        for name in ("kv_heads", "fused_qkv", "quant", "quant_group"):
            loaded = lm.options.get(name, EngineConfig.__dataclass_fields__[name].default)
            if loaded != getattr(config, name):
                raise ConfigError(f"the model was loaded with {name}={loaded!r} but the config asks for "
                                  f"{getattr(config, name)!r}: load it again")
        if config.device != "auto" and not same_device(resolve_device(config.device), lm.device):
            raise ConfigError(f"the model was loaded on {lm.device} but the config asks for {config.device}: "
                              "load it again")

    def set_capture(self, level: str) -> None:
        """The capture level of the steps from the next one on, for a scheduler that records only some steps (static
        batching's look at one step): the others run at "off" and keep no tensors. Full capture before the prefill
        is checked as at construction (CaptureTooLargeError)."""
        config = self.config.with_(capture=level)  # ConfigError for no such level
        self._check_compile(config)
        before, self.config = self.config, config
        try:
            if not self.trace.steps:
                self._check_capture_fits([s.ids for s in self.sequences])
        except CaptureTooLargeError:
            self.config = before
            raise
        self.recorder = replace(self.recorder, capture=level)

    @staticmethod
    def _check_compile(config: EngineConfig) -> None:
        if not config.compile:
            return
        if config.kv_layout != "contiguous" or config.sliding_window:
            raise ConfigError("compile needs kv_layout contiguous without a sliding window: a preallocated cache "
                              "keeps every decode step the same shape; dynamic, paged and ring caches do not")
        if config.capture != "off":
            raise ConfigError("compile runs with capture off: recording hooks would break the compiled graph")

    def _prompts(self, prompt, prompt_ids) -> tuple[list[str], list[list[int]]]:
        tok = self.lm.tokenizer
        if prompt_ids is not None:
            try:
                rows = [[operator.index(i) for i in row] for row in prompt_ids]
            except TypeError as exc:  # a float, a string, a row that is not a list
                raise PromptError(f"prompt_ids must be rows of whole token ids ({exc})") from exc
            if not rows or not all(rows):
                raise PromptError("prompt_ids needs at least one row of at least one token", code="prompt_empty")
            bad = [i for row in rows for i in row if not 0 <= i < self.lm.cfg.vocab_size]
            if bad:
                raise PromptError(f"token id {bad[0]} is outside the vocabulary (0..{self.lm.cfg.vocab_size - 1})")
            return [tok.decode(row) for row in rows], rows
        if not isinstance(prompt, str | list | tuple | None):
            raise PromptError(f"the prompt must be text or a list of texts, got {type(prompt).__name__}",
                              code="prompt_not_text")
        texts = [prompt] if isinstance(prompt, str) or prompt is None else list(prompt)
        if not texts:
            raise PromptError("no prompt given: type some text to run the model on", code="prompt_empty")
        return texts, [tok.encode(t) for t in texts]

    def _check_capture_fits(self, rows: list[list[int]]) -> None:
        """Full capture keeps fp32 CPU copies of every attention map: [b, h, n, n] scores and probs per layer."""
        cfg, c = self.config, self.lm.cfg
        if cfg.capture != "full" or self.budget is not None:  # a budget bounds the copies itself (_copy_plan)
            return
        maps = sum(matches(name, cfg.capture_filter) for p in ("scores", "probs")
                   for name in hooks.every_layer(p, c.num_layers))
        if not maps:
            return
        n = max(len(r) for r in rows)
        nbytes = maps * len(rows) * c.num_heads * n * n * 4
        check_fits(nbytes, torch.device("cpu"), f"recording the prefill's attention maps ({n} tokens, capture full)",
                   "use capture meta, a capture filter without scores/probs, or a shorter prompt", CaptureTooLargeError)

    @property
    def sampling(self) -> SamplingConfig:
        return self.sequences[0].sampling

    @sampling.setter
    def sampling(self, value: SamplingConfig) -> None:
        """New settings for every row's next tokens (the UI's sliders); each step records what it used."""
        for seq in self.sequences:
            seq.sampling = value

    @property
    def finished(self) -> str:
        return self.trace.steps[-1].finished if self.trace.steps else ""

    def step(self) -> StepTrace:
        """Run the next step (prefill first) and append it to the trace."""
        if self.finished:
            raise SessionFinishedError(f"the run has ended ({self.finished}); reset to start again")
        # A step either completes or leaves no trace: on any failure every sequence, its cache length and
        # its random stream go back to where they were, so the next try repeats this step exactly.
        lengths = [self.cache.length(s.seq_id) for s in self.sequences]
        for seq in self.sequences:
            seq.checkpoint()
        try:
            step = self._run(len(self.trace.steps))
        except BaseException:
            for seq, n in zip(self.sequences, lengths, strict=True):
                self.cache.truncate(seq.seq_id, n)
                seq.restore()
            raise
        self.trace.steps.append(step)
        return step

    def _run(self, index: int) -> StepTrace:
        """The one step loop (engine/step_loop.py) with this session's policy: every unfinished row each step, the
        prefill first (eager: its length differs run to run), then one token per row, compiled when asked."""
        cfg, lm, cache = self.config, self.lm, self.cache
        timer = StepTimer(lm.device)
        ctx = RunContext(cfg.capture, cfg.capture_filter, timer, keep_lens=cfg.logit_lens_top_k > 0)
        seqs = self.sequences
        compiled = cfg.compile and index > 0
        first_call = compiled and self._compiled_decode_needs_compiling()
        phase = prefill if index == 0 and not self.filled else decode

        def forward(step) -> torch.Tensor:
            if not compiled:
                return phase(lm.model, cache, step, ctx)
            logits = self._compiled_decode(step)
            ctx.mark("compile + forward" if first_call else "forward (compiled)")
            return logits

        rows = [[] if s.finished else s.ids[cache.length(s.seq_id):] for s in seqs]
        feed = Feed(rows, [s.seq_id for s in seqs], cfg.attn_backend, self.windows, lm.device, cfg.padding, compiled)
        with torch.inference_mode(), typed_out_of_memory(f"step {index}", SHORTER):
            ran = run_step(cache, feed, ctx, timer, forward, lambda logits: sample_rows(logits, seqs),
                           self._copy_plan)
            sampled = ran.next_ids.tolist()
            open_before = [not s.finished for s in seqs]
            for seq, token, was_open in zip(seqs, sampled, open_before, strict=True):
                if was_open:
                    seq.ids.append(int(token))
                    seq.finished = self._finished_reason(seq)
            ended = [s.finished for s, was_open in zip(seqs, open_before, strict=True) if was_open and s.finished]
            run_finished = ended[0] if ended and all(s.finished for s in seqs) else ""
            return record_step(self.recorder, index, "prefill" if index == 0 else "decode", ran.step, ran.logits,
                               ran.next_ids, ctx, ran.spans, run_finished=run_finished, compiled_now=first_call,
                               sampling={**asdict(self.sampling), "seed": seqs[0].seed},
                               row_finished=[s.finished for s in seqs])

    def _shape_key(self) -> tuple:
        c = self.config
        return len(self.sequences), self.max_seq, c.kv_dtype, c.attn_backend, self.lm.cfg.num_layers

    def _compiled_decode_needs_compiling(self) -> bool:
        with self.lm.lock:
            return self._shape_key() not in self.lm.compiled_shapes

    def _compiled_decode(self, step) -> torch.Tensor:
        """A decode step through the shared compiled model (under its lock); a compiler failure is a ConfigError."""
        lm = self.lm
        with lm.lock:
            try:
                logits = decode(lm.compiled_model(), self.cache, step, RunContext())
            except LlmvizError:
                raise
            except Exception as exc:  # inductor and dynamo raise many kinds (no C++ compiler, an op it cannot lower)
                if "out of memory" in str(exc).lower():
                    raise
                first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
                raise ConfigError(f"torch.compile could not compile this model with these settings "
                                  f"({type(exc).__name__}: {first}); run without compile") from exc
            lm.compiled_shapes.add(self._shape_key())
        return logits

    def force_last(self, tokens: list[int]) -> None:
        """Teacher forcing: each open row's last drawn token becomes tokens[i] before the next step, so a
        comparison can feed one setting the tokens another drew (the trace keeps what this run drew)."""
        if len(tokens) != len(self.sequences):
            raise ConfigError(f"force_last needs one token per row ({len(self.sequences)}), got {len(tokens)}")
        for seq, token in zip(self.sequences, tokens, strict=True):
            if len(seq.ids) > seq.prompt_len and not (seq.finished and seq.finished != "eos"):
                if not 0 <= int(token) < self.lm.cfg.vocab_size:
                    raise PromptError(f"token id {token} is outside the vocabulary")
                seq.ids[-1] = int(token)
                seq.finished = self._finished_reason(seq)

    def rewind(self, step: int) -> None:
        """Go back to just after step `step - 1` (C6): the later steps, the tokens they drew and the cache rows
        they wrote are dropped, so the next step() computes step `step` again (with reseed(): another draw, a
        teacher's "resample from this step"). One-row runs only."""
        if len(self.sequences) != 1:
            raise ConfigError(f"rewind works on a one-row run; this one has {len(self.sequences)} rows")
        if not isinstance(step, int) or not 1 <= step < len(self.trace.steps):
            raise ConfigError(f"rewind to step {step!r}: this run has steps 1..{len(self.trace.steps) - 1} to go "
                              "back to (step 0, the prefill, is a new run)")
        seq = self.sequences[0]
        del seq.ids[seq.prompt_len + step:]  # step j draws generated token j (0-based): keep tokens 0..step-1
        self.cache.truncate(seq.seq_id, seq.prompt_len + step - 1)  # the last kept token is not cached yet
        del self.trace.steps[step:]
        seq.finished = self.trace.steps[-1].row_finished[0] if self.trace.steps[-1].row_finished else ""

    def reseed(self, seed: int) -> None:
        """Every row draws from here on with a fresh generator seeded `seed + row` (recorded in each step's
        sampling)."""
        if not isinstance(seed, int) or not 0 <= seed < 2**63 - len(self.sequences):
            raise ConfigError(f"seed must be a whole number in [0, 2**63), got {seed!r}")
        for i, seq in enumerate(self.sequences):
            seq.seed = seed + i
            seq.generator.manual_seed(seed + i)

    def _finished_reason(self, seq: Sequence) -> str:
        eos = set(self.lm.tokenizer.eos_ids)
        if self.config.stop_at_eos and eos and seq.ids[-1] in eos:
            return "eos"
        if self.cache.length(seq.seq_id) + 1 > self.max_seq:
            return "max_seq_len"
        return ""

    def generate(self, max_new_tokens: int, keep_logits: bool = True) -> RunTrace:
        """Steps until max_new_tokens tokens are generated (prefill included), EOS or the cache is full.
        keep_logits=False: each step lets go of its whole next-token logits once recorded (its top-k and
        log-sum-exp stay), for runs that show only tokens and timings (llmviz/engine/lean_steps.py)."""
        if not isinstance(max_new_tokens, Integral) or isinstance(max_new_tokens, bool) or max_new_tokens < 1:
            raise ConfigError(f"max_new_tokens must be a whole number >= 1 (the prefill's token counts), "
                              f"got {max_new_tokens!r}")
        while len(self.trace.steps) < max_new_tokens and not self.finished:
            step = self.step()
            if not keep_logits:
                step.logits = None
        return self.trace
