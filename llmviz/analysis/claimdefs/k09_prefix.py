"""K9 (C22): prefix sharing saves ~30% of the memory on similar requests.

Counted, not timed: the serving lab runs the shared-prompt trace under continuous batching with and without
prefix sharing (labs/claim_labs.py) and reads the peak KV bytes each allocated (analysis/serving.kv_figures).
"""

from llmviz.analysis.claim_spec import EMBEDDED, SHARE, ClaimSpec, EffectSpec, Lab
from llmviz.analysis.claims import Effect
from llmviz.analysis.serving import kv_figures


def rule(f: dict):
    without, with_ = (kv_figures(f[s])["peak_kv_bytes"] for s in ("without", "with"))
    depends = {k: f[k] for k in ("shared_prefix_tokens", "prompt_tokens_mean") if k in f}
    return {"kv_memory_saved": Effect.exact(1 - with_ / without)}, {"peak_kv_without": without,
                                                                    "peak_kv_with": with_, **depends}


def behind(head: dict) -> dict:
    return {"without": head["peak_kv_without"], "with": head["peak_kv_with"]}


def depends(head: dict):
    if "shared_prefix_tokens" not in head:
        return None
    shared, mean = head["shared_prefix_tokens"], head["prompt_tokens_mean"]
    return "lesson.depends.prefix", {"shared": shared, "mean": mean, "share": shared / mean}


CLAIM = ClaimSpec(
    id="K9", concepts=("C22",), article="prefix sharing: ~30% less memory on similar requests",
    effects=(EffectSpec("kv_memory_saved", SHARE, 0.3),),
    lab=Lab("serving", EMBEDDED, {"trace": "shared-prompt", "timed": "timed.k9", "runs": {
        "without": {"scheduler": "continuous", "prefix_sharing": False},
        "with": {"scheduler": "continuous", "prefix_sharing": True}}}),
    rule=rule, predicted="kv_memory_saved", behind=behind, depends=depends, step_map={"prefill": ("cache",)},
)
