"""K3 (C8, C9): a contiguous cache 15% faster up to 512 tokens, a paged one 20% faster past 1,024.

Measured by the KV layouts sweep (labs/layout_sweep.py: the KV layouts page's automatic lengths), each range
judged where the sweep reached it (a model of 512 tokens never passes 1,024): two effects, the first layout once
more in each round as the control at each judged length.
"""

from llmviz.analysis.claim_parts import at
from llmviz.analysis.claim_spec import LONG, RATIO, ClaimSpec, EffectSpec, Lab
from llmviz.analysis.claims import noise_floor, speedup


def rule(f: dict):
    lengths, ms = f["lengths"], f["ms_per_token"]
    short = max((i for i, n in enumerate(lengths) if n <= 512), default=None)
    long = max((i for i, n in enumerate(lengths) if n > 1024), default=None)  # "past 1024 tokens"
    if not {"paged", "contiguous"} <= set(ms):
        return {}, {}
    effects = {}
    if short is not None:
        effects["contiguous_faster_short"] = speedup(at(ms["paged"], short), at(ms["contiguous"], short))
    if long is not None:
        effects["paged_faster_long"] = speedup(at(ms["contiguous"], long), at(ms["paged"], long))
    head = {f"{layout}_ms_at_{lengths[i]}": ms[layout]["median"][i] for layout in ms for i in (short, long)
            if i is not None}
    if "control" in f:  # the first layout against its second run in each round, at each judged length
        again, first = f["control"]["ms_per_token"], ms[f["control"]["layout"]]
        head["noise_floors"] = {lengths[i]: noise_floor(at(first, i), at(again, i)) for i in (short, long)
                                if i is not None}
    return effects, head


CLAIM = ClaimSpec(
    id="K3", concepts=("C8", "C9"), article="contiguous 15% faster up to 512 tokens; paged 20% faster past 1024",
    effects=(EffectSpec("contiguous_faster_short", RATIO, 0.15), EffectSpec("paged_faster_long", RATIO, 0.2)),
    lab=Lab("layout_sweep", LONG), rule=rule, facts=("longest", "paged_ms", "contiguous_ms"),
    predicted="paged_faster_long", second="contiguous_faster_short",
    step_map={"decode": ("cache+",)},
)
