"""The Serving page's runs, kept in this browser session (C15, C16, C22): a trace through static and
continuous batching, one of its steps run again and recorded, prefix sharing on and off, a speculative run; each
with a progress bar (llmviz.ui.measure)."""

from __future__ import annotations

import math
import time
from dataclasses import asdict

from llmviz.errors import LlmvizError
from llmviz.trace.config import EMBEDDED_DRAFT, EMBEDDED_MODEL, SamplingConfig
from llmviz.ui import measure, server
from llmviz.ui.errors import explain

BATCHING_KEY, SHARING_KEY, SPEC_KEY = "llmviz_serve_batching", "llmviz_serve_sharing", "llmviz_serve_spec"
LOOK_KEY = "llmviz_serve_look"  # a look inside one step of either scheduler (ui/serving/serving_step.py draws it)
SPEC_LOOK_KEY = "llmviz_serve_spec_look"  # one speculative round run again, its verification recorded
OPEN_KEY = "llmviz_serve_open"  # one request of that run up to that step, as its own run (the Decode, Prefill views)
TRACES = ("mixed", "mixed-poisson", "shared-prompt")  # built in (assets/traces); their ids are the embedded tokenizer's
SERVE_MODELS = ("llmviz-tiny", "gpt2-124m-random")  # models that share that tokenizer
TARGET = EMBEDDED_MODEL
DRAFTS = (EMBEDDED_DRAFT, TARGET)  # its trained 2-layer draft, or itself (self-speculation: a sanity check)
SPEC_TOKENS = 32  # of the embedded model: short (service.measure.speculate reports no progress, so a spinner shows)
REPORT_EVERY_S = 0.1  # the progress bar moves at most this often


def _steps(t, progress: measure.Progress, every_s: float = REPORT_EVERY_S):
    """The serving loop's report (fraction, stage, {step: n}) as the bar's text, passed on at most every `every_s`
    seconds: each is a message to the browser, and a run of 10,000 steps sent 10,000. The bar's
    deadline is checked as often (a run past its limit stops within `every_s` of it)."""
    last = [-math.inf]  # this run's own clock, in its closure

    def report(fraction: float, stage: str, values: dict) -> None:
        now = time.monotonic()
        if now - last[0] >= every_s:
            last[0] = now
            progress(fraction, t("serving.progress", **values))

    return report


def uploaded_trace(t, data: bytes, name: str):
    """A RequestTrace from an uploaded file, or None with the reason shown (a TraceFormatError)."""
    from llmviz import service

    try:
        server.policy().check_upload(len(data))
        return service.replay.read_trace(data, name)
    except LlmvizError as exc:
        explain(t, exc)
        return None


def batching(t, wanted: tuple, trace) -> dict | None:
    """The trace (a built-in name or a RequestTrace) through static, then continuous batching; `wanted`
    = (device, model, the trace's key, slots, backend, layout) keeps the result for these settings."""
    from llmviz import service

    device, model, _, slots, backend, layout = wanted

    def work(queued):
        lm = server.model(model, device, "fp32")
        # before the queue: a trace too long for a sequence, or (public mode) more work than a turn may take,
        # is refused with its figures (1,024 requests x 2,047 tokens held the slot for hours), static
        # batching's padding in these slots included (1,080 tokens were 16,320 in 16 slots)
        service.serving.check_serving_work(lm, trace, server.policy().public, slots)
        with queued() as progress:
            service.serving.warm_up_serving(lm, slots, device, backend, layout)
            return {name: service.serving.serve(lm, trace, name, _steps(t, progress), slots=slots, device=device,
                                                backend=backend, layout=layout) for name in ("static", "continuous")}

    return measure.run(t, BATCHING_KEY, wanted, work, text=t("serving.progress", step=0))


def sharing(t, device: str, model: str, slots: int) -> dict | None:
    """The shared-prompt trace through continuous batching without and with prefix sharing."""
    from llmviz import service

    def work(queued):
        lm = server.model(model, device, "fp32")
        with queued() as progress:
            return {on: service.serving.serve(lm, "shared-prompt", "continuous", _steps(t, progress), slots=slots,
                                              device=device, prefix_sharing=on) for on in (False, True)}

    return measure.run(t, SHARING_KEY, (device, model, slots), work, text=t("serving.progress", step=0))


