"""The hostile catalogue (cases.py) through the command line, in-process (`llmviz.cli.main.main`): exit 0 with a
correct output, or exit 2 with exactly one line on stderr starting `error:`, never a traceback, never a hang.
Then every error class forced where the CLI meets the library, and bare exceptions from inside the engine."""

from __future__ import annotations

import inspect
import json
import os

import pytest
from cases import (
    CONTROLS,
    DTYPE_OF,
    ERROR,
    MODEL_FOLDERS,
    OK,
    PO_FOLDERS,
    PROMPT_FILES,
    PROMPTS,
    REQUEST_TRACES,
    VALUES,
)
from hostile_helpers import TRIED, time_limit

import llmviz.errors as errors
from llmviz import cli, service
from llmviz.engine.loading.model import load_model
from llmviz.engine.session import Session
from llmviz.trace.config import EngineConfig, SamplingConfig
from llmviz.trace.records import load_trace

PROMPT = "The list of"
GREEDY = SamplingConfig(temperature=0)
FLAG_OF = {"kv_layout": "--kv-layout", "quant": "--quant", "max_seq_len": "--max-seq-len"}
LOADS: dict = {}  # loaded models shared by every case here (loading is not what these cases test)


@pytest.fixture
def run(capsys, monkeypatch, tiny):
    real_load = service.models.load

    def cached_load(name, config):
        key = (name or service.EMBEDDED_MODEL, config.dtype, config.kv_heads, config.fused_qkv, config.quant,
               config.quant_group, config.device)
        if key not in LOADS:
            LOADS[key] = tiny if key[1:] == ("fp32", None, "auto", "none", 32, "auto") and key[0] == "llmviz-tiny" \
                else real_load(name, config)
        return LOADS[key]

    monkeypatch.setattr(service.models, "load", cached_load)
    import llmviz.labs.compare as compare_module

    probe = compare_module.memory_bandwidth  # the real probe on a 4 MiB buffer instead of 512 MiB
    monkeypatch.setattr(compare_module, "memory_bandwidth", lambda device, nbytes, repeats: probe(device, 4 * 2**20,
                                                                                                  repeats))

    def call(*argv, seconds: float = 30):
        TRIED["cli"] += 1
        capsys.readouterr()
        with time_limit(seconds):
            rc = cli.main([str(a) for a in argv])
        out, err = capsys.readouterr()
        return rc, out, err

    return call


def check(result, expect: str) -> str:
    """Exit 2 with exactly one line `error: ...` (and nothing on stdout), or exit 0; returns stdout."""
    rc, out, err = result
    if expect == ERROR:
        lines = err.splitlines()
        assert rc == 2 and len(lines) == 1, (rc, err)
        assert lines[0].startswith("error: ") and len(lines[0]) > len("error: ") + 10 and "Traceback" not in err
        assert out == ""
        return lines[0]
    assert rc == 0, err
    return out


def library_ids(lm, prompt, n, **config) -> list[int]:
    return Session(lm, prompt, EngineConfig(**{"sampling": GREEDY, **config})).generate(n).output_ids


# --- prompts -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", PROMPTS, ids=lambda c: c.name)
def test_prompt(run, tiny, case):
    out = check(run("generate", "--prompt", case.value, "--max-new-tokens", 2, "--temperature", 0, "--json"),
                case.expect)
    if case.expect == OK:
        doc = json.loads(out)
        row = doc["rows"][0]
        assert row["prompt"] == case.value and row["prompt_ids"] == tiny.tokenizer.encode(case.value)
        assert tiny.tokenizer.decode(row["prompt_ids"]) == case.value
        assert row["output_ids"] == library_ids(tiny, case.value, 2)


def test_prompt_as_text_output(run, tiny):
    """Without --json the prompt and its continuation are printed as they are (control characters included)."""
    prompt = "a\x00b\u202e济南 👩‍👩‍👧‍👦"
    out = check(run("generate", "--prompt", prompt, "--max-new-tokens", 2, "--temperature", 0), OK)
    expected = tiny.tokenizer.hf.decode(library_ids(tiny, prompt, 2), skip_special_tokens=True)
    assert out == prompt + expected + "\n"


