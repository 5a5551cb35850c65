"""Claims K7-K11 (issue 11): the serving lab's schedulers and speculative decoding, and the optimization lab's
compares, on the embedded models. Mixed into llmviz.labs.claims.Measurer, which supplies model(), compare(),
sides(), where(), plan and progress."""

from __future__ import annotations

from dataclasses import asdict, is_dataclass

from llmviz.engine.serving.continuous import ServeConfig
from llmviz.engine.serving.requests import load_trace
from llmviz.engine.serving.static import serve, warm_up
from llmviz.engine.timing import spread
from llmviz.i18n.translator import timed
from llmviz.labs.decode_pair import claim_figures
from llmviz.labs.speculative import alone_decode, speculate
from llmviz.trace.config import EMBEDDED_DRAFT, EMBEDDED_MODEL

SLOTS = 8
SPECULATE_K, SPECULATE_TOKENS = 4, 32
SPECULATE_PROMPT = "def fibonacci(n):"


def plain(result: dict) -> dict:
    """A serving result with its step records as dicts (JSON-ready)."""
    return {**result, "records": [asdict(r) if is_dataclass(r) else r for r in result["records"]]}


class ServingClaims:
    def served(self, trace: str, scheduler: str, **options) -> dict:
        lm = self.model(EMBEDDED_MODEL)
        config = ServeConfig(slots=SLOTS, device=self.plan.device, **options)
        if "serving warm" not in self.memo:  # untimed runs pay the one-time costs
            warm_up(lm, config)
            self.memo["serving warm"] = True
        return plain(serve(lm, load_trace(trace), scheduler, config))

    def k7(self) -> dict:
        self.progress(0.0, "K7", {"what": "static"})
        static = self.served("mixed", "static")
        self.progress(0.5, "K7", {"what": "continuous"})
        continuous = self.served("mixed", "continuous")
        lengths = [r.output_len for r in load_trace("mixed").requests]  # what the count depends on (issue 36)
        return {"trace": "mixed", "slots": SLOTS, "static": static, "continuous": continuous,
                "output_lens": [min(lengths), max(lengths)], "requests": len(lengths),
                **self.where(self.model(EMBEDDED_MODEL)), "model": EMBEDDED_MODEL,
                **timed("timed.k7", slots=SLOTS)}

    def k8(self) -> dict:
        target, draft = self.model(EMBEDDED_MODEL), self.model(EMBEDDED_DRAFT)
        runs, again = [], []
        for r in range(self.plan.repeats):
            self.progress(r / self.plan.repeats, "K8", {"round": r + 1})
            runs.append(speculate(target, draft, SPECULATE_PROMPT, SPECULATE_K, SPECULATE_TOKENS))
            # the target alone once more in the same round: the A-vs-A noise floor (issue 36)
            again.append(alone_decode(target, runs[-1]["prompt_ids"], SPECULATE_TOKENS)[1])
        return {"model": EMBEDDED_MODEL, "draft": EMBEDDED_DRAFT, "k": SPECULATE_K, "tokens": SPECULATE_TOKENS,
                "speculative_ms_per_token": spread([x["ms_per_token"] for x in runs]),
                "target_alone_ms_per_token": spread([x["target_alone_ms_per_token"] for x in runs]),
                "control_alone_ms_per_token": spread(again),
                "acceptance_rate": runs[-1]["acceptance_rate"],
                "identical_outputs": all(x["identical_outputs"] for x in runs), **self.where(target),
                **timed("timed.k8", repeats=self.plan.repeats)}

    def k9(self) -> dict:
        runs = {}
        for i, sharing in enumerate((False, True)):
            self.progress(i / 2, "K9", {"what": "sharing" if sharing else "no sharing"})
            runs["with" if sharing else "without"] = self.served("shared-prompt", "continuous",
                                                                 prefix_sharing=sharing)
        prompts = [r.prompt_ids for r in load_trace("shared-prompt").requests]
        # the prefix every prompt shares: what the saving depends on (issue 36)
        columns = zip(*prompts, strict=False)  # position by position, up to the shortest prompt
        shared = next((i for i, ids in enumerate(columns) if len(set(ids)) > 1), min(map(len, prompts)))
        return {"trace": "shared-prompt", "slots": SLOTS, **runs, "model": EMBEDDED_MODEL,
                "shared_prefix_tokens": shared, "prompt_tokens_mean": sum(map(len, prompts)) / len(prompts),
                **self.where(self.model(EMBEDDED_MODEL)),
                **timed("timed.k9")}

    def k10(self) -> dict:
        return claim_figures("K10", self.pair("sdpa-fp8"))

    def k11(self) -> dict:
        return claim_figures("K11", self.pair("fused"))
