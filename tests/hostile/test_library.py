"""Every hostile input of the catalogue (cases.py) through the library: a typed error with a one-line message,
or a correct result checked against an independent fact; each within a time limit."""

from __future__ import annotations

import io
import math
import tempfile
import time
import tracemalloc
import zipfile
import zlib

import numpy as np
import pytest
from cases import (
    CONTROLS,
    DEVICES,
    DTYPE_OF,
    ERROR,
    MODEL_FOLDERS,
    NOT_TEXT,
    OK,
    PROMPT_IDS,
    PROMPTS,
    REQUEST_TRACES,
    RUNS,
    TRACE_FILES,
    VALUES,
    bomb_member,
    context_prompt,
    count,
    crc32_zeros,
)
from hostile_helpers import TRIED, check_typed, outcome

from llmviz import service
from llmviz.engine.loading.model import load_model
from llmviz.engine.session import Session
from llmviz.trace.config import EngineConfig, SamplingConfig
from llmviz.trace.records import MAX_UNPACKED_BYTES, trace_from_zip, trace_to_zip

GREEDY = SamplingConfig(temperature=0)
PROMPT = "The list of"


@pytest.fixture(scope="module")
def valid_zip(tiny):
    trace = Session(tiny, PROMPT, EngineConfig(sampling=GREEDY, capture="meta")).generate(3)
    return trace, trace_to_zip(trace)


# --- prompts -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", PROMPTS, ids=lambda c: c.name)
def test_prompt(tiny, case):
    tok = tiny.tokenizer
    result = outcome(lambda: Session(tiny, case.value, EngineConfig(sampling=GREEDY)).generate(2), case.expect)
    if case.expect == ERROR:
        check_typed(result, case.error)
        return
    ids = tok.encode(case.value)
    assert result.prompt_ids == ids and result.prompts == [case.value]
    assert tok.decode(ids) == case.value  # the ids spell the prompt again, NUL, RTL marks and emoji included
    assert b"".join(tok.token_bytes(i) for i in ids) == case.value.encode("utf-8")  # byte-exact pieces
    first = result.steps[0]
    assert np.isfinite(first.logits).all() and int(first.sampled[0]) == int(first.logits[0].argmax())


@pytest.mark.parametrize("case", NOT_TEXT, ids=lambda c: c.name)
def test_prompt_that_is_not_text(tiny, case):
    check_typed(outcome(lambda: Session(tiny, case.value), ERROR), case.error)


@pytest.mark.parametrize("case", PROMPT_IDS, ids=lambda c: c.name)
def test_prompt_ids(tiny, case):
    config = EngineConfig(sampling=GREEDY, stop_at_eos=False)
    result = outcome(lambda: Session(tiny, config=config, prompt_ids=case.value).generate(2), case.expect)
    if case.expect == ERROR:
        check_typed(result, case.error)
        return
    for row, ids in enumerate(case.value):  # each row draws what it draws alone, greedy: the argmax
        alone = Session(tiny, config=config, prompt_ids=[ids]).generate(2)
        assert result.row_prompt_ids(row) == ids and result.row_output_ids(row) == alone.output_ids
        assert int(alone.steps[0].sampled[0]) == int(alone.steps[0].logits[0].argmax())


def test_prompt_at_the_context_boundary(tiny):
    """max_seq - 1 prompt tokens run (one slot left for the first new token); max_seq tokens do not."""
    limit = tiny.cfg.max_position_embeddings
    assert len(tiny.tokenizer.encode(context_prompt(limit))) == limit
    trace = outcome(lambda: Session(tiny, context_prompt(limit - 1), EngineConfig(sampling=GREEDY)).generate(3), OK)
    assert len(trace.prompt_ids) == limit - 1 and len(trace.steps) == 2 and trace.steps[-1].finished == "max_seq_len"
    message = check_typed(outcome(lambda: Session(tiny, context_prompt(limit)), ERROR), "PromptError")
    assert f"{limit} tokens" in message


# --- numeric controls --------------------------------------------------------------------------------------
SAMPLED = SamplingConfig(temperature=1.0, top_k=0, top_p=1.0)  # every filter off: a plain seeded draw


def _sampling_base(name: str) -> SamplingConfig:
    return GREEDY if name == "repetition_penalty" else SAMPLED  # the penalty is checked on greedy picks


