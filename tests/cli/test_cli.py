"""The CLI: JSON fields with real values, a replayable trace, one-line errors with a non-zero exit."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from llmviz.trace.records import load_trace, trace_from_zip

ROOT = Path(__file__).resolve().parents[2]


def _has_cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def cli(*args, timeout=120):
    """`python -m llmviz ARGS` in its own process: what a user sees, start-up and all (a few seconds each)."""
    return subprocess.run([sys.executable, "-m", "llmviz", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=timeout,
                          env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "LLMVIZ_AUTO_DEVICE": "cpu"})


@pytest.fixture
def run(capsys):
    """main(ARGS) in this process, as subprocess.run's result: the same dispatch, errors and output as `cli` without
    a new interpreter importing torch and transformers (tests/conftest.py sets the same environment). Torch's
    thread count, which --threads sets for the whole process, is put back after."""
    import torch

    from llmviz.cli.main import main

    threads = torch.get_num_threads()

    def call(*args):
        capsys.readouterr()
        try:
            code = main([str(a) for a in args])
        finally:
            torch.set_num_threads(threads)
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(args, code, out, err)

    return call


def test_generate_json(model_dirs):
    out = cli("generate", "--model", str(model_dirs["llama_gqa_rope3"]), "--prompt", "The quick brown fox",
              "--max-new-tokens", "6", "--temperature", "0", "--json", "--threads", "1")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["config"] == {"num_layers": 2, "num_heads": 4, "num_kv_heads": 2, "head_dim": 16, "hidden_size": 64,
                             "vocab_size": 320}
    assert len(doc["output_ids"]) == 6 and doc["device"] == "cpu" and doc["capture"] == "off"
    n = len(doc["prompt_ids"])
    # the last sampled token is not in the cache yet: prompt + 5 decoded inputs
    assert doc["kv_cache_bytes"] == (n + 5) * 2 * 16 * 2 * 4 * 2
    assert doc["kv_cache_bytes_allocated"] == 1024 * 2 * 16 * 2 * 4 * 2  # the 1024-token context, fp32
    assert doc["prefill_ms"] > 0 and doc["decode_ms_per_token"] > 0


def test_trace_command(model_dirs, tmp_path, run):
    out = run("trace", "--model", str(model_dirs["gpt2"]), "--prompt", "Return the list", "--steps", "3",
              "--capture", "full", "--filter", "layers.0.*", "--out", str(tmp_path / "t"))
    assert out.returncode == 0, out.stderr
    trace = load_trace(tmp_path / "t")
    assert len(trace.steps) == 4 and trace.steps[3].phase == "decode"
    assert trace.steps[3].hook("layers.0.probs").array.shape == (1, 4, 1, len(trace.prompt_ids) + 3)


def test_trace_command_writes_the_zip_the_trace_page_opens(model_dirs, tmp_path, run):
    """Issue 10: --out NAME.zip gives one file that trace_from_zip (the Trace page's reader) opens, with every
    tensor by default (capture full)."""
    out = run("trace", "--model", str(model_dirs["gpt2"]), "--prompt", "Return the list", "--steps", "2",
              "--out", str(tmp_path / "runs" / "demo.zip"))
    assert out.returncode == 0, out.stderr
    assert "Trace page" in out.stdout and sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["demo.zip"]
    trace = trace_from_zip((tmp_path / "runs" / "demo.zip").read_bytes())
    assert len(trace.steps) == 3 and trace.engine_config["capture"] == "full"
    assert trace.steps[2].hook("layers.1.probs").array.shape == (1, 4, 1, len(trace.prompt_ids) + 2)


@pytest.mark.slow  # several CLI processes (~4 s each); the engine's own tests cover batching and sharing
def test_generate_a_batch_of_prompts(model_dirs, tmp_path):
    """Repeated --prompt and --prompts-file make one padded batch; --json gives every row (C13)."""
    (tmp_path / "more.txt").write_text("This module provides\n\nReturn\n", encoding="utf-8")
    out = cli("generate", "--model", str(model_dirs["qwen2"]), "--prompt", "The quick brown fox jumps",
              "--prompts-file", str(tmp_path / "more.txt"), "--max-new-tokens", "4", "--temperature", "0",
              "--kv-layout", "paged", "--kv-block-size", "4", "--max-seq-len", "32", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert [r["prompt"] for r in doc["rows"]] == ["The quick brown fox jumps", "This module provides", "Return"]
    assert doc["output_ids"] == doc["rows"][0]["output_ids"] and doc["kv_layout"] == "paged"
    for row in doc["rows"]:
        single = json.loads(cli("generate", "--model", str(model_dirs["qwen2"]), "--prompt", row["prompt"],
                                "--max-new-tokens", "4", "--temperature", "0", "--json").stdout)
        assert row["prompt_ids"] == single["prompt_ids"] and len(row["output_ids"]) == 4
    lengths = [len(r["prompt_ids"]) + 3 for r in doc["rows"]]
    per_token = 2 * 2 * 16 * 2 * 4  # layers x (K, V) x kv_heads x head_dim x fp32 bytes
    assert doc["kv_cache_bytes"] == sum(lengths) * per_token
    assert doc["kv_wasted_slots"] == sum(-(-n // 4) * 4 - n for n in lengths)  # the unused tails of last blocks


@pytest.mark.parametrize("args,needle", [
    (["generate", "--prompt", "", "--model", "{gpt2}"], "empty"),
    (["generate", "--prompt", "hi", "--model", "./nope"], "neither an existing folder"),
    (["generate", "--prompt", "hi", "--model", "org/uncached-model"], "not in the local Hugging Face cache"),
    pytest.param(["generate", "--prompt", "hi", "--model", "{gpt2}", "--device", "cuda"], "no CUDA GPU",
                 marks=pytest.mark.skipif(_has_cuda(), reason="this machine has a CUDA GPU")),
    (["generate", "--model", "{gpt2}"], "give a prompt"),
    (["generate", "--prompt", "hi", "--model", "{gpt2}", "--kv-block-size", "0"], "kv_block_size"),
])
def test_errors_are_one_line(model_dirs, args, needle, run):
    args = [a.format(gpt2=model_dirs["gpt2"]) for a in args]
    out = run(*args)
    assert out.returncode == 2
    assert needle in out.stderr and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_an_error_is_one_line_of_the_whole_process(model_dirs):
    """In a process of its own, after loading a model: nothing else on stderr (no warning, no traceback)."""
    out = cli("generate", "--prompt", "", "--model", str(model_dirs["gpt2"]))
    assert out.returncode == 2 and out.stderr.startswith("error: ") and "empty" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_bare_command_prints_help():
    out = cli()
    assert out.returncode == 0 and "generate" in out.stdout and "trace" in out.stdout


def test_a_prompts_file_that_is_not_utf8(tmp_path, model_dirs, run):
    (tmp_path / "latin1.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    out = run("generate", "--model", str(model_dirs["gpt2"]), "--prompts-file", str(tmp_path / "latin1.txt"))
    assert out.returncode == 2 and "not UTF-8" in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_compare_json(model_dirs, run):
    out = run("compare", "--model", str(model_dirs["llama_gqa_rope3"]), "--prompt", "The quick brown fox",
              "--preset", "kv-fp16", "--steps", "3", "--repeats", "1", "--json", "--threads", "1")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert (doc["a"]["spec"], doc["b"]["spec"]) == ("kv-dtype=fp32", "kv-dtype=fp16")
    n = len(doc["a"]["output_ids"])
    assert n == 4 and doc["b"]["kv_bytes_used"] * 2 == doc["a"]["kv_bytes_used"]
    assert doc["a"]["kv_bytes_used"] == (doc["prompt_tokens"] + 3) * 2 * 16 * 2 * 4 * 2
    rows = {r["what"]: r for r in doc["prediction"]}
    assert rows["kv_used"]["predicted_ratio"] == 0.5 == rows["kv_used"]["measured_ratio"]
    assert doc["verdict"]["text"] and doc["bandwidth"]["gb_per_s"] > 0
    assert doc["drift"]["max"] < 0.05 and len(doc["drift"]["max_abs_dlogit"]) == 4


@pytest.mark.parametrize("args,needle", [
    (("--a", "kv-dtype=fp17"), "not one of"),
    (("--b", "warp=9"), "unknown switch"),
    (("--steps", "0"), "steps must be"),
    (("--preset", "gqa", "--b", "kv-heads=3"), "set twice"),
])
def test_compare_errors_are_one_line(model_dirs, args, needle, run):
    out = run("compare", "--model", str(model_dirs["llama_gqa_rope3"]), "--prompt", "hi", *args)
    assert out.returncode == 2 and needle in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr


@pytest.mark.slow  # ~12 s of CLI processes; tests/engine/test_serving.py covers the schedulers themselves
def test_serve_sim_json(model_dirs, tmp_path):
    trace = {"name": "small", "requests": [
        {"id": i, "arrival_step": i, "prompt_ids": list(range(5 + i, 12 + 2 * i)), "output_len": 3 + i,
         "temperature": 0.8 if i % 2 else 0.0, "seed": 7 + i} for i in range(4)]}
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(trace))
    for scheduler in ("continuous", "static"):
        out = cli("serve-sim", "--model", str(model_dirs["llama_gqa_rope3"]), "--trace", str(path), "--scheduler",
                  scheduler, "--slots", "2", "--token-budget", "6", "--block-size", "4", "--json", "--threads", "1")
        assert out.returncode == 0, out.stderr
        doc = json.loads(out.stdout)
        assert doc["identical_outputs"] is True and doc["tokens"] == 3 + 4 + 5 + 6
        assert [len(v) for v in doc["outputs"].values()] == [3, 4, 5, 6]
        assert len(doc["records"]) == doc["steps"] and 0 < doc["slot_utilization"] <= 1


def test_serve_sim_errors_are_one_line(tmp_path, run):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    for args, needle in (((bad,), "is not JSON"), (("no-such",), "built-in traces")):
        out = run("serve-sim", "--trace", *map(str, args))
        assert out.returncode == 2 and needle in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr


@pytest.mark.slow  # several CLI processes (~4 s each); the engine's own tests cover batching and sharing
def test_serve_sim_prefix_sharing(model_dirs, tmp_path):
    system = list(range(20, 41))  # 21 tokens: 5 full blocks of 4 and one more
    trace = {"requests": [{"id": i, "arrival_step": 0, "prompt_ids": [*system, 50 + i, 60 + i], "output_len": 4,
                           "seed": i} for i in range(3)]}
    path = tmp_path / "shared.json"
    path.write_text(json.dumps(trace))
    docs = {}
    for flag in ((), ("--prefix-sharing",)):
        out = cli("serve-sim", "--model", str(model_dirs["llama_gqa_rope3"]), "--trace", str(path), "--slots", "1",
                  "--block-size", "4", "--json", "--threads", "1", *flag)
        assert out.returncode == 0, out.stderr
        docs[bool(flag)] = json.loads(out.stdout)
    assert docs[True]["identical_outputs"] is True and docs[True]["outputs"] == docs[False]["outputs"]
    # one slot: each request starts after the one before has finished and freed its blocks: nothing to share
    assert docs[True]["prefill_tokens_fed"] == docs[False]["prefill_tokens_fed"] == 3 * 23
    out = cli("serve-sim", "--model", str(model_dirs["llama_gqa_rope3"]), "--trace", str(path), "--slots", "3",
              "--block-size", "4", "--json", "--threads", "1", "--prefix-sharing", "--token-budget", "23")
    doc = json.loads(out.stdout)
    # 3 slots, a budget of 23: request 0 prefills in step 0; 1 and 2 join later and skip the 20 cached tokens
    assert doc["prefill_tokens_fed"] == 23 + 3 + 3 and doc["peak_shared_blocks"] == 5
    assert doc["identical_outputs"] is True


@pytest.mark.slow  # ~13 s; tests/engine/test_speculative.py covers speculative decoding itself
def test_speculative_json():
    out = cli("speculative", "--prompt", "The list of", "--k", "3", "--max-new-tokens", "12", "--json",
              "--threads", "1")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["identical_outputs"] is True and len(doc["output_ids"]) == 12
    kept = sum(r["accepted"] for r in doc["per_round"])
    rejected = sum(1 for r in doc["per_round"] if r["accepted"] < len(r["proposed"]))
    assert doc["acceptance_rate"] == kept / (kept + rejected)  # per checked draft
    # every round adds its kept drafts and one token of the target's; the last may overshoot by one
    assert sum(r["accepted"] + 1 for r in doc["per_round"]) - 12 in (0, 1)
    assert all(len(r["proposed"]) <= 3 for r in doc["per_round"]) and doc["cost_ratio"] > 0
    out = cli("speculative", "--prompt", "The list of", "--k", "0")
    assert out.returncode == 2 and "k (draft tokens per round)" in out.stderr


def test_serve_sim_with_single_token_outputs(model_dirs, tmp_path, run):
    """No gaps between tokens, so no inter-token latency: shown as a dash, not a crash."""
    path = tmp_path / "ones.json"
    path.write_text(json.dumps({"requests": [{"prompt_ids": [5, 6, 7], "output_len": 1} for _ in range(2)]}))
    out = run("serve-sim", "--model", str(model_dirs["llama_gqa_rope3"]), "--trace", str(path), "--no-check")
    assert out.returncode == 0, out.stderr
    assert "ITL p50/p95 — ms" in out.stdout and "2 tokens" in out.stdout


@pytest.mark.slow  # ~10 s; tests/labs/test_claims_measure.py measures the claims themselves
def test_claims_json_quick_one_claim():
    """`claims --quick --only K9 --json`: the article's figure, the measured effect with its verdict and reason,
    and peak KV bytes that are whole blocks of the embedded model's 8,192 B per token."""
    out = cli("claims", "--quick", "--only", "k9", "--json", "--threads", "1", timeout=300)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    (k9,) = doc["claims"]
    assert k9["id"] == "K9" and k9["article"].startswith("prefix sharing") and k9["verdict"] == "holds"
    effect = k9["effects"][0]
    assert effect["name"] == "kv_memory_saved" and effect["article"] == 0.3
    figures = k9["figures"]
    assert figures["peak_kv_without"] % (16 * 8192) == 0 and figures["peak_kv_with"] % (16 * 8192) == 0
    assert figures["peak_kv_with"] < figures["peak_kv_without"] and 0 < effect["measured"] < 1
    assert k9["reason"].startswith("KV memory saved: ") and doc["quick"] is True and doc["threads"] == 1


def test_claims_errors_are_one_line(run):
    out = run("claims", "--only", "K12")
    assert out.returncode == 2 and out.stderr.strip() == "error: no claim 'K12'; the claims are " + ", ".join(
        f"K{i}" for i in range(1, 12))


# What the CLI may import of llmviz: the engine and the labs only through the service; the class's
# rules and store (`llmviz class`, torch-free)
CLI_MAY_IMPORT = ("llmviz.service", "llmviz.cli", "llmviz.trace", "llmviz.analysis", "llmviz.i18n", "llmviz.files",
                  "llmviz.errors", "llmviz.paths", "llmviz.classroom")


def llmviz_imports_outside(source: str, allowed: tuple[str, ...]) -> list[str]:
    """'line: module' for every llmviz module a source imports (nested imports too) that `allowed` does not name;
    `from llmviz import x` counts as llmviz.x."""
    import ast

    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [f"{node.module}.{a.name}" if node.module == "llmviz" else node.module for a in node.names]
        else:
            continue
        found += [f"{node.lineno}: {n}" for n in names if n.split(".")[0] == "llmviz"
                  and not any(n == a or n.startswith(a + ".") for a in allowed)]
    return found


def test_the_cli_reaches_the_engine_and_labs_only_through_the_service():
    planted = ("from llmviz import service, labs\nimport llmviz.engine.session\n"
               "def f():\n    from llmviz.labs.claims import CLAIM_IDS\n    from llmviz.trace.config import X\n")
    assert llmviz_imports_outside(planted, CLI_MAY_IMPORT) == ["1: llmviz.labs", "2: llmviz.engine.session",
                                                               "4: llmviz.labs.claims"]
    files = sorted((ROOT / "llmviz" / "cli").glob("*.py"))
    assert {p.name for p in files} >= {"main.py", "options.py", "generate.py", "record.py", "compare.py", "serve.py",
                                       "speculative.py", "claims.py", "app.py"}
    wrong = {p.name: llmviz_imports_outside(p.read_text(encoding="utf-8"), CLI_MAY_IMPORT) for p in files}
    assert {name: lines for name, lines in wrong.items() if lines} == {}


def test_every_command_module_adds_its_parser_and_runs():
    """One module per command (add_parser, run), dispatched by name from main.COMMANDS."""
    from llmviz.cli.main import COMMANDS, parser

    commands = parser()._subparsers._group_actions[0].choices
    assert list(commands) == list(COMMANDS) == ["generate", "trace", "compare", "serve-sim", "speculative", "claims",
                                                "class", "app"]
    assert all(callable(m.add_parser) and callable(m.run) for m in COMMANDS.values())


def test_a_plugin_named_in_the_environment_is_a_choice_of_every_flag():
    """Issue 37: LLMVIZ_EXTENSIONS=toy_plugin (tests/support) makes --attn online and --kv-layout chunked choices,
    with their lines in --help, and they give the stock run's greedy tokens; a plugin that is not there is one
    error line."""
    env = {"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "LLMVIZ_AUTO_DEVICE": "cpu",
           "PYTHONPATH": str(ROOT / "tests" / "support"), "LLMVIZ_EXTENSIONS": "toy_plugin"}

    def call(*args):
        return subprocess.run([sys.executable, "-m", "llmviz", *args], capture_output=True, text=True, cwd=ROOT,
                              timeout=120, env=env)

    helped = call("generate", "--help")
    assert helped.returncode == 0 and "online: The keys 16 at a time" in " ".join(helped.stdout.split())
    flags = ("generate", "--prompt", "The quick brown fox", "--max-new-tokens", "5", "--temperature", "0", "--json")
    toy = call(*flags, "--attn", "online", "--kv-layout", "chunked", "--kv-block-size", "4")
    stock = call(*flags)
    assert toy.returncode == 0 and stock.returncode == 0, toy.stderr
    got, want = json.loads(toy.stdout), json.loads(stock.stdout)
    assert (got["attn"], got["kv_layout"]) == ("online", "chunked") and got["output_ids"] == want["output_ids"]
    env["LLMVIZ_EXTENSIONS"] = "llmviz_no_such_plugin"
    missing = call("generate", "--help")
    assert missing.returncode == 2 and missing.stderr.startswith("error: LLMVIZ_EXTENSIONS: llmviz_no_such_plugin")
