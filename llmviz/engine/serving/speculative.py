"""Speculative decoding (C16; claim K8): a small draft model proposes k tokens, the target verifies k + 1
positions in one forward pass, and both caches are truncated to what was kept.

A round, with x the last token (both caches hold everything before it):

    draft        feeds x (and a token it has not cached yet), then proposes d1..dk one decode step each
    verify       the target feeds [x, d1..dk] at once: k + 1 next-token distributions p0..pk
    accept       greedy: keep d_i while it is the target's own pick; sampling: keep d_i with probability
                 min(1, p(d_i) / q(d_i)), and at the first rejection draw from normalize(max(0, p - q)), so
                 every token has the target's distribution (Leviathan et al., 2023; Chen et al., 2023)
    bonus        when all k are kept, one more token from p_k
    truncate     the target keeps x, d1..dj; the draft keeps what it fed of those

Greedy output is the target's own, token for token (the engine's same-tokens rule). Each round keeps its
draft and verify wall times; the measurement around it (a warm-up, each model alone timed the same way, the
predicted speed-up) is llmviz/labs/speculative.py's. At capture meta or full a round's verification is recorded as
the StepTrace every page reads: the target's step over [x, d1..dk], its k + 1 queries' attention, the
logits of the position its token was drawn from, that token; the cache as the step left it, before the truncation.
"""

from __future__ import annotations

from dataclasses import asdict

import torch

from llmviz.engine.capture import RunContext
from llmviz.engine.kv import make_kv_cache
from llmviz.engine.loading.model import LoadedModel
from llmviz.engine.recording import Recorder
from llmviz.engine.sampling import check_finite, filter_logits
from llmviz.engine.serving.driver import Clock, Planned, Policy, Recording, drive, step_once
from llmviz.engine.step_batch import layer_windows
from llmviz.engine.step_loop import Feed, run_step
from llmviz.errors import ConfigError
from llmviz.trace.config import ATTN_BACKENDS, CAPTURE_LEVELS, KV_LAYOUTS, SamplingConfig, check_seed
from llmviz.trace.schedule import Round

MAX_K = 16


def check_pair(target: LoadedModel, draft: LoadedModel) -> None:
    """A draft must speak the target's tokens: the same vocabulary, the same ids."""
    same_ids = draft.tokenizer.hf.get_vocab() == target.tokenizer.hf.get_vocab()
    if draft.cfg.vocab_size != target.cfg.vocab_size or not same_ids:
        raise ConfigError(f"the draft {draft.name} has another tokenizer or vocabulary than the target {target.name} "
                          f"({draft.cfg.vocab_size} and {target.cfg.vocab_size} ids): a draft must share the target's")


def probabilities(logits: torch.Tensor, sampling: SamplingConfig) -> torch.Tensor:
    """[n, V] logits -> [n, V] the distribution the sampler draws from (temperature, top-k, top-p)."""
    return filter_logits(logits.float(), sampling).softmax(-1)


def accept(p: torch.Tensor, q: torch.Tensor, proposed: list[int], generator: torch.Generator) -> tuple[int, int]:
    """Rejection sampling. p [k+1, V] target, q [k, V] draft distributions at each proposed position;
    returns (tokens kept, the next token): at the first rejection a draw from normalize(max(0, p - q)),
    when all are kept a draw from p[k]."""
    for i, d in enumerate(proposed):
        u = torch.rand((), generator=generator, device=p.device)
        if u * q[i, d] <= p[i, d]:  # u < p/q, written without dividing
            continue
        residual = (p[i] - q[i]).clamp(min=0)
        residual = residual / residual.sum() if residual.sum() > 0 else p[i]
        return i, int(torch.multinomial(residual, 1, generator=generator))
    return len(proposed), int(torch.multinomial(p[len(proposed)], 1, generator=generator))