def _numeric_run(tiny, control, value):
    """The value through the library function that takes it; returns what a correct result is checked on."""
    setup = control.setup or {}
    if control.where == "sampling":
        sampling = SamplingConfig(**{**_sampling_base(control.name).__dict__, control.name: value})
        return Session(tiny, PROMPT, EngineConfig(sampling=sampling, stop_at_eos=False)).generate(4)
    if control.where == "engine":
        config = EngineConfig(**{"sampling": GREEDY, "stop_at_eos": False, **setup, control.name: value})
        lm = tiny if config.quant == "none" else service.models.load(None, config)
        return Session(lm, PROMPT, config).generate(4)
    if control.where == "generate":
        return Session(tiny, PROMPT, EngineConfig(sampling=GREEDY, stop_at_eos=False, **setup)).generate(value)
    if control.where == "threads":
        return service.models.use_cpu_threads(value)
    if control.where == "compare":  # refused on construction, or by compare() once it knows the model's shape
        config = service.CompareConfig(prompt=PROMPT, **{control.name: value})
        return config if value == 0 else service.measure.compare(config, load_fn=lambda name, engine: tiny)
    if control.where == "serve":
        from llmviz.engine.serving.requests import parse_trace_bytes

        requests = parse_trace_bytes(REQUEST_TRACES[-1].value)
        return service.serving.serve(tiny, requests, "continuous", **{control.name: value})
    if control.where == "speculative":
        from llmviz.engine.serving.speculative import Speculator

        draft = service.models.load("llmviz-tiny-draft", EngineConfig())
        args = {"k": 2, "max_new": 4, control.name: value}
        return Speculator(tiny, draft, tiny.tokenizer.encode(PROMPT), args["k"], GREEDY, 0, args["max_new"]).run()
    raise AssertionError(control.where)


NUMERIC = [(c, v) for c in CONTROLS if c.command != "trace" for v in VALUES]


@pytest.mark.parametrize("control,value", NUMERIC, ids=[f"{c.where}.{c.name}={v}" for c, v in NUMERIC])
def test_numeric_control(tiny, control, value):
    expect = OK if value in control.ok else ERROR
    result = outcome(lambda: _numeric_run(tiny, control, VALUES[value]), expect)
    if expect == ERROR:
        check_typed(result, control.huge if value == "huge" else "ConfigError")
        return
    name = control.name
    if name == "temperature":  # 0 is greedy: every token is the argmax of the logits it was drawn from
        assert all(int(s.sampled[0]) == int(s.logits[0].argmax()) for s in result.steps)
    elif control.where == "sampling" and name != "repetition_penalty":  # top_k 0 and >= vocab: no filter at all
        reference = Session(tiny, PROMPT, EngineConfig(sampling=SAMPLED, stop_at_eos=False)).generate(4)
        assert result.output_ids == reference.output_ids
    elif name == "repetition_penalty":  # greedy on the penalized logits, recomputed in numpy from the recorded ones
        history = list(result.prompt_ids)
        for step in result.steps:
            logits = step.logits[0].copy()
            seen = np.array(sorted(set(history)))
            logits[seen] = np.where(logits[seen] > 0, logits[seen] / VALUES[value], logits[seen] * VALUES[value])
            assert int(step.sampled[0]) == int(logits.argmax())
            history.append(int(step.sampled[0]))
    elif name == "seed":  # a seeded sampled run repeats itself exactly
        sampled = EngineConfig(seed=VALUES[value], sampling=SAMPLED, stop_at_eos=False)
        runs = [Session(tiny, PROMPT, sampled).generate(4).output_ids for _ in range(2)]
        assert runs[0] == runs[1] and all(0 <= t < tiny.cfg.vocab_size for t in runs[0])
    elif control.where == "engine":  # a window wider than the context, a rollback reserve, a logit lens: no effect
        reference = Session(tiny, PROMPT, EngineConfig(sampling=GREEDY, stop_at_eos=False)).generate(4)
        assert result.output_ids == reference.output_ids
        lens = result.steps[0].lens_ids
        if name == "logit_lens_top_k" and VALUES[value] == 0:
            assert lens is None
        elif name == "logit_lens_top_k":  # at most the whole vocabulary per layer
            assert lens.shape[0] == tiny.cfg.num_layers and lens.shape[-1] <= tiny.cfg.vocab_size
    elif name == "max_new_tokens":  # the cache (16 slots) ends the run: prompt + generated = 16 + the last token
        assert len(result.prompt_ids) + len(result.output_ids) == 16 + 1
        assert result.steps[-1].finished == "max_seq_len"
    elif control.where == "compare":
        assert getattr(result, name) == VALUES[value]
    elif name == "token_budget":  # a budget beyond need: each request gets all its tokens
        assert [len(v) for v in result["outputs"].values()] == [2, 3]
    else:
        raise AssertionError(f"no check for {name}={value}")


