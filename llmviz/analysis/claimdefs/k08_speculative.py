"""K8 (C16): speculative decoding takes up to 40% off the decode time.

Measured by the speculative lab (labs/speculative.py): the embedded model with its draft proposing 4 tokens,
against the target alone on the same prompt in the same round, the target alone once more as the control.
"""

from llmviz.analysis.claim_spec import EMBEDDED, SHARE, ClaimSpec, EffectSpec, Lab
from llmviz.analysis.claims import noise_floor, saving


def rule(f: dict):
    alone, spec = f["target_alone_ms_per_token"], f["speculative_ms_per_token"]
    floor = {"noise_floor": noise_floor(alone, f["control_alone_ms_per_token"])} if (
        "control_alone_ms_per_token" in f) else {}  # the target alone against itself in the same rounds
    return {"decode_time_saved": saving(alone, spec)}, {"target_alone_ms": alone["median"],
                                                        "speculative_ms": spec["median"],
                                                        "acceptance_rate": f["acceptance_rate"],
                                                        "identical_outputs": f["identical_outputs"], **floor}


CLAIM = ClaimSpec(
    id="K8", concepts=("C16",), article="speculative decoding: decode time up to 40% less",
    effects=(EffectSpec("decode_time_saved", SHARE, 0.4),),
    lab=Lab("speculative", EMBEDDED, {"k": 4, "tokens": 32, "prompt": "def fibonacci(n):",
                                            "timed": "timed.k8"}),
    rule=rule, predicted="decode_time_saved", step_map={"decode": ("head", "cache")},
)