# --- numeric flags -----------------------------------------------------------------------------------------
NUMERIC = [(c, v) for c in CONTROLS if c.flag for v in VALUES]
TEXT_OF = {"negative": "-1", "zero": "0", "huge": "1000000000000", "nan": "nan", "text": "abc"}
SMALL_TRACE = REQUEST_TRACES[-1].value


def _argv(control, value, tmp_path) -> list:
    setup = [a for k, v in (control.setup or {}).items() if k in FLAG_OF for a in (FLAG_OF[k], v)]
    flag = [control.flag, TEXT_OF[value]]
    if control.command == "generate":
        temperature = 1 if control.where == "sampling" and control.name != "temperature" else 0
        return ["generate", "--prompt", PROMPT, "--max-new-tokens", 3, "--temperature", temperature, "--top-k", 0,
                "--json", *setup, *flag]
    if control.command == "trace":
        return ["trace", "--prompt", PROMPT, "--out", tmp_path / "t", *setup, *flag]
    if control.command == "compare":
        return ["compare", "--prompt", PROMPT, "--steps", 1, "--repeats", 1, "--json", *flag]
    if control.command == "serve-sim":
        (tmp_path / "small.json").write_bytes(SMALL_TRACE)
        return ["serve-sim", "--trace", tmp_path / "small.json", "--no-check", "--json", *flag]
    if control.command == "speculative":
        return ["speculative", "--prompt", PROMPT, "--max-new-tokens", 4, "--k", 2, "--json", *flag]
    raise AssertionError(control.command)


@pytest.mark.parametrize("control,value", NUMERIC, ids=[f"{c.command}{c.flag}={v}" for c, v in NUMERIC])
def test_numeric_flag(run, tiny, tmp_path, control, value):
    expect = OK if value in control.ok else ERROR
    out = check(run(*_argv(control, value, tmp_path)), expect)
    if expect == ERROR:
        return
    number = VALUES[value]
    if control.command == "generate":
        doc = json.loads(out)
        sampling = SamplingConfig(temperature=1.0 if control.where == "sampling" and control.name != "temperature"
                                  else 0.0, top_k=0)
        if control.where == "sampling":
            sampling = SamplingConfig(**{**sampling.__dict__, control.name: number})
        setup = {k: v for k, v in (control.setup or {}).items() if k in FLAG_OF}
        engine = {control.name: number} if control.where == "engine" else {}
        n = number if control.name == "max_new_tokens" else 3
        expected = Session(tiny, PROMPT, EngineConfig(sampling=sampling, **setup, **engine)).generate(n)
        assert doc["prompt_ids"] == expected.prompt_ids and doc["output_ids"] == expected.output_ids
        if control.name == "max_new_tokens":  # the 16-slot cache ends the run
            assert len(doc["prompt_ids"]) + len(doc["output_ids"]) == 17 and doc["finished"] == "max_seq_len"
    elif control.command == "trace":  # --steps 0: the prefill alone; 10**12: until the 16-slot cache is full
        trace = load_trace(tmp_path / "t")
        assert sorted(p.name for p in (tmp_path / "t").iterdir()) == ["arrays.npz", "trace.json"]
        steps = 1 if number == 0 else 16 + 1 - len(trace.prompt_ids)
        assert len(trace.steps) == steps and out.startswith(f"wrote {steps} steps (full capture) to the folder "
                                                            f"{tmp_path / 't'} ")
    elif control.command == "compare":  # A and B the same setting: the same tokens, the asked map's shape
        doc = json.loads(out)
        assert doc["a"]["output_ids"] == doc["b"]["output_ids"] == library_ids(tiny, PROMPT, 2, stop_at_eos=False)
        assert doc["outputs"]["agreement"] == 1.0
    elif control.command == "serve-sim":  # a budget beyond need: every request gets its tokens
        doc = json.loads(out)
        assert doc["tokens"] == 5 and [len(v) for v in doc["outputs"].values()] == [2, 3]
    else:
        raise AssertionError(f"no check for {control.flag}={value}")


@pytest.mark.parametrize("device", ["", "tpu", "cuda:-1", "CPU", "cuda:99999999999999999999"])
def test_device_flag(run, device):
    check(run("generate", "--prompt", PROMPT, "--device", device), ERROR)


