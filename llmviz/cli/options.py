"""What several commands share: the run flags of generate and trace (prompt, model, sampling, every engine
switch), their EngineConfig, the prompts they name, and the process-wide settings taken before a model loads."""

from __future__ import annotations

import argparse
import io

from llmviz import service
from llmviz.errors import ConfigError, LlmvizError
from llmviz.files import read_regular
from llmviz.trace.config import EngineConfig, SamplingConfig
from llmviz.trace.extensions import Names
from llmviz.trace.switches import SWITCHES

DEFAULT_SAMPLING = SamplingConfig()
MAX_PROMPTS_FILE_BYTES = 8 * 2**20  # read at most this much of --prompts-file (it could be /dev/zero)
SWITCH_HELP = {  # the command line's words for each switch (the pages' are in the message catalogs)
    "dtype": "weights and activations",
    "attn": "attention backend",
    "kv-layout": "KV cache layout (C8, C9)",
    "kv-dtype": "KV storage dtype (auto: the model's)",
    "kv-block-size": "tokens per block of the paged layout",
    "kv-pool-blocks": "blocks in the paged pool (default: enough for every prompt to reach --max-seq-len)",
    "kv-budget-bytes": "the KV cache's bytes at most (C17): past it a cache is refused, a paged pool sized to it",
    "kv-heads": "grouped-query attention: mean-pool the K/V heads down to N at load (lossy; C19)",
    "fused-qkv": "q/k/v (and a gated MLP's gate/up) as one matmul, or split (C10)",
    "sliding-window": "every layer attends to the last W tokens; a contiguous cache becomes a ring buffer (C20)",
    "kv-rollback": "tokens a windowed cache keeps beyond the window, for rollbacks (speculative depth)",
    "sparse-block": "block-sparse attention: positions per block (lossy; a mask, the cache keeps every token; C20)",
    "sparse-local": "block-sparse: the nearest blocks a query sees, its own included",
    "sparse-global": "block-sparse: the leading blocks every query sees",
    "quant": "weight-only quantization of the blocks' projections (lossy; C21)",
    "quant-group": "int4: input columns per scale",
    "compile": "torch.compile the decode step (contiguous cache; the first decode step includes compiling)",
    "padding": "pad side of a batch of prompts",
}


def switch_help(switch) -> str:
    """A switch's help; a table of declarations (layouts, backends, an extension's too) adds each choice's line."""
    lines = [f"{n}: {switch.choices.describe(n).about_in('en').rstrip('.')}" for n in switch.choices
             if switch.choices.describe(n).about_in("en")] if isinstance(switch.choices, Names) else []
    return "; ".join([SWITCH_HELP[switch.name], *lines]).replace("%", "%%")  # argparse formats help with %


def add_run_flags(p: argparse.ArgumentParser) -> None:
    """The flags of a run of the engine on prompts (generate, trace)."""
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
                           help=switch_help(switch))
    p.add_argument("--max-seq-len", type=int, default=None,
                   help="KV cache length per sequence (default: context, <= 2048)")
    add_threads(p)


def add_threads(p: argparse.ArgumentParser) -> None:
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (for the whole process)")


def engine_config(args, capture: str, lens: int, patterns=()) -> EngineConfig:
    """The EngineConfig of add_run_flags' flags, at a capture level with `lens` logit-lens entries per layer."""
    sampling = SamplingConfig(temperature=args.temperature, top_k=args.top_k, top_p=args.top_p,
                              repetition_penalty=args.repetition_penalty)
    switches = {s.field: getattr(args, s.name.replace("-", "_")) for s in SWITCHES.values()}
    return EngineConfig(device=args.device, max_seq_len=args.max_seq_len, **switches,
                        sampling=sampling, seed=args.seed, capture=capture,
                        capture_filter=tuple(patterns), logit_lens_top_k=lens)


def prompts_of(args) -> list[str]:
    """Every --prompt, then each non-blank line of --prompts-file; LlmvizError when there is none."""
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
        service.models.use_cpu_threads(args.threads)
