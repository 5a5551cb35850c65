"""Whether the claims' verdicts hold still: `python -m llmviz claims --quick --json` several times,
the last optionally beside a competing busy process on one core. Prints JSON.

    python bench/claims_stability.py [--runs 3] [--busy-last]

Targets: no claim goes from holds to does not hold or back between runs; every timed effect that
decides (holds or does not hold) rests on at least 6 rounds; every claim within 180 s. The busy run may move a
verdict to cannot tell, never across. Each run is a fresh process (model loads included).
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
MIN_ROUNDS, MAX_S = 6, 180.0  # the targets: a decided timed effect's rounds, a claim's seconds


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
            {k: e.get(k) for k in ("name", "verdict", "reason", "measured", "low", "high", "rounds", "level", "looks",
                                   "more_rounds", "predicted")} for e in c["effects"]]} for c in rep["claims"]}}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--busy-last", action="store_true", help="the last run beside a busy process on one core")
    args = p.parse_args()
    runs = [one_run(args.busy_last and i == args.runs - 1) for i in range(args.runs)]
    ids = list(runs[0]["claims"])
    verdicts = {k: [r["claims"][k]["verdict"] for r in runs] for k in ids}
    flips = {k: v for k, v in verdicts.items() if any((a, b) in ACROSS for a in v for b in v)}
    decided = ("holds", "does_not_hold")
    few = [(k, e["name"], e["rounds"]) for r in runs for k, c in r["claims"].items() for e in c["effects"]
           if e["verdict"] in decided and e["rounds"] and e["rounds"] < MIN_ROUNDS]
    slow = [(k, c["seconds"]) for r in runs for k, c in r["claims"].items() if (c["seconds"] or 0) > MAX_S]
    print(json.dumps({"benchmark": "claims stability", "command": " ".join(
        ["python bench/claims_stability.py", *sys.argv[1:]]), "machine": machine("cpu"), "runs": runs,
        "verdicts": verdicts, "flips_across": flips, "decided_on_fewer_than_6_rounds": few,
        "claims_over_180_s": slow,
        "target": "no claim between holds and does not hold across runs; every decided timed effect on at least 6 "
                  "rounds; every claim within 180 s",
        "target_met": not flips and not few and not slow}, indent=1))


if __name__ == "__main__":
    main()