def speculative(t, wanted: tuple) -> dict | None:
    """wanted = (device, prompt, k, draft, temperature, seed, backend, layout): the embedded model verifies `draft`'s
    proposals (its own 2-layer draft, or itself: self-speculation), greedy at temperature 0."""
    from llmviz import service

    device, prompt, k, draft_name, temperature, seed, backend, layout = wanted

    def work(queued):
        target, draft = server.model(TARGET, device, "fp32"), server.model(draft_name, device, "fp32")
        with queued():
            return service.measure.speculate(target, draft, prompt, k, SPEC_TOKENS,
                                             SamplingConfig(temperature=temperature), seed, backend, layout)

    return measure.run(t, SPEC_KEY, wanted, work, spinner=t("serving.spec_running"))


def speculative_round(t, wanted: tuple, index: int) -> dict | None:
    """The speculative run of `wanted` again (its rounds are the same for its seed), round `index`'s verification
    recorded at capture full: {"step": its StepTrace, "rounds", "tokens"}."""
    from llmviz import service

    device, prompt, k, draft_name, temperature, seed, backend, layout = wanted

    def work(queued):
        target, draft = server.model(TARGET, device, "fp32"), server.model(draft_name, device, "fp32")
        with queued():
            return service.serving.speculative_round(target, draft, prompt, k, index, SPEC_TOKENS,
                                                     SamplingConfig(temperature=temperature), seed, backend, layout)

    return measure.run(t, SPEC_LOOK_KEY, (*wanted, index), work, spinner=t("serving.spec_running"))


def look(t, wanted: tuple, requests, step: int, scheduler: str = "continuous") -> dict | None:
    """wanted = (device, model, trace key, slots, backend, layout): `scheduler` batching of `requests` up to `step`,
    that step recorded. The result is kept for (wanted, step, scheduler)."""

    def work(queued):
        return _recorded(t, queued, wanted, requests, scheduler, (step,), step)[1]

    return measure.run(t, LOOK_KEY, (*wanted, step, scheduler), work, text=t("serving.progress", step=0))


def _recorded(t, queued, wanted: tuple, requests, scheduler: str, steps: tuple, until: int):
    """(model, the run): `scheduler` batching of `requests` up to `until`, `steps` recorded at capture full, in a
    public server's queue (what a look and an opened request both run)."""
    from llmviz import service

    device, model, _, slots, backend, layout = wanted
    lm = server.model(model, device, "fp32")
    with queued() as progress:
        return lm, service.serving.serve(lm, requests, scheduler, _steps(t, progress), slots=slots, device=device,
                                         backend=backend, layout=layout, capture="full", capture_steps=steps,
                                         until=until)


def open_request(t, wanted: tuple, requests, step: int, rid: int, records: list, scheduler: str = "continuous"):
    """wanted = (device, model, trace key, slots, backend, layout): `scheduler` batching of `requests` up to `step`,
    the steps where request `rid` ran recorded at capture full (`records`: the look's run up to `step` says which;
    not where its row was idle), and its rows read out as its own one-row RunTrace (llmviz/trace/rows.py), each step
    with the request's own sampling and seed, which the Decode and Prefill pages replay."""
    from llmviz import service
    from llmviz.trace.config import EngineConfig
    from llmviz.trace.rows import request_rows, request_run, request_steps
    from llmviz.ui.trace_file import ids_text

    device = wanted[0]
    ran = tuple(index for index, _, _ in request_rows(records, rid, step))

    def work(queued):
        request = next(r for r in service.replay.requests_of(requests).requests if r.id == rid)
        lm, result = _recorded(t, queued, wanted, requests, scheduler, ran, step)
        steps = request_steps(result["steps"], result["records"], rid, step)
        layout = {"kv_layout": result["layout"], "attn_backend": result["backend"],
                  **({"kv_block_size": result["block_size"]} if "block_size" in result else {})}
        config = EngineConfig(device=device, capture="full", sampling=request.sampling, seed=request.seed,
                              stop_at_eos=False, **layout)
        tokens, sampling = result["tokens"], {**asdict(request.sampling), "seed": request.seed}
        return request_run(steps, lm.card(), config.to_dict(), request.seed, tokens,
                           ids_text(tokens, list(request.prompt_ids)), sampling, result["records"][:step + 1])

    return measure.run(t, OPEN_KEY, (*wanted, step, rid, scheduler), work, text=t("serving.progress", step=0))
