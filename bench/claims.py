"""The claims K1-K11 re-measured: the whole run timed, each verdict with its reason. Prints JSON.

    python bench/claims.py [--quick] [--threads N] [--device cpu]

Target: `--quick` measures all eleven claims in under 180 s on 2 CPU cores (wall clock of the whole run,
model loads included). The run is `python -m llmviz claims`'s (llmviz/labs/claims.py measures,
llmviz/analysis/claim_effects.py judges); this adds the clock, the machine and the target.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from common import machine  # noqa: E402

from llmviz import service  # noqa: E402
from llmviz.analysis.claim_effects import reason_text, report  # noqa: E402
from llmviz.analysis.lab import jsonable  # noqa: E402
from llmviz.i18n.translator import Translator  # noqa: E402

TARGET_QUICK_S = 180


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--device", default="auto")
    args = p.parse_args()
    if args.threads:
        service.models.use_cpu_threads(args.threads)
    began = time.perf_counter()
    rep = report(service.measure.claims(None, quick=args.quick, device=args.device))
    wall = time.perf_counter() - began
    t = Translator("en")
    out = {"benchmark": "claims K1-K11", "command": " ".join(["python bench/claims.py", *sys.argv[1:]]),
           "quick": args.quick, "wall_s": round(wall, 1), "machine": machine(args.device),
           "verdicts": {c["id"]: c["verdict"] for c in rep["claims"]},
           "claims": [{**c, "reason": reason_text(t, c)} for c in rep["claims"]]}
    if args.quick:
        out.update(target_s=TARGET_QUICK_S, meets_target=wall <= TARGET_QUICK_S)
    print(json.dumps(jsonable(out), ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
