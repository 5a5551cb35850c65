"""Command line: `python -m llmviz generate|trace ...` (see README). Errors: one line on stderr, exit 2."""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import sys

from llmviz import service
from llmviz.errors import ConfigError, LlmvizError
from llmviz.files import check_output, read_regular
from llmviz.trace.config import EngineConfig, SamplingConfig
from llmviz.trace.records import save_zip
from llmviz.trace.switches import SWITCHES

DEFAULT_SAMPLING = SamplingConfig()
MAX_PROMPTS_FILE_BYTES = 8 * 2**20  # read at most this much of --prompts-file (it could be /dev/zero)
RAISE_ENV = "LLMVIZ_RAISE_UNEXPECTED"  # set: an unexpected exception is raised (traceback), as in the app
SWITCH_HELP = {  # the command line's words for each switch (the pages' are in the message catalogs)
    "dtype": "weights and activations",
    "attn": "attention backend",
    "kv-layout": "KV cache layout (C8, C9)",
    "kv-dtype": "KV storage dtype (auto: the model's)",
    "kv-block-size": "tokens per block of the paged layout",
    "kv-pool-blocks": "blocks in the paged pool (default: enough for every prompt to reach --max-seq-len)",
    "kv-heads": "grouped-query attention: mean-pool the K/V heads down to N at load (lossy; C19)",
    "fused-qkv": "q/k/v (and a gated MLP's gate/up) as one matmul, or split (C10)",
    "sliding-window": "every layer attends to the last W tokens; a contiguous cache becomes a ring buffer (C20)",
    "kv-rollback": "tokens a windowed cache keeps beyond the window, for rollbacks (speculative depth)",
    "quant": "weight-only quantization of the blocks' projections (lossy; C21)",
    "quant-group": "int4: input columns per scale",
    "compile": "torch.compile the decode step (contiguous cache; the first decode step includes compiling)",
    "padding": "pad side of a batch of prompts",
}


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--prompt", action="append", default=[],
                   help="text to run the model on; repeat it for a batch (one row per prompt)")
    p.add_argument("--prompts-file", default=None, help="a UTF-8 file with one prompt per line (a batch)")
    p.add_argument("--model", default=service.EMBEDDED_MODEL,
                   help="hub id or local folder (default: the embedded llmviz-tiny)")
    p.add_argument("--temperature", type=float, default=DEFAULT_SAMPLING.temperature, help="0 = greedy")
    p.add_argument("--top-k", type=int, default=DEFAULT_SAMPLING.top_k, help="0 = off")
    p.add_argument("--top-p", type=float, default=DEFAULT_SAMPLING.top_p, help="1 = off")
    p.add_argument("--repetition-penalty", type=float, default=DEFAULT_SAMPLING.repetition_penalty)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="auto", help="auto|cpu|cuda|cuda:N|mps")
    for switch in SWITCHES.values():  # every engine switch, from the one table (llmviz/trace/switches.py)
        flag, default = f"--{switch.name}", EngineConfig.__dataclass_fields__[switch.field].default
        if switch.kind is bool:
            p.add_argument(flag, action="store_true", help=SWITCH_HELP[switch.name])
        else:
            p.add_argument(flag, type=switch.kind, default=default, choices=switch.choices or None,
                           help=SWITCH_HELP[switch.name])
    p.add_argument("--max-seq-len", type=int, default=None,
                   help="KV cache length per sequence (default: context, <= 2048)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (for the whole process)")


class Parser(argparse.ArgumentParser):
    """argparse whose usage errors are one line on stderr and exit 2, like every other error of the CLI
    (its subcommands' parsers are of this class too)."""

    def error(self, message: str):
        self.exit(2, f"error: {self.prog}: {one_line(message)} (see {self.prog} --help)\n")


def parser() -> argparse.ArgumentParser:
    top = Parser(prog="python -m llmviz", description="Run a language model step by step "
                 "on llmviz's own engine and report what happened.")
    sub = top.add_subparsers(dest="command")
    gen = sub.add_parser("generate", help="generate text; timings taken with capture off")
    _common(gen)
    gen.add_argument("--max-new-tokens", type=int, default=32,
                     help="tokens to generate: the prefill's token plus N-1 decode steps")
    gen.add_argument("--json", action="store_true", help="print one JSON object")
    tr = sub.add_parser("trace", help="record a replayable trace: the prefill plus N decode steps")
    _common(tr)
    tr.add_argument("--steps", type=int, default=8, help="decode steps after the prefill")
    tr.add_argument("--capture", default="full", choices=("meta", "full"),
                    help="full (default): every tensor, as the app's pages draw them; meta: shapes and norms only")
    tr.add_argument("--filter", nargs="*", default=[], help="hook-name glob patterns: record only these hooks")
    tr.add_argument("--out", required=True, help="NAME.zip: one file the app's Trace page opens; any other name: "
                    "a folder of trace.json + arrays.npz")
    _compare_parser(sub)
    from llmviz.cli.serve import add_parser as serve_parser
    from llmviz.cli.serve import add_speculative_parser

    serve_parser(sub)
    add_speculative_parser(sub)
    from llmviz.cli.claims import add_parser as claims_parser

    claims_parser(sub)
    from llmviz.cli.app import add_parser as app_parser

    app_parser(sub)
    return top


