"""K5 (C13): batch 1 -> 8 gives 5x the prefill throughput.

Measured by the batch sweep (labs/batch_sweep.py; the Batch page's sweep): b copies of 64 tokens of held-out
text at batch 1, 2, 4 and 8, every size in each round; tokens/s at batch 8 over batch 1, per round.
"""

from llmviz.analysis import stats
from llmviz.analysis.claim_spec import EMBEDDED, RATIO, ClaimSpec, EffectSpec, Lab
from llmviz.analysis.claims import noise_floor, rounds_of


def rule(f: dict):
    by = {s["batch"]: s["prefill_ms"] for s in f["sizes"]}
    if 1 not in by or 8 not in by:
        return {}, {}
    one, eight = by[1], by[8]
    gain = stats.paired_exact(rounds_of(one), rounds_of(eight), lambda a, b: 8 * a / b - 1)
    head = {f"prefill_ms_batch_{b}": by[b]["median"] for b in sorted(by)}
    control = f.get("control")
    if control and control["batch"] == 1:  # batch 1 against itself in the same rounds
        head["noise_floor"] = noise_floor(one, control["prefill_ms"])
    return {"prefill_throughput_gain": gain}, head


CLAIM = ClaimSpec(
    id="K5", concepts=("C13",), article="batch 1 -> 8: 5x prefill throughput",
    effects=(EffectSpec("prefill_throughput_gain", RATIO, 4.0),),
    lab=Lab("batch_sweep", EMBEDDED, {"sizes": (1, 2, 4, 8), "tokens": 64, "steps": 2}),
    rule=rule, predicted="prefill_throughput_gain", slips=("pad_sequences",),
    step_map={"prefill": ("ids", "embed")},
)
