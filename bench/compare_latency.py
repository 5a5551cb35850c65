"""Compare page latency: seconds from pressing Compare to both columns shown, in a real browser.

    python bench/compare_latency.py [--steps 16] [--models llmviz-tiny,gpt2-124m-random]

Starts the app (offline), opens the Compare page with the FP16 preset (A: dtype=fp32, B: dtype=fp16) and 16
decode steps in headless Chromium, waits until the page is idle (the prediction drawn, the fp32 model
loaded), then presses Compare and times until both columns' metrics are on screen with the script idle.
That includes loading B's fp16 model, the bandwidth probe, warm-up and 3 timed rounds of A and B, the
untimed memory, attention and drift runs, and drawing. The app runs torch on half the cores (UI_THREADS).
Targets: <= 10 s on the embedded model, <= 60 s on the GPT-2-124M shape, on 2 CPU cores. Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "bench"))

from browser_kit import AppServer, chromium, exceptions, wait_idle, wait_metric_count  # noqa: E402
from common import cpu_name  # noqa: E402

TARGETS = {"llmviz-tiny": 10.0, "gpt2-124m-random": 60.0}


def press_and_time(server, browser, model: str, steps: int) -> dict:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(server.url("compare", prompt="The list of", cmp_model="" if model == "llmviz-tiny" else model,
                         cmp_a="dtype=fp32", cmp_b="dtype=fp16", cmp_steps=steps))
    wait_idle(page, timeout_s=180)
    began = time.perf_counter()
    page.get_by_role("button", name="Compare", exact=True).click()
    values = wait_metric_count(page, "Tokens/s", 2, timeout_s=300)
    seconds = time.perf_counter() - began
    return {"model": model, "seconds": round(seconds, 2), "target_s": TARGETS.get(model),
            "tokens_per_s_shown": values, "exceptions": exceptions(page)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=16)
    p.add_argument("--models", default="llmviz-tiny,gpt2-124m-random")
    args = p.parse_args()
    out = {"bench": "compare_latency", "cpu": cpu_name(), "cores": os.cpu_count(), "steps": args.steps,
           "preset": "fp16 (A dtype=fp32, B dtype=fp16)", "runs": []}
    with AppServer() as server, chromium() as browser:
        for model in args.models.split(","):
            out["runs"].append(press_and_time(server, browser, model, args.steps))
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