@pytest.mark.parametrize("case", DEVICES, ids=lambda c: c.name)
def test_device_names(case):
    check_typed(outcome(lambda: service.models.load(None, EngineConfig(device=case.value)), case.expect), case.error)


def test_set_threads_refuses_what_would_abort_the_process():
    import torch

    before = torch.get_num_threads()
    for value in (10**9, 2**31, 0, -4, 1.5, True, "8"):
        check_typed(outcome(lambda v=value: service.models.use_cpu_threads(v), ERROR), "ConfigError")
    assert torch.get_num_threads() == before


# --- trace archives ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", TRACE_FILES, ids=lambda c: c.name)
def test_trace_archive(valid_zip, case, tmp_path, monkeypatch):
    trace, good = valid_zip
    data = case.value(good)
    monkeypatch.chdir(tmp_path)  # an archive naming ../ or / paths must write nothing anywhere
    tracemalloc.start()
    try:
        began = time.perf_counter()
        result = outcome(lambda: trace_from_zip(data), case.expect, seconds=10)
        seconds, (_, peak) = time.perf_counter() - began, tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    if case.expect == ERROR:  # and no message names the server's temporary folder the archive is unpacked in
        assert tempfile.gettempdir() not in check_typed(result, case.error)
    else:
        assert result.prompt_ids == trace.prompt_ids and result.output_ids == trace.output_ids
        assert result.tokens == trace.tokens  # a table listing more ids keeps those the steps show
        for a, b in zip(result.steps, trace.steps, strict=True):  # the values written, a masked (-inf) logit aside
            assert a.logits.shape == b.logits.shape and ((a.logits == b.logits) | np.isneginf(a.logits)).all()
    # a bomb is refused by its declared sizes: no time and no memory go into inflating it
    assert seconds < 5 and peak < 64 * 2**20 + 2 * len(data), (seconds, peak)
    assert list(tmp_path.iterdir()) == [] and not (tmp_path.parent / "evil.txt").exists()


def test_the_bombs_are_real():
    """The builder's members are what they claim: a reader that trusts them inflates MiB after MiB of zeros
    with a checksum that holds (checked here on a 64 MiB one; the catalogue's are 3 GiB, built the same way)."""
    assert crc32_zeros(3 * 2**20 + 5, b"head") == zlib.crc32(b"head" + bytes(3 * 2**20 + 5))
    from cases import _raw_zip

    name, *_ = member = bomb_member("zeros.bin", 64 * 2**20, b"prefix")
    archive = _raw_zip([member])
    assert len(archive) < 128 * 2**10  # 64 MiB in under 128 KB
    with zipfile.ZipFile(io.BytesIO(archive)) as z:
        assert z.getinfo(name).file_size == 64 * 2**20
        with z.open(name) as f:
            assert f.read(6) == b"prefix" and f.read(2**20) == bytes(2**20)
        assert z.testzip() is None  # every CRC right
    assert MAX_UNPACKED_BYTES < 3 * 2**30


@pytest.mark.parametrize("case", REQUEST_TRACES, ids=lambda c: c.name)
def test_request_trace(tiny, case):
    from llmviz.engine.serving.requests import parse_trace_bytes

    def run():
        return service.serving.serve(tiny, parse_trace_bytes(case.value, case.name), "continuous", slots=2)

    result = outcome(run, case.expect)
    if case.expect == ERROR:
        check_typed(result, case.error)
    else:  # greedy request 5,6,7 draws what it draws alone
        alone = Session(tiny, config=EngineConfig(sampling=GREEDY, stop_at_eos=False), prompt_ids=[[5, 6, 7]],
                        seeds=[1]).generate(2).output_ids
        assert result["outputs"][0] == alone and len(result["outputs"][1]) == 3


