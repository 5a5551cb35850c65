"""`python -m llmviz trace`: record a replayable trace, the prefill plus N decode steps, as one .zip the app's
Trace page opens or as a folder of trace.json + arrays.npz (llmviz/trace/records.py). The module is named for what
it does, to stay apart from the llmviz.trace package."""

from __future__ import annotations

from llmviz import service
from llmviz.cli.options import add_run_flags, engine_config, prompts_of, start
from llmviz.errors import ConfigError, LlmvizError
from llmviz.files import check_output
from llmviz.trace.records import save_zip


def add_parser(sub) -> None:
    p = sub.add_parser("trace", help="record a replayable trace: the prefill plus N decode steps")
    add_run_flags(p)
    p.add_argument("--steps", type=int, default=8, help="decode steps after the prefill")
    p.add_argument("--capture", default="full", choices=("meta", "full"),
                   help="full (default): every tensor, as the app's pages draw them; meta: shapes and norms only")
    p.add_argument("--filter", nargs="*", default=[], help="hook-name glob patterns: record only these hooks")
    p.add_argument("--out", required=True, help="NAME.zip: one file the app's Trace page opens; any other name: "
                   "a folder of trace.json + arrays.npz")


def run(args) -> int:
    if args.steps < 0:
        raise LlmvizError("--steps must be >= 0")
    if not args.out.strip() or "\x00" in args.out:
        raise ConfigError("--out needs a folder name without NUL bytes (it is created if missing)")
    zipped = args.out.lower().endswith(".zip")
    check_output(args.out, "--out", folder=not zipped)  # before the model runs
    prompts = prompts_of(args)
    config = engine_config(args, capture=args.capture, lens=5, patterns=args.filter)
    start(args)
    lm = service.models.load(args.model, config)
    trace = service.runs.run(lm, prompts, config, args.steps + 1)
    if zipped:
        where = save_zip(trace, args.out)
        print(f"wrote {len(trace.steps)} steps ({args.capture} capture) to {where}: open it on the app's Trace page")
    else:
        where = trace.save(args.out)
        print(f"wrote {len(trace.steps)} steps ({args.capture} capture) to the folder {where} (for the app's Trace "
              "page, write a .zip: --out NAME.zip)")
    return 0