def _compare_parser(sub) -> None:
    from llmviz.labs.presets import presets

    names = list(presets({"num_heads": 8, "num_kv_heads": 8, "max_position_embeddings": 512}))
    cmp = sub.add_parser("compare", help="A/B: two settings on one prompt, timed, measured and diffed")
    cmp.add_argument("--prompt", required=True, help="text to run both settings on")
    cmp.add_argument("--model", default=service.EMBEDDED_MODEL,
                     help="hub id, local folder, the embedded llmviz-tiny or the built-in gpt2-124m-random")
    cmp.add_argument("--a", default="", help='setting A as switches: "kv-dtype=fp16,attn=sdpa" (empty: defaults)')
    cmp.add_argument("--b", default="", help="setting B, the same way")
    cmp.add_argument("--preset", default=None, choices=names, help="A and B of a preset (--a/--b then add to it)")
    cmp.add_argument("--steps", type=int, default=16, help="decode steps after the prefill")
    cmp.add_argument("--repeats", type=int, default=3, help="timed rounds of A and B, interleaved")
    cmp.add_argument("--warmup", type=int, default=1, help="untimed rounds first")
    cmp.add_argument("--temperature", type=float, default=0.0, help="0 = greedy")
    cmp.add_argument("--top-k", type=int, default=DEFAULT_SAMPLING.top_k)
    cmp.add_argument("--top-p", type=float, default=DEFAULT_SAMPLING.top_p)
    cmp.add_argument("--seed", type=int, default=0)
    cmp.add_argument("--device", default="auto", help="auto|cpu|cuda|cuda:N|mps")
    cmp.add_argument("--max-seq-len", type=int, default=None, help="KV cache length (default: context, <= 2048)")
    cmp.add_argument("--perplexity", action="store_true", help="also held-out perplexity of each side")
    cmp.add_argument("--layer", type=int, default=0, help="the attention map's layer")
    cmp.add_argument("--head", type=int, default=0, help="the attention map's head")
    cmp.add_argument("--threads", type=int, default=None, help="torch CPU threads (for the whole process)")
    cmp.add_argument("--json", action="store_true", help="print one JSON object")


def engine_config(args, capture: str, lens: int, patterns=()) -> EngineConfig:
    sampling = SamplingConfig(temperature=args.temperature, top_k=args.top_k, top_p=args.top_p,
                              repetition_penalty=args.repetition_penalty)
    switches = {s.field: getattr(args, s.name.replace("-", "_")) for s in SWITCHES.values()}
    return EngineConfig(device=args.device, max_seq_len=args.max_seq_len, **switches,
                        sampling=sampling, seed=args.seed, capture=capture,
                        capture_filter=tuple(patterns), logit_lens_top_k=lens)


