"""Whether the claims' verdicts hold still (issue 36): `python -m llmviz claims --quick --json` three times, the
third beside a competing busy process on one core. Prints JSON.

    python bench/claims_stability.py [--runs 3] [--busy-last]

Target: no claim goes from holds to does not hold or back between runs; every timed effect carries its interval;
the busy run may move a verdict to cannot tell, never across. Each run is a fresh process (model loads included).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from common import machine  # noqa: E402

ACROSS = {("holds", "does_not_hold"), ("does_not_hold", "holds")}


@contextlib.contextmanager
def busy_core(on: bool):
    """A process spinning on core 0 while the block runs (nothing when `on` is false)."""
    if not on:
        yield None
        return
    spin = subprocess.Popen([sys.executable, "-c", "import os; os.sched_setaffinity(0, {0})\nwhile True: pass"])
    try:
        yield spin.pid
    finally:
        spin.kill()
        spin.wait()


def one_run(busy: bool) -> dict:
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    with busy_core(busy):
        began = time.perf_counter()
        out = subprocess.run([sys.executable, "-m", "llmviz", "claims", "--quick", "--json"], capture_output=True,
                             text=True, check=True, cwd=ROOT, env=env, timeout=1800)
        wall = time.perf_counter() - began
    rep = json.loads(out.stdout)
    return {"busy": busy, "wall_s": round(wall, 1), "claims": {
        c["id"]: {"verdict": c["verdict"], "seconds": c.get("seconds"), "effects": [
            {k: e.get(k) for k in ("name", "verdict", "measured", "low", "high", "rounds", "more_rounds",
                                   "predicted")} for e in c["effects"]]} for c in rep["claims"]}}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--busy-last", action="store_true", help="the last run beside a busy process on one core")
    args = p.parse_args()
    runs = [one_run(args.busy_last and i == args.runs - 1) for i in range(args.runs)]
    ids = list(runs[0]["claims"])
    verdicts = {k: [r["claims"][k]["verdict"] for r in runs] for k in ids}
    flips = {k: v for k, v in verdicts.items() if any((a, b) in ACROSS for a in v for b in v)}
    unbounded = [(k, e["name"]) for r in runs for k, c in r["claims"].items() for e in c["effects"]
                 if e["measured"] is not None and (e["low"] is None or e["high"] is None)]
    print(json.dumps({"benchmark": "claims stability (issue 36)", "command": " ".join(
        ["python bench/claims_stability.py", *sys.argv[1:]]), "machine": machine("cpu"), "runs": runs,
        "verdicts": verdicts, "flips_across": flips, "effects_without_interval": unbounded,
        "target": "no claim between holds and does not hold across runs; every timed effect with its interval",
        "target_met": not flips and not unbounded}, indent=1))


if __name__ == "__main__":
    main()
