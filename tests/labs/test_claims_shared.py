"""Claims one workload serves are measured once (labs/claims.run_claims, claim_spec.sharing): K2 and K4
read the same kv-fp16 decode pair, so a claims run measures it once, judges both on its rounds, and says K4 was
measured with K2; asked alone, each is measured by itself."""

from llmviz.analysis import claim_spec
from llmviz.analysis.claim_effects import report
from llmviz.labs import claims
from llmviz.labs.claims import ClaimsPlan, run_claims


def test_sharing_is_read_from_the_declarations():
    """Hand-read from llmviz/analysis/claimdefs: only K2 and K4 name the same lab (decode_pair, LONG, kv-fp16)."""
    assert claim_spec.sharing("K2") == claim_spec.sharing("K4") == ("K2", "K4")
    assert all(claim_spec.sharing(c) == (c,) for c in claim_spec.ids() if c not in ("K2", "K4"))


def test_a_run_measures_a_shared_workload_once(monkeypatch):
    calls = []

    def fake_measure(self, claim_id, judge=()):
        calls.append((claim_id, tuple(judge)))
        return {"error": f"measured for {claim_id}"}  # report() keeps it as the claim's one line

    monkeypatch.setattr(claims.Measurer, "measure", fake_measure)
    run = run_claims(("K2", "K3", "K4"), ClaimsPlan(), load=None)
    assert calls == [("K2", ("K2", "K4")), ("K3", ("K3",))]
    assert run["claims"]["K4"] is run["claims"]["K2"] and run["shared"] == {"K4": "K2"}
    judged = {c["id"]: c for c in report(run)["claims"]}
    assert judged["K4"]["shared_with"] == "K2" and "shared_with" not in judged["K2"]
    assert judged["K4"]["error"] == "measured for K2"
    calls.clear()
    run_claims(("K4",), ClaimsPlan(), load=None)
    assert calls == [("K4", ("K4",))]
