"""K1 (C3): prefill time is linear in the prompt's length; the article's 256 tokens in 35 ms, 512 in 68 ms.

Measured by the prefill sweep (labs/claim_labs.py), the lengths in rounds, the order rotating, so each length
pairs by round; judged on the measured pair (n, 2n) nearest 256 -> 512, its shorter length once more in each
round as the A-vs-A control. A law, not a gain: bounded on both sides (a quadrupling is not linear).
"""

from llmviz.analysis.claim_spec import BASE, RATIO, ClaimSpec, EffectSpec, Lab
from llmviz.analysis.claims import noise_floor, speedup
from llmviz.analysis.prefill_fit import fit_prefill


def pair(lengths) -> tuple[int | None, int | None]:
    """The article doubles 256 -> 512 tokens: the measured pair (n, 2n) nearest that, (None, None) without one."""
    have = set(lengths)
    return max(((n, 2 * n) for n in have if 2 * n in have and 2 * n <= 512), default=(None, None))


def rule(f: dict):
    ms = dict(zip(f["lengths"], f["prefill_ms"], strict=True))
    short, double = pair(ms)
    if short is None or len(ms) < 3:
        return {}, {}
    fit = fit_prefill(f["lengths"], [m["median"] for m in f["prefill_ms"]])
    longest = max(f["lengths"])
    head = {"ms_by_length": {n: m["median"] for n, m in ms.items()}, "short": short, "ms_short": ms[short]["median"],
            "ms_double": ms[double]["median"], "fit_a": fit.a, "fit_b": fit.b, "fit_c": fit.c, "r2": fit.r2,
            "takeover_tokens": fit.takeover, "longest": longest, "dominant_at_longest": fit.dominant(longest),
            **{f"share_{k}": v for k, v in fit.shares(longest).items()}}
    control = f.get("control")
    if control and control["length"] == short:  # the short length against itself in the same rounds
        head["noise_floor"] = noise_floor(ms[short], control["prefill_ms"])
    # a sweep in rounds over the lengths pairs them by round; one kept from before ran each length's repeats
    # together: the two medians, each resampled
    return {"doubling_256_to_512": speedup(ms[double], ms[short], paired=f.get("paired", False))}, head


CLAIM = ClaimSpec(
    id="K1", concepts=("C3",), article="256 tokens 35 ms, 512 tokens 68 ms",
    effects=(EffectSpec("doubling_256_to_512", RATIO, 68 / 35 - 1, bounded=True),),
    # the embedded model's context (512) holds a 510-token prompt; a full run sweeps the GPT-2 shape's 2,048
    lab=Lab("prefill_sweep", BASE, {"quick": (32, 64, 128, 255, 384, 510),
                                    "full": (64, 128, 256, 512, 768, 1024, 1536, 2047), "control": pair}),
    rule=rule, predicted="doubling_256_to_512", slips=("prefill_linear",),
    step_map={"prefill": ("embed",), "decode": ("embed",)},
)
