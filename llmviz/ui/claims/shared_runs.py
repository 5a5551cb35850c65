"""One run of a claim's workload, shown on every surface: the lesson's Reveal, the Claims page
and the full page whose sweep is the claim's own workload (the KV layouts page's for K3, the Batch page's for K5,
the Compare page's long-context pair for K4, K10, K11) share the server's newest, most precise run of it, and each
says which run it shows: where it was measured, when, on how many rounds.

The rule is one (ui/public.finer, beside the store): a run older than FRESH_S seconds gives way to any newer one;
between fresh ones the one judged on more rounds wins, and at equal rounds the newer. A page's run is offered to
the server's store (ui/server.latest_claims, the one the runs ahead and the Reveals fill) and kept where the rule
says so; the lesson, drawing a revealed claim, takes the server's run instead when it is finer, and says so.
"""

from __future__ import annotations

import time
from datetime import datetime

import streamlit as st

from llmviz.analysis.claim_effects import rounds_judged
from llmviz.ui import server
from llmviz.ui.chrome import literal
from llmviz.ui.public import finer

SOURCES = ("lesson", "claims_page", "layouts", "batch", "compare")  # where a shared run was measured


def entry(claim: dict, when: str, source: str, at: float | None = None) -> dict:
    """A judged claim as the server keeps it, with where and when it was measured."""
    if source not in SOURCES:
        raise ValueError(f"a shared run comes from one of {SOURCES}, got {source!r}")
    return {"claim": claim, "when": when, "at": time.time() if at is None else at, "source": source}


def now() -> str:
    return datetime.now().strftime("%Y-%m-%d %H:%M:%S")


def offer(claim: dict, when: str, source: str, at: float | None = None) -> bool:
    """A run of the claim's workload, judged: kept on the server when it is the finer (whether it was). A run with
    an error, or not judged on its rounds yet, is not offered."""
    if claim.get("error") or claim.get("verdict") is None:
        return False
    return server.latest_claims().keep(claim["id"], entry(claim, when, source, at))


def page_run(result: dict, source: str, judged: dict[str, dict]) -> dict:
    """A full page's new sweep, stamped with when it was measured ("when", "at"); each claim whose workload it ran,
    judged on it ({claim id: judged claim}), offered to the server."""
    result = result | {"when": now(), "at": time.time()}
    for claim in judged.values():
        offer(claim, result["when"], source, result["at"])
    return result


def page_caption(t, judged: dict, result: dict, source: str) -> None:
    """Under a full page's verdict on its own run: which run it is, and the server's finer one if there is one."""
    if "at" not in result:  # a sweep kept from before runs were stamped
        return
    st.caption(which_run(t, {"claim": judged, "when": result["when"], "source": source}))
    finer_note(t, judged["id"], {"claim": judged, "at": result["at"]})


def finer_on_server(claim_id: str, shown: dict) -> dict | None:
    """The server's run of the claim when it is finer than the one `shown` (an entry), else None."""
    held = server.latest_claims().get(claim_id)
    if held is None or held.get("at") == shown.get("at") or not finer(held, shown):
        return None
    return held


def which_run(t, e: dict) -> str:
    """"This run: the KV layouts page, at 08:31:02, on 18 rounds." (counted claims: no rounds)."""
    rounds = rounds_judged(e["claim"])
    source = t(f"runs.source.{e.get('source', 'lesson')}")
    return t("runs.this" if rounds else "runs.this_counted", source=source, when=literal(str(e["when"])),
             rounds=rounds)


def finer_note(t, claim_id: str, shown: dict) -> None:
    """Under a full page's verdict: the server's finer run of the same workload, when there is one, with its
    verdict (the page shows its own run's figures above)."""
    held = finer_on_server(claim_id, shown)
    if held is not None:
        key = "runs.finer" if rounds_judged(held["claim"]) > rounds_judged(shown["claim"]) else "runs.newer"
        st.caption(t(key, run=which_run(t, held), verdict=t("claims.verdict." + held["claim"]["verdict"])))