# --- files the CLI reads or writes -------------------------------------------------------------------------
@pytest.mark.parametrize("case", REQUEST_TRACES, ids=lambda c: c.name)
def test_request_trace_file(run, tmp_path, case):
    (tmp_path / "trace.json").write_bytes(case.value)
    out = check(run("serve-sim", "--trace", tmp_path / "trace.json", "--slots", 2, "--json"), case.expect)
    if case.expect == OK:
        doc = json.loads(out)
        assert doc["identical_outputs"] is True and doc["tokens"] == 5


@pytest.mark.parametrize("path", ["/dev/zero", "/", "no/such/trace.json", "nul\x00byte.json"])
def test_request_trace_path(run, path):
    check(run("serve-sim", "--trace", path, "--no-check"), ERROR)


@pytest.mark.parametrize("case", PROMPT_FILES, ids=lambda c: c.name)
def test_prompts_file(run, tiny, tmp_path, case):
    (tmp_path / "prompts.txt").write_bytes(case.value)
    out = check(run("generate", "--prompts-file", tmp_path / "prompts.txt", "--max-new-tokens", 2, "--temperature", 0,
                    "--json"), case.expect)
    if case.expect == OK:
        rows = json.loads(out)["rows"]
        assert [r["prompt"] for r in rows] == ["first\x00line", "second line"]
        assert [r["output_ids"] for r in rows] == [library_ids(tiny, r["prompt"], 2) for r in rows]


@pytest.mark.parametrize("path", ["/dev/zero", "/", "no/such/file.txt", "nul\x00byte.txt"])
def test_prompts_file_path(run, path):
    check(run("generate", "--prompts-file", path, "--max-new-tokens", 2), ERROR)


def test_trace_out_folders(run, tmp_path):
    (tmp_path / "a-file").write_text("x")
    for out in ("", "   ", tmp_path / "a-file", tmp_path / "a-file" / "below", "nul\x00byte", "/proc/llmviz"):
        check(run("trace", "--prompt", PROMPT, "--steps", 1, "--out", out), ERROR)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


