"""The lesson in a real browser: prints one JSON object. Not part of pytest.

    python bench/lesson.py [--lang zh|en|both] [--reveal K1,K2,...] [--think 20] [--shots DIR] [--width 390]

Headless Chromium opens the lesson in the presenter view at 1280x720 (or, with --width 390, at 390x844 as a
student's phone shows it, not presenting) on a local `streamlit run app.py` (the embedded model) and walks every
step with the keyboard (→ and Space alternately, then ← once and → again). Key-to-drawn is timed in Python around
playwright, from the key press until the step's title is shown and the app's script is idle (polled each animation
frame). Targets: median ≤ 0.5 s over the steps without a measurement, the step's map included; on every step the
live panel's control and chart inside the first 720 px (on a phone, its first chart, metric or control inside the
first 844 px), and after a Reveal its verdict; no layout fault (scripts/lesson_walk.py layout_faults: the step's
title in the top half of the first screen, no second heading in a panel, no cut table, no sideways scroll, Back and
Next in one row, on a phone no chart toolbar); no exception, in each language walked. With --reveal, Reveal is
pressed on those claims' steps --think seconds after the step was drawn (a student predicting; the server measures
the claim from the moment its step opens) and its seconds are reported, click to idle, with what it showed
(reveal_state: the run's final verdict, its verdict on the rounds so far, or still measuring with no figures).
Target with --think: ≤ 5 s for every claim, with figures. Without it: each claim's quick budget, ≤ 10 s on the
embedded model, ≤ 60 s for the claims measured on GPT-2's shape (K2, K3, K4, K6, K10, K11:
labs/claims.ClaimsPlan.budget_s).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "scripts"), str(ROOT / "bench")]

from browser_kit import AppServer, chromium  # noqa: E402
from common import machine  # noqa: E402
from lesson_walk import walk  # noqa: E402

from llmviz.labs.claims import ClaimsPlan  # noqa: E402
from llmviz.ui.lesson.lesson_steps import STEPS  # noqa: E402
from llmviz.ui.settings import UI_THREADS  # noqa: E402

TARGET_STEP_S = 0.5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lang", default="both", choices=("zh", "en", "both"))
    parser.add_argument("--reveal", default="", help="claims to reveal, comma-separated (default none)")
    parser.add_argument("--think", type=float, default=0.0,
                        help="seconds between a claim's step drawn and its Reveal pressed (the target's: 20)")
    parser.add_argument("--shots", type=Path, default=None, help="a folder for one screenshot per chapter")
    parser.add_argument("--width", type=int, default=1280,
                        help="the screen's width: 1280 (a projector, presenting, 720 px tall) or a phone's 390 (844 "
                             "px tall, not presenting: a student)")
    args = parser.parse_args()
    claims = tuple(c for c in args.reveal.split(",") if c)
    known = {s.claim for s in STEPS if s.claim}
    if set(claims) - known:
        parser.error(f"no lesson step reveals {sorted(set(claims) - known)}; those that do: {sorted(known)}")
    began = time.perf_counter()
    with AppServer(timeout=120) as server, chromium() as browser:
        phone = args.width < 640
        walks = [walk(browser.new_page(), server.url(""), lang=lang, shots=args.shots, reveal=claims,
                      think_s=args.think, width=args.width, height=844 if phone else 720, present=not phone)
                 for lang in (("zh", "en") if args.lang == "both" else (args.lang,))]
    print(json.dumps({
        "benchmark": "lesson", "machine": machine("cpu"),
        "server_torch_threads": UI_THREADS,  # the app's measurements run on half the cores (ui/settings.py)
        "timed": "key press to the step's title drawn with the script idle (Python around playwright, polled per "
                 "animation frame); the server and the browser on the same machine",
        "target_step_s": TARGET_STEP_S, "think_s": args.think,
        "walks": [summary(result, args.think) for result in walks],
        "targets_met": all(w["step_target_met"] and not w["outside_first_screen"] and not w["exceptions"]
                           and not w["layout_faults"]
                           and all(w["reveal_target_met"].values()) for w in (summary(r, args.think) for r in walks)),
        "total_s": round(time.perf_counter() - began, 1),
    }, indent=2, ensure_ascii=False))


TARGET_REVEAL_S = 5.0  # the wait after a prediction, the claim measured since its step opened


def summary(result: dict, think_s: float = 0.0) -> dict:
    """One language's walk: its times, its Reveals against their targets, what fell outside the first screen."""
    times = [s["key_to_drawn_s"] for s in result["steps"] if s["key_to_drawn_s"] is not None]
    # with a student's thought first: a few seconds; without: the claim's budget (10 s embedded, 60 s GPT-2 shape)
    budgets = {c: TARGET_REVEAL_S if think_s else ClaimsPlan().budget_s(c) for c in result["reveal_s"]}
    width, height = result["viewport"]
    # the first screen: on a projector the panel's control and chart whole; on a phone, its first chart, metric or
    # control begun (layout_faults says where one is not)
    outside = [s["position"] for s in result["steps"] if s["position"] != "end" and not s["panel_in_first_screen"]
               and width >= 640]
    outside += [f"verdict {c}" for c, bottom in result["verdict_bottom"].items() if bottom is None or bottom > height]
    return {"lang": result["lang"], "viewport": result["viewport"], "steps": len(result["steps"]),
            "key_to_drawn_s": [round(t, 3) for t in times], "median_key_to_drawn_s": result["median_key_to_drawn_s"],
            "max_key_to_drawn_s": result["max_key_to_drawn_s"],
            "step_target_met": result["median_key_to_drawn_s"] <= TARGET_STEP_S, "back_s": result["back_s"],
            "reveal_s": result["reveal_s"], "reveal_budget_s": budgets,
            # a Reveal meets it with figures: the final verdict, or one on the rounds so far
            "reveal_state": result["reveal_state"],
            "reveal_target_met": {c: s <= budgets[c] and result["reveal_state"][c] != "measuring"
                                  for c, s in result["reveal_s"].items()},
            "verdict_bottom_px": result["verdict_bottom"], "outside_first_screen": outside,
            "labels_cut": {s["position"]: s["cut"] for s in result["steps"] if s.get("cut")},
            "layout_faults": result["layout_faults"],
            "exceptions": sum(len(s["exceptions"]) for s in result["steps"])}

if __name__ == "__main__":
    main()