def prompts_of(args) -> list[str]:
    prompts = list(args.prompt)
    if args.prompts_file:
        # a regular file only: a FIFO blocked the read forever; the read is bounded (the size may change)
        data = read_regular(args.prompts_file, MAX_PROMPTS_FILE_BYTES, "--prompts-file")
        if len(data) > MAX_PROMPTS_FILE_BYTES:
            raise ConfigError(f"{args.prompts_file} holds more than {MAX_PROMPTS_FILE_BYTES:,} bytes: a prompts file "
                              "is one prompt per line")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise LlmvizError(f"{args.prompts_file} is not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
        prompts += [line.rstrip("\n") for line in io.StringIO(text, newline=None) if line.strip()]
    if not prompts:
        raise LlmvizError("give a prompt: --prompt TEXT (repeat it for a batch) or --prompts-file FILE")
    return prompts


def start(args) -> None:
    """Process-wide settings, once, before any model loads."""
    if args.threads is not None:
        service.use_cpu_threads(args.threads)


def generate(args) -> int:
    if args.max_new_tokens < 1:
        raise LlmvizError("--max-new-tokens must be at least 1")
    prompts = prompts_of(args)
    config = engine_config(args, capture="off", lens=0)
    start(args)
    lm = service.load(args.model, config)
    trace = service.run(lm, prompts, config, args.max_new_tokens)
    c, last = lm.cfg, trace.steps[-1]
    decode_ms = [s.timings["total_ms"] for s in trace.steps[1:]]
    first_compiled_ms = None
    if args.compile and decode_ms:  # the first decode step compiles: report it apart from the steady state
        first_compiled_ms, decode_ms = decode_ms[0], decode_ms[1:]
    rows = [{"prompt": p, "prompt_ids": trace.row_prompt_ids(i), "output_ids": trace.row_output_ids(i),
             "text": service.generated_text(lm, trace, i),
             "finished": (last.row_finished[i] if last.row_finished else last.finished) or "max_new_tokens"}
            for i, p in enumerate(prompts)]
    result = {
        "model": args.model, "device": str(lm.device), "dtype": args.dtype, "attn": args.attn,
        "kv_layout": args.kv_layout, "kv_dtype": last.kv["kv_dtype"], "threads": last.timings["threads"],
        "capture": "off",
        "config": {"num_layers": c.num_layers, "num_heads": c.num_heads, "num_kv_heads": c.num_kv_heads,
                   "head_dim": c.head_dim, "hidden_size": c.hidden_size, "vocab_size": c.vocab_size},
        **{k: rows[0][k] for k in ("prompt_ids", "output_ids", "text", "finished")},  # row 0, as before batches
        "rows": rows,
        "prefill_ms": trace.steps[0].timings["total_ms"],
        "decode_ms_per_token": statistics.fmean(decode_ms) if decode_ms else None,
        "compile": args.compile, "first_compiled_step_ms": first_compiled_ms,
        "kv_cache_bytes": last.kv["bytes_used"], "kv_cache_bytes_allocated": last.kv["bytes_allocated"],
        "kv_wasted_slots": last.kv["wasted_slots"],
    }
    notes = sorted({n for n in (service.language_note(lm, p) for p in prompts) if n})
    if notes:
        result["note"] = " ".join(notes)
    if args.json:
        print(json.dumps(result, ensure_ascii=False))
    else:
        for note in notes:
            print(f"note: {note}", file=sys.stderr)
        for row in rows:
            print(row["prompt"] + row["text"])
        per_token = "n/a" if result["decode_ms_per_token"] is None else f"{result['decode_ms_per_token']:.2f} ms"
        print(f"\n[{len(rows)} x {len(trace.steps)} steps on {result['device']} {args.dtype}, {args.attn}: prefill "
              f"{result['prefill_ms']:.2f} ms, decode {per_token}/step; {args.kv_layout} KV cache "
              f"{result['kv_cache_bytes']:,} B used of {result['kv_cache_bytes_allocated']:,} B]",
              file=sys.stderr)
    return 0


def trace_cmd(args) -> int:
    if args.steps < 0:
        raise LlmvizError("--steps must be >= 0")
    if not args.out.strip() or "\x00" in args.out:
        raise ConfigError("--out needs a folder name without NUL bytes (it is created if missing)")
    check_output(args.out, "--out", folder=not args.out.lower().endswith(".zip"))  # before the model runs
    prompts = prompts_of(args)
    config = engine_config(args, capture=args.capture, lens=5, patterns=args.filter)
    start(args)
    lm = service.load(args.model, config)
    trace = service.run(lm, prompts, config, args.steps + 1)
    if args.out.lower().endswith(".zip"):
        where = save_zip(trace, args.out)
        print(f"wrote {len(trace.steps)} steps ({args.capture} capture) to {where}: open it on the app's Trace page")
    else:
        where = trace.save(args.out)
        print(f"wrote {len(trace.steps)} steps ({args.capture} capture) to the folder {where} (for the app's Trace "
              "page, write a .zip: --out NAME.zip)")
    return 0


def compare_cmd(args) -> int:
    from llmviz.cli.compare import run_compare

    start(args)
    return run_compare(args)


def serve_cmd(args) -> int:
    from llmviz.cli.serve import run

    start(args)
    return run(args)


def speculative_cmd(args) -> int:
    from llmviz.cli.serve import speculative

    start(args)
    return speculative(args)


def claims_cmd(args) -> int:
    from llmviz.cli.claims import run

    start(args)
    return run(args)


COMMANDS = {"generate": generate, "trace": trace_cmd, "compare": compare_cmd, "serve-sim": serve_cmd,
            "speculative": speculative_cmd, "claims": claims_cmd}


def one_line(text: str) -> str:
    """A message as one line (a library's message may hold newlines)."""
    return " ".join(str(text).split())


def fail(message: str) -> int:
    print(f"error: {one_line(message)}", file=sys.stderr)
    return 2


def main(argv=None) -> int:
    """Run one command; every error is one line on stderr starting `error:` and exit status 2."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["app"]:  # everything after it is streamlit's (llmviz/cli/app.py)
        from llmviz.cli.app import run_app

        try:
            return run_app(argv[1:])
        except (LlmvizError, OSError) as exc:
            return fail(str(exc))
    try:
        args = parser().parse_args(argv)
    except SystemExit as exc:  # --help (0), or a usage error whose one line Parser.error printed (2)
        return exc.code if isinstance(exc.code, int) else 2
    if args.command is None:
        parser().print_help()
        return 0
    try:
        return COMMANDS[args.command](args)
    except LlmvizError as exc:
        return fail(str(exc) or type(exc).__name__)
    except OSError as exc:  # e.g. --out under a file, a full disk
        return fail(str(exc))
    except MemoryError as exc:
        return fail(f"out of memory ({exc}); try a shorter --max-seq-len or --dtype bf16")
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a bug, not a bad input: still one line (LLMVIZ_RAISE_UNEXPECTED=1: the traceback)
        if os.environ.get(RAISE_ENV):
            raise
        return fail(f"internal error ({type(exc).__name__}: {exc}); please report it with the command that caused "
                    f"it (set {RAISE_ENV}=1 for the traceback)")