class Speculator(Policy):
    """Speculative decoding as a policy over the one driver: a step is a round. Its plan is the draft's proposals
    (plan_ms: the draft's wall time), its run the target's verification of k + 1 positions, its settle the acceptance
    rule and both caches truncated. The caches are of the chosen layout and the attention the chosen backend, both
    models alike (a layout must truncate: every stock one does; the ring as far as its rollback slots reach)."""

    name = "speculative"
    plans_on_device = True  # the draft's steps

    def __init__(self, target: LoadedModel, draft: LoadedModel, prompt_ids: list[int], k: int,
                 sampling: SamplingConfig | None = None, seed: int = 0, max_new: int = 32, capture: str = "off",
                 capture_rounds: tuple = (), backend: str = "sdpa", layout: str = "contiguous"):
        if capture not in CAPTURE_LEVELS:
            raise ConfigError(f"capture must be one of {', '.join(CAPTURE_LEVELS)}, got {capture!r}")
        super().__init__(target, capture, capture_rounds)
        if not isinstance(k, int) or not 1 <= k <= MAX_K:
            raise ConfigError(f"k (draft tokens per round) must be a whole number in 1..{MAX_K}, got {k!r}")
        check_pair(target, draft)
        if target.device != draft.device:
            raise ConfigError("the draft and the target must be on the same device")
        self.sampling = sampling or SamplingConfig(temperature=0)
        if self.sampling.repetition_penalty != 1.0:
            raise ConfigError("speculative decoding here samples without a repetition penalty")
        if not prompt_ids:
            raise ConfigError("a prompt of at least one token is needed")
        if not isinstance(max_new, int) or max_new < 1:
            raise ConfigError(f"max_new (tokens to generate) must be a whole number >= 1, got {max_new!r}")
        check_seed(seed)  # as generate bounds its seed (a seed >= 2**64 was an OverflowError in manual_seed)
        self.backend = ATTN_BACKENDS.check(backend, "backend")
        KV_LAYOUTS.check(layout, "layout")
        self.target, self.draft, self.k, self.max_new = target, draft, k, max_new
        max_seq = len(prompt_ids) + max_new + k + 1
        for lm in (target, draft):
            if max_seq > lm.cfg.max_position_embeddings:
                raise ConfigError(f"{len(prompt_ids)} prompt tokens + {max_new} new + k={k} exceed {lm.name}'s "
                                  f"context of {lm.cfg.max_position_embeddings}")
        self.caches = {}
        self.windows = {"target": layer_windows(target.cfg), "draft": layer_windows(draft.cfg)}  # per step: read
        for name, lm in (("target", target), ("draft", draft)):
            self.caches[name] = make_kv_cache(layout, lm.cfg, max_seq, model_dtype=lm.dtype, device=lm.device)
            self.caches[name].add(0)
        self.ids = list(prompt_ids)
        self.prompt_len = len(prompt_ids)
        self.generator = torch.Generator(device=target.device).manual_seed(seed)
        self.seed = seed
        self._recorder = Recorder(target, self.caches["target"], capture, self.backend, 0, self.tokens)

    @property
    def rounds(self) -> list[Round]:
        return self.records

    @property
    def prefill_ms(self) -> float:
        return self.start_ms

    @property
    def recorder(self) -> Recorder:
        return self._recorder

    @property
    def finished(self) -> bool:
        return len(self.generated) >= self.max_new

    def _feed(self, which: str, tokens: list[int]):
        """One step of the one step loop (engine/step_loop.py) for the draft (or the target's prefill), drawing
        nothing: the logits [V] of its last position."""
        lm, cache = (self.target, self.caches["target"]) if which == "target" else (self.draft, self.caches["draft"])
        ctx = RunContext()
        feed = Feed([tokens], [0], self.backend, self.windows[which], lm.device)
        ran = run_step(cache, feed, ctx, None, lambda step: lm.model(step, cache=cache, ctx=ctx, last_only=True), None)
        logits = ran.logits[0]
        check_finite(logits)
        return logits

    def start(self) -> None:
        """Both models read the prompt but its last token (the first round feeds it); the driver times it."""
        if len(self.ids) > 1:
            for which in ("target", "draft"):
                self._feed(which, self.ids[:-1])

    @property
    def generated(self) -> list[int]:
        return self.ids[self.prompt_len:]

    def plan(self, index: int) -> Planned:
        """The draft proposes k tokens (never past the tokens asked for), one decode step each; the target will feed
        [x, d1..dk] at once."""
        k = max(1, min(self.k, self.max_new - len(self.generated)))
        proposed, q = [], []
        pending = self.ids[self.caches["draft"].length(0):]  # x, and d_k of a fully accepted round
        for _ in range(k):
            logits = self._feed("draft", pending)
            if self.sampling.greedy:
                token = int(logits.float().argmax())
            else:
                dist = probabilities(logits[None], self.sampling)[0]  # q: what the draft drew from
                token = int(torch.multinomial(dist, 1, generator=self.generator))
                q.append(dist)
            proposed.append(token)
            pending = [token]
        self._proposed, self._q = proposed, q
        self._base = self.caches["target"].length(0)
        feed = Feed([[self.ids[-1], *proposed]], [0], self.backend, self.windows["target"], self.target.device)
        return Planned(self.caches["target"], feed, self.target.model, None, last_only=False)

    def settle(self, index: int, planned, ran) -> tuple[int, int]:
        """The acceptance rule on the target's k + 1 distributions, then both caches truncated to what was kept:
        (drafts kept, the target's token after them)."""
        logits = ran.logits[0]  # [k+1, V]
        check_finite(logits)
        proposed = self._proposed
        if self.sampling.greedy:
            picks = logits.float().argmax(-1).tolist()
            kept = next((i for i, (d, t) in enumerate(zip(proposed, picks, strict=False)) if d != t), len(proposed))
            token = picks[kept]
        else:
            kept, token = accept(probabilities(logits, self.sampling), torch.stack(self._q), proposed, self.generator)
        self.ids += [*proposed[:kept], token]
        self.caches["target"].truncate(0, self._base + 1 + kept)  # x, d1..dj
        draft = self.caches["draft"]
        draft.truncate(0, min(draft.length(0), self._base + 1 + kept))
        return kept, token

    def log(self, index: int, planned, settled: tuple[int, int], clock: Clock) -> Round:
        kept, token = settled
        return Round(tuple(self._proposed), kept, token, clock.plan_ms, clock.ms - clock.plan_ms)

    def recording(self, index: int, ran, settled: tuple[int, int]) -> Recording:
        """The verification: its k + 1 queries' attention, the logits of the position its token was drawn from, and
        that token."""
        kept, token = settled
        return Recording("decode", ran.logits[0][kept][None], torch.tensor([token]),
                         {**asdict(self.sampling), "seed": self.seed}, [""])

    def round(self) -> Round:
        """The next round through the driver."""
        return step_once(self)

    def run(self) -> dict:
        drive(self)
        del self.ids[self.prompt_len + self.max_new:]  # a last round may overshoot by its bonus token
        return self.result()

    def result(self) -> dict:
        rounds = self.rounds
        proposed = sum(len(r.proposed) for r in rounds)
        accepted = sum(r.accepted for r in rounds)
        # A round checks its drafts up to the first rejection: the drafts after it are never judged. The rate a
        # draft is accepted when checked is accepted / (accepted + rounds that ended in a rejection).
        checked = accepted + sum(1 for r in rounds if r.accepted < len(r.proposed))
        return {"output_ids": self.generated[:self.max_new], "rounds": rounds, "k": self.k, "proposed": proposed,
                "accepted": accepted, "acceptance_rate": accepted / checked if checked else 0.0,
                "accepted_share": accepted / proposed if proposed else 0.0,
                "tokens_per_round": min(len(self.generated), self.max_new) / len(rounds),
                "prefill_ms": self.prefill_ms, "draft_ms": sum(r.draft_ms for r in rounds),
                "verify_ms": sum(r.verify_ms for r in rounds),
                "ms_per_token": sum(r.draft_ms + r.verify_ms for r in rounds) / self.max_new,
                "backend": self.backend, "layout": self.caches["target"].layout}
