"""Adaptive rounds (llmviz/labs/rounds.py): batches of a claim's measurement pool their rounds until the
one rule decides or the budget would be passed; hand-made figures, a hand-made clock."""

import pytest

from llmviz.labs.rounds import MAX_BATCHES, merge_rounds, until_decided


def spread(*ms):
    return {"median": sorted(ms)[len(ms) // 2], "min": min(ms), "max": max(ms), "all": list(ms)}


def test_merge_pools_every_spreads_rounds_and_keeps_counts():
    a = {"model": "m", "kv_bytes_allocated": [1000, 500], "decode_ms_per_token": [spread(10, 11, 12), spread(5, 6, 7)],
         "ms_per_token": {"paged": {"median": [1, 2], "min": [1, 2], "max": [1, 2], "all": [[1, 1], [2, 2]]}}}
    b = {"model": "m", "kv_bytes_allocated": [1000, 500], "decode_ms_per_token": [spread(13, 14, 9), spread(8, 4, 6)],
         "ms_per_token": {"paged": {"median": [3, 4], "min": [3, 4], "max": [3, 4], "all": [[3, 3], [4, 4]]}}}
    m = merge_rounds(a, b)
    assert m["model"] == "m" and m["kv_bytes_allocated"] == [1000, 500]
    assert m["decode_ms_per_token"][0]["all"] == [10, 11, 12, 13, 14, 9]
    assert (m["decode_ms_per_token"][0]["min"], m["decode_ms_per_token"][0]["max"]) == (9, 14)
    assert m["decode_ms_per_token"][0]["median"] == pytest.approx(11.5)  # six rounds: between 11 and 12
    assert m["ms_per_token"]["paged"]["all"] == [[1, 1, 3, 3], [2, 2, 4, 4]]
    assert m["ms_per_token"]["paged"]["median"] == [2, 3]


def k4_batches(rounds_b: list[list[float]]):
    """K4's figures batch after batch: A at 10 ms every round, B as given; the cache halved (counted)."""
    batches = iter(rounds_b)

    def measure():
        b = next(batches)
        return {"model": "m", "device": "cpu", "threads": 1, "specs": ["a", "b"],
                "decode_ms_per_token": [spread(*[10.0] * len(b)), spread(*b)],
                "prefill_ms": [spread(1.0, 1.0, 1.0)] * 2, "kv_bytes_allocated": [1000, 500]}
    return measure


class Clock:
    """A hand-made clock that each batch moves on by `step` seconds."""

    def __init__(self, step: float):
        self.now, self.step = 0.0, step

    def __call__(self):
        return self.now

    def timed(self, measure):
        def batch():
            self.now += self.step
            return measure()
        return batch


def test_a_clear_result_stops_at_the_first_look():
    """Batches of 5 rounds: the plan's first look is at 10 rounds (stats.Looks), so a clear x2 takes two batches
    and holds there, its interval the 2nd to the 9th of the ten per-round effects (coverage 1 - 2 x 11/1024)."""
    clear = [5.0, 5.1, 4.9, 5.0, 5.2]
    f = until_decided("K4", k4_batches([clear, clear]), 10.0)
    assert f["batches"] == 2 and f["looks"] == {"batch": 5, "batches": MAX_BATCHES}
    from llmviz.analysis.claim_effects import judged

    effect = judged("K4", f)["effects"][1]
    ratios = sorted(10.0 / b - 1 for b in clear + clear)
    assert effect["verdict"] == "holds" and (effect["low"], effect["high"]) == (ratios[1], ratios[8])
    assert effect["level"] == pytest.approx(1 - 2 * 11 / 1024) and effect["looks"] == 7 and effect["rounds"] == 10


def test_an_undecided_result_gets_more_rounds_until_it_decides():
    """x1.25-x2.0 in the first batch; the next batches are all x1.67. Batches of 3 rounds are looked at from 9
    rounds (rank 1: [min, max] = x1.25-x2.0 still reaches below x1.4), then at 12 (rank 2: x1.54-x1.67): four."""
    first, clear = [8.0, 5.0, 6.5], [6.0, 6.0, 6.0]
    clock = Clock(1.0)
    f = until_decided("K4", clock.timed(k4_batches([first] + [clear] * 7)), 10.0, clock)
    assert f["batches"] == 4 and f["decode_ms_per_token"][1]["all"][:3] == first
    from llmviz.analysis.claim_effects import judged

    assert judged("K4", f)["verdict"] == "holds"


def test_the_budget_stops_it_undecided():
    """Batches of 4 s against a 10 s budget: after two (8 s) a third would end at 12 s: it stops, cannot tell."""
    noisy = [[8.0, 5.0, 6.5]] * MAX_BATCHES
    clock = Clock(4.0)
    f = until_decided("K4", clock.timed(k4_batches(noisy)), 10.0, clock)
    assert f["batches"] == 2 and f["budget_s"] == 10.0 and len(f["decode_ms_per_token"][1]["all"]) == 6


def test_never_past_max_batches():
    noisy = [[8.0, 5.0, 6.5]] * MAX_BATCHES
    clock = Clock(0.0)
    assert until_decided("K4", clock.timed(k4_batches(noisy)), 1e9, clock)["batches"] == MAX_BATCHES


def test_patience_scales_each_claims_budget():
    """Issue 36: the rounds that would decide are offered; a plan's patience multiplies the claim's budget (10 s on
    the embedded model, 60 s on the GPT-2 shape, three times that in a full run), within 1 to 6."""
    from llmviz.errors import ConfigError
    from llmviz.labs.claims import ClaimsPlan

    assert ClaimsPlan().budget_s("K5") == 10.0 and ClaimsPlan().budget_s("K3") == 60.0
    assert ClaimsPlan().budget_s("K4") == 60.0  # a decode claim: the GPT-2 shape at its long context
    assert ClaimsPlan(patience=4).budget_s("K5") == 40.0 and ClaimsPlan(quick=False, patience=2).budget_s("K6") == 360
    for bad in (0.5, 7, "4", None):
        with pytest.raises(ConfigError, match="patience must be 1 to 6"):
            ClaimsPlan(patience=bad)


def test_a_compares_probe_per_round_pools_with_its_rounds():
    """The CI's claims page run: K2 pooled two batches of decode rounds (6) but kept the first batch's 3 probes,
    and the paired share refused them. A plain per-round list pools like a spread's rounds."""
    a = {"bandwidth": {"gb_per_s": 20.0, "rounds_gb_per_s": [20.0, 21.0, 19.0]}, "decode_ms_per_token": spread(1, 2, 3)}
    b = {"bandwidth": {"gb_per_s": 18.0, "rounds_gb_per_s": [18.0, 17.0, 19.5]}, "decode_ms_per_token": spread(4, 5, 6)}
    m = merge_rounds(a, b)
    assert m["bandwidth"]["rounds_gb_per_s"] == [20.0, 21.0, 19.0, 18.0, 17.0, 19.5]
    assert m["bandwidth"]["gb_per_s"] == 20.0 and len(m["decode_ms_per_token"]["all"]) == 6


def test_no_more_batches_when_no_effect_can_tell_more():
    """Review finding: K3 swept only up to 512 tokens has one effect that holds and one not measured; the claim
    cannot tell, but more rounds decide nothing: one batch."""
    def k3():  # 9 rounds a batch: the plan looks at the first batch's end
        cell = {"median": [10.0], "min": [10.0], "max": [10.0], "all": [[10.0] * 9]}
        fast = {"median": [8.0], "min": [8.0], "max": [8.0], "all": [[8.0] * 9]}
        return {"lengths": [256], "ms_per_token": {"paged": cell, "contiguous": fast}, "model": "m"}
    f = until_decided("K3", k3, 1e9)
    from llmviz.analysis.claim_effects import judged

    claim = judged("K3", f)
    assert claim["verdict"] == "cannot_tell" and [e["verdict"] for e in claim["effects"]] == ["holds",
                                                                                           "cannot_measure"]
    assert f["batches"] == 1


def test_k3_is_measured_at_the_kv_layouts_pages_own_lengths_and_steps():
    """Issue 36 (6): the page's automatic lengths on the GPT-2 shape (a session's 2,048 slots less 8 steps: 64, 256,
    512, 1,024, 1,536, 2,040); a quick K3 takes the two it is judged at, a full one all six."""
    from llmviz.labs.claim_labs import layout_lengths as k3_lengths
    from llmviz.trace.config import LAYOUT_SWEEP_STEPS

    assert LAYOUT_SWEEP_STEPS == 8
    assert k3_lengths(2048, quick=True) == [512, 2040]
    assert k3_lengths(2048, quick=False) == [64, 256, 512, 1024, 1536, 2040]


def test_a_decode_pairs_batches_pool_every_round_and_the_floor_reads_them_all():
    """Two batches of K4's figures (labs/decode_pair.claim_figures) pool both sides', the control's and the probe's
    rounds; the A-vs-A floor is then taken over all of them (here A and its control alternate 10 and 11 ms, so A's
    time over its control's is 10/11 - 1 or 11/10 - 1 in each round, by hand)."""
    from llmviz.analysis.claim_effects import judged
    from llmviz.engine.timing import spread

    def batch(a, b, c, probes):
        return {"specs": ["kv-dtype=fp32", "kv-dtype=bf16"], "decode_ms_per_token": [spread(a), spread(b)],
                "control_ms_per_token": spread(c), "bandwidth": {"gb_per_s": 30.0, "rounds_gb_per_s": probes},
                "kv_bytes_allocated": [100, 50], "context": 1024}

    first = batch([10.0, 11.0, 10.0], [9.0, 9.0, 9.0], [11.0, 10.0, 11.0], [30.0, 31.0, 32.0])
    second = batch([11.0, 10.0, 10.0], [9.0, 9.5, 9.0], [10.0, 11.0, 11.0], [29.0, 28.0, 30.0])
    pooled = merge_rounds(first, second)
    assert pooled["decode_ms_per_token"][0]["all"] == [10.0, 11.0, 10.0, 11.0, 10.0, 10.0]
    assert pooled["control_ms_per_token"]["all"] == [11.0, 10.0, 11.0, 10.0, 11.0, 11.0]
    assert pooled["bandwidth"]["rounds_gb_per_s"] == [30.0, 31.0, 32.0, 29.0, 28.0, 30.0]
    floor = judged("K4", pooled)["figures"]["noise_floor"]
    assert floor["rounds"] == 6 and floor["value"] == pytest.approx(10 / 11 - 1)  # 4 of 6 rounds: 10 over 11
    assert floor["low"] == pytest.approx(10 / 11 - 1) and floor["high"] == pytest.approx(11 / 10 - 1)
    assert floor["level"] == pytest.approx(1 - 2 / 64)  # six rounds: [min, max], one look


def test_the_budget_counts_the_batches_not_a_wait_between_them():
    """Issue 48: a run ahead that gives its turn between batches (on_batch blocks while another claim measures)
    spends none of its budget waiting. Batches of 1 s, a 100 s wait after each, a 10 s budget: it goes on to the
    decision at 12 rounds (four 3-round batches), as with no wait at all."""
    first, clear = [8.0, 5.0, 6.5], [6.0, 6.0, 6.0]
    clock = Clock(1.0)

    def waits(figures):
        clock.now += 100.0

    f = until_decided("K4", clock.timed(k4_batches([first] + [clear] * 7)), 10.0, clock, on_batch=waits)
    assert f["batches"] == 4 and clock.now == pytest.approx(404.0)


def test_claims_one_workload_serves_go_on_until_each_decides(monkeypatch):
    """K2 and K4 read one decode pair (claim_spec.sharing): the pair's batches pool until neither says "cannot
    tell". Here the first claim decides at once and the second only at the third batch: three batches."""
    from llmviz.labs import rounds

    def fake_judged(cid, figures):
        decided = cid == "K2" or len(figures["ms"]["all"]) >= 3  # one round a batch
        return {"effects": [{"verdict": "holds" if decided else "cannot_tell", "rounds": 0}]}

    monkeypatch.setattr(rounds, "judged", fake_judged)
    f = until_decided(("K2", "K4"), lambda: {"ms": spread(5.0)}, 1e9)
    assert f["batches"] == 3 and len(f["ms"]["all"]) == 3
    assert until_decided("K2", lambda: {"ms": spread(5.0)}, 1e9)["batches"] == 1  # the first alone: one batch