def test_request_trace_from_a_device_file():
    """/dev/zero has no size to check first: the read is bounded, so it is refused, not read forever."""
    from llmviz.engine.serving.requests import load_trace

    check_typed(outcome(lambda: load_trace("/dev/zero"), ERROR, seconds=10), "TraceFormatError")
    check_typed(outcome(lambda: load_trace("nul\x00byte.json"), ERROR), "TraceFormatError")


def test_request_trace_from_a_fifo(tmp_path):
    """A FIFO has no writer: opening it to read would block forever. Refused as not a regular file;
    a regression fails at the time limit instead of hanging."""
    import os

    from llmviz.engine.serving.requests import load_trace

    fifo = tmp_path / "trace.json"
    os.mkfifo(fifo)
    message = check_typed(outcome(lambda: load_trace(str(fifo)), ERROR, seconds=10), "TraceFormatError")
    assert "FIFO" in message and "regular file" in message


# --- model folders -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("case,kind", MODEL_FOLDERS, ids=[c.name for c, _ in MODEL_FOLDERS])
def test_model_folder(model_dirs, tmp_path, case, kind):
    folder = case.value(model_dirs[kind], tmp_path / case.name)
    dtype = DTYPE_OF.get(case.name, "fp32")

    def run():
        lm = load_model(str(folder), dtype=dtype)
        return lm, Session(lm, "The quick brown fox", EngineConfig(dtype=dtype, sampling=GREEDY)).generate(3)

    result = outcome(run, OK if case.expect == OK else ERROR)
    assert not (folder / "REMOTE_CODE_RAN").exists()  # auto_map code is never imported
    if case.expect != OK:
        check_typed(result, case.error)
        return
    lm, trace = result
    reference = load_model(str(model_dirs[kind]))
    assert trace.output_ids == Session(reference, "The quick brown fox", EngineConfig(sampling=GREEDY)).generate(
        3).output_ids  # a context of 10**12 (or ignored remote code) changes nothing about the tokens
    if case.name == "absurd_context":
        assert lm.cfg.max_position_embeddings == 10**12 and trace.steps[0].kv["max_seq"] == 2048


@pytest.mark.parametrize("case,kind", [(c, k) for c, k in MODEL_FOLDERS if c.expect == RUNS],
                         ids=[c.name for c, _ in MODEL_FOLDERS if c.expect == RUNS])
def test_model_that_loads_but_cannot_run_fails_at_its_first_step(model_dirs, tmp_path, case, kind):
    """Each fails at the prompt or the first step, typed, and the session stays usable for the next try."""
    folder = case.value(model_dirs[kind], tmp_path / case.name)
    dtype = DTYPE_OF.get(case.name, "fp32")
    lm = load_model(str(folder), dtype=dtype)
    config = EngineConfig(dtype=dtype, sampling=SamplingConfig(temperature=1.0))
    if case.error == "ModelConfigError":
        check_typed(outcome(lambda: Session(lm, "The quick brown fox", config), ERROR), case.error)
        return
    session = Session(lm, "The quick brown fox", config)
    check_typed(outcome(session.step, ERROR), case.error)
    assert session.trace.steps == [] and session.cache.length(0) == 0  # nothing half done


def test_fp16_overflow_is_named_as_such(model_dirs, tmp_path):
    folder = dict((c.name, (c, k)) for c, k in MODEL_FOLDERS)["fp16_overflow"]
    case, kind = folder
    lm = load_model(str(case.value(model_dirs[kind], tmp_path / "m")), dtype="fp16")
    message = check_typed(outcome(lambda: Session(lm, "hello", EngineConfig(dtype="fp16", sampling=GREEDY)).step(),
                                  ERROR), "LogitsNotFiniteError")
    assert "fp16" in message and "bf16" in message
    bf16 = load_model(str(tmp_path / "m"), dtype="bf16")  # the fix it names works
    step = Session(bf16, "hello", EngineConfig(dtype="bf16", sampling=GREEDY)).step()
    assert math.isfinite(float(step.logsumexp[0]))


def test_count():
    assert count() >= 60
    print(f"\nhostile catalogue: {count()} inputs; run through the library so far: {TRIED['library']}")
