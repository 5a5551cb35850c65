"""`python -m llmviz claims`: the article's claims K1-K11 re-measured on this machine, each beside the article's
figure with a verdict (llmviz/labs/claims.py measures, llmviz/analysis/claim_effects.py judges)."""

from __future__ import annotations

import json
import sys

from llmviz import service
from llmviz.analysis.claim_effects import reason_text, report
from llmviz.analysis.lab import jsonable
from llmviz.cli.options import add_threads, start
from llmviz.errors import ConfigError, LlmvizError
from llmviz.i18n.translator import Translator


def add_parser(sub) -> None:
    p = sub.add_parser("claims", help="the article's claims K1-K11 measured here, each with a verdict")
    p.add_argument("--quick", action="store_true",
                   help="the embedded model, batches of 3 rounds (6 for the decode pairs), short sweeps (all "
                        "eleven in a few minutes on 2 CPU cores)")
    p.add_argument("--only", default=None, help='some claims: "K1,K4" (default: all eleven)')
    p.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N or mps")
    p.add_argument("--patience", type=float, default=1.0,
                   help="times each claim's time budget (10 s, 60 s on the GPT-2 shape) its rounds may take before "
                        "the verdict must decide with what it has: 1 to 6 (default 1)")
    add_threads(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")


def run(args) -> int:
    def progress(fraction: float, claim: str, values: dict) -> None:
        if claim != "done" and not values and sys.stderr.isatty():  # a claim begins (on a terminal only: an
            # error stays the one line on stderr that scripts read)
            print(f"[{fraction:4.0%}] {claim}", file=sys.stderr, flush=True)

    start(args)
    if args.only is not None and not args.only.replace(",", "").strip():  # --only "" or ",,,": no claim named
        ids = ", ".join(service.measure.claim_ids())
        raise ConfigError(f"--only {args.only!r} names no claim; the claims are {ids}")
    raw = service.measure.claims(args.only, quick=args.quick, device=args.device, progress=progress,
                                 patience=args.patience)
    errors = [c.get("error") for c in raw["claims"].values() if isinstance(c, dict)]
    if errors and all(errors):  # not one claim could be measured: the first reason, as every CLI error
        raise LlmvizError(errors[0])
    rep = report(raw)
    t = Translator("en")
    for c in rep["claims"]:
        c["reason"] = reason_text(t, c)
    if args.json:
        print(json.dumps(jsonable(rep), ensure_ascii=False))
        return 0
    for c in rep["claims"]:
        print(f"{c['id']} [{t('claims.verdict.' + c['verdict'])}] article: {c['article']}")
        print(f"    {c['reason']}")
    mode = "quick" if rep["quick"] else "full"
    print(f"{len(rep['claims'])} claims, {rep['seconds']:.0f} s ({mode}, {rep['threads']} threads)", file=sys.stderr)
    return 0
