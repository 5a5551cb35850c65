"""K7 (C15): continuous batching lifts utilization from 30% to 70%.

Counted, not timed: the serving lab runs the mixed request trace with 8 slots under the static and the
continuous scheduler (labs/claim_labs.py) and counts the slots busy in each step (analysis/serving.metrics).
"""

from llmviz.analysis.claim_spec import EMBEDDED, POINTS, ClaimSpec, EffectSpec, Lab
from llmviz.analysis.claims import Effect
from llmviz.analysis.serving import metrics


def rule(f: dict):
    static, continuous = (metrics(f[s])["slot_utilization"] for s in ("static", "continuous"))
    depends = {k: f[k] for k in ("output_lens", "requests") if k in f}  # the trace's, which the count depends on
    return {"utilization_gain": Effect.exact(continuous - static)}, {"static": static, "continuous": continuous,
                                                                      **depends}


def behind(head: dict) -> dict:
    return {"static": head["static"], "continuous": head["continuous"]}


def depends(head: dict):
    if "output_lens" not in head:
        return None
    return "lesson.depends.lengths", {"low": head["output_lens"][0], "high": head["output_lens"][1],
                                      "n": head["requests"]}


CLAIM = ClaimSpec(
    id="K7", concepts=("C15",), article="continuous batching: utilization 30% -> 70%",
    effects=(EffectSpec("utilization_gain", POINTS, 0.4),),
    lab=Lab("serving", EMBEDDED, {"trace": "mixed", "timed": "timed.k7", "runs": {
        "static": {"scheduler": "static"}, "continuous": {"scheduler": "continuous"}}}),
    rule=rule, predicted="utilization_gain", behind=behind, depends=depends, step_map={"decode": ("cache+",)},
)