@pytest.mark.parametrize("command", ["generate", "serve-sim"])
def test_a_fifo_is_refused_not_read_forever(run, tmp_path, command):
    """--prompts-file and serve-sim --trace naming a FIFO: opening it blocked forever; now refused as not
    a regular file, at once (a regression fails at the 10-second limit instead of hanging the suite)."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    argv = ["generate", "--prompts-file", fifo] if command == "generate" else ["serve-sim", "--trace", fifo,
                                                                               "--no-check"]
    line = check(run(*argv, seconds=10), ERROR)
    assert "FIFO" in line and "regular file" in line


@pytest.mark.parametrize("case", PO_FOLDERS, ids=lambda c: c.name)
def test_training_corpus_folder(capsys, tmp_path, case):
    """The training commands' .po folder, through `python -m llmviz.training.corpus_zh`'s
    entry point in-process: one line, status 2, nothing written (the trainer's --zh-po: tests/training)."""
    pytest.importorskip("polib", reason="polib (a training-only dependency) is not installed")
    from llmviz.training import corpus_zh
    from llmviz.training.command import run as run_command

    TRIED["cli"] += 1
    folder = case.value(tmp_path)
    capsys.readouterr()
    with time_limit(10):  # a FIFO read would block forever: a regression fails here instead of hanging
        rc = run_command(corpus_zh.main, [str(folder), "--out", str(tmp_path / "out")])
    check((rc, *capsys.readouterr()), case.expect)
    assert not (tmp_path / "out").exists()


def test_trace_out_never_writes_into_system_folders(run, tmp_path):
    """`trace --out /dev/full.zip` wrote into /dev as root: /dev, /proc and /sys are refused, through a
    link too, and so is an --out that exists as something else (a FIFO named .zip, a file where a folder goes)."""
    name = f"llmviz-test-{os.getpid()}.zip"
    (tmp_path / "to-dev").symlink_to("/dev")
    os.mkfifo(tmp_path / "fifo.zip")
    (tmp_path / "a-file").write_text("x")
    try:
        for out, needle in ((f"/dev/{name}", "/dev"), (tmp_path / "to-dev" / name, "/dev"), ("/sys/x.zip", "/sys"),
                            (tmp_path / "fifo.zip", "FIFO"), (tmp_path / "a-file", "is a file")):
            line = check(run("trace", "--prompt", PROMPT, "--steps", 1, "--out", out), ERROR)
            assert needle in line, line
            assert "internal error" not in line
    finally:
        if os.path.lexists(f"/dev/{name}"):  # only where the check regressed
            os.remove(f"/dev/{name}")
    assert not os.path.lexists(f"/dev/{name}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file", "fifo.zip", "to-dev"]
    out = check(run("trace", "--prompt", PROMPT, "--steps", 1, "--out", tmp_path / "new" / "t.zip"), OK)
    assert (tmp_path / "new" / "t.zip").is_file() and "wrote 2 steps" in out  # an ordinary folder still works


@pytest.mark.parametrize("only", [",,,", " , ", ""])
def test_claims_only_naming_no_claim_is_an_error(run, only):
    """`claims --only ,,,` exited 0 with no claims: an --only that names none lists the claims."""
    line = check(run("claims", "--only", only), ERROR)
    assert "names no claim" in line and "K1, K2" in line and "K11" in line


BEYOND_INT64 = str(2**64)


@pytest.mark.parametrize("argv", [
    ["generate", "--prompt", PROMPT, "--max-new-tokens", 2, "--sliding-window", BEYOND_INT64],
    ["compare", "--prompt", PROMPT, "--steps", 1, "--repeats", 1, "--b", f"sliding-window={BEYOND_INT64}"],
    ["speculative", "--prompt", PROMPT, "--max-new-tokens", 2, "--seed", BEYOND_INT64],
], ids=["generate-window", "compare-window", "speculative-seed"])
def test_numbers_beyond_int64_are_typed(run, argv):
    """Windows >= 2**64 and speculative seeds >= 2**64 ended in OverflowError: a typed ConfigError
    naming the range, as generate's seed."""
    line = check(run(*argv), ERROR)
    assert "internal error" not in line and ("2**63-1" in line or "2**64)" in line), line


@pytest.mark.parametrize("argv", [
    ["generate", "--no-such-flag"], ["generate", "--prompt"], ["trace", "--prompt", "hi"],
    ["generate", "--prompt", "hi", "--attn", "magic"], ["no-such-command"], ["compare"],
    ["generate", "--prompt", "hi", "--top-k", "1e99"], ["serve-sim", "--scheduler", "fifo"],
], ids=lambda a: " ".join(a))
def test_usage_errors_are_one_line(run, argv):
    line = check(run(*argv), ERROR)
    assert "--help" in line


# --- model folders -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("case,kind", MODEL_FOLDERS, ids=[c.name for c, _ in MODEL_FOLDERS])
def test_model_folder(run, model_dirs, tmp_path, case, kind):
    folder = case.value(model_dirs[kind], tmp_path / case.name)
    dtype = DTYPE_OF.get(case.name, "fp32")
    out = check(run("generate", "--model", folder, "--prompt", "The quick brown fox", "--max-new-tokens", 3,
                    "--temperature", 0, "--dtype", dtype, "--json"), OK if case.expect == OK else ERROR)
    assert not (folder / "REMOTE_CODE_RAN").exists()
    if case.expect == OK:
        reference = load_model(str(model_dirs[kind]))
        assert json.loads(out)["output_ids"] == library_ids(reference, "The quick brown fox", 3)


# --- every error class, forced where the CLI meets the library ---------------------------------------------
ERROR_CLASSES = [c for _, c in inspect.getmembers(errors, inspect.isclass) if issubclass(c, errors.LlmvizError)]
COMMANDS = {
    "generate": ["generate", "--prompt", PROMPT, "--max-new-tokens", 2],
    "trace": ["trace", "--prompt", PROMPT, "--steps", 1, "--out", "{tmp}/t"],
    "compare": ["compare", "--prompt", PROMPT, "--steps", 1, "--repeats", 1],
    "serve-sim": ["serve-sim", "--trace", "{tmp}/small.json", "--no-check"],
    "speculative": ["speculative", "--prompt", PROMPT, "--max-new-tokens", 2],
    "claims": ["claims", "--quick", "--only", "K9"],
}


def _command(name: str, tmp_path) -> list:
    (tmp_path / "small.json").write_bytes(SMALL_TRACE)
    return [str(a).format(tmp=tmp_path) for a in COMMANDS[name]]


def _raiser(exc):
    def boom(*args, **kwargs):
        raise exc
    return boom


@pytest.mark.parametrize("cls", ERROR_CLASSES, ids=lambda c: c.__name__)
def test_every_error_class_is_one_line(run, monkeypatch, tmp_path, cls):
    """The message may hold newlines (a library's message); the CLI still prints one line and exits 2."""
    monkeypatch.setattr(service.models, "load", _raiser(cls(f"forced {cls.__name__}\nwith a second line", code="x")))
    line = check(run(*_command("generate", tmp_path)), ERROR)
    assert line == f"error: forced {cls.__name__} with a second line"


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("where", ["load", "step"])
def test_every_command_reports_a_forced_error(run, monkeypatch, tmp_path, command, where):
    """Forced at the load and inside the engine's step (every serving policy through the one driver, speculative
    decoding's draft steps, and a Session's step: the one step loop, run_step)."""
    exc = errors.OutOfMemoryError("forced during the run; try a smaller model")
    if where == "load":
        monkeypatch.setattr(service.models, "load", _raiser(exc))
    else:
        import llmviz.engine.serving.driver as driver
        import llmviz.engine.serving.speculative as speculative

        monkeypatch.setattr(driver, "run_step", _raiser(exc))
        monkeypatch.setattr(speculative, "run_step", _raiser(exc))
        monkeypatch.setattr(Session, "step", _raiser(exc))
    assert check(run(*_command(command, tmp_path)), ERROR) == f"error: {exc}"


@pytest.mark.parametrize("exc", [ValueError("bad value"), KeyError("layers.9.q"), RuntimeError("shape [2, 3]"),
                                 IndexError("index 7"), TypeError("NoneType"), AssertionError()],
                         ids=lambda e: type(e).__name__)
def test_an_unexpected_exception_inside_the_engine_is_one_line(run, monkeypatch, tmp_path, exc):
    """A bug (not a bad input): one line naming it as an internal error, exit 2; LLMVIZ_RAISE_UNEXPECTED=1 (which
    the test suite sets, so that every other test here sees a bug as the exception it is) re-raises it."""
    monkeypatch.setattr(Session, "step", _raiser(exc))
    monkeypatch.delenv("LLMVIZ_RAISE_UNEXPECTED", raising=False)
    line = check(run(*_command("generate", tmp_path)), ERROR)
    assert line.startswith(f"error: internal error ({type(exc).__name__}") and "LLMVIZ_RAISE_UNEXPECTED=1" in line
    monkeypatch.setenv("LLMVIZ_RAISE_UNEXPECTED", "1")
    with pytest.raises(type(exc)):
        run(*_command("generate", tmp_path))


@pytest.mark.parametrize("exc,needle", [(OSError(28, "No space left on device"), "No space left"),
                                        (MemoryError("cannot allocate"), "out of memory")],
                         ids=["OSError", "MemoryError"])
def test_system_errors_are_one_line(run, monkeypatch, tmp_path, exc, needle):
    monkeypatch.setattr(Session, "step", _raiser(exc))
    assert needle in check(run(*_command("generate", tmp_path)), ERROR)


def test_interrupt_exits_130_quietly(run, monkeypatch, tmp_path):
    monkeypatch.setattr(Session, "step", _raiser(KeyboardInterrupt()))
    assert run(*_command("generate", tmp_path))[0] == 130


def test_count():
    cases = len(PROMPTS) + len(NUMERIC) + len(REQUEST_TRACES) + len(PROMPT_FILES) + len(MODEL_FOLDERS) + len(
        ERROR_CLASSES)
    assert cases >= 60
    print(f"\nCLI: {cases} catalogue cases (and the forced failures); calls of main() so far: {TRIED['cli']}")
