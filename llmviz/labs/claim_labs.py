"""The labs a claim's declaration names (llmviz/analysis/claim_spec.Lab): one function per lab kind,
never one per claim. Each is handed the Measurer (its plan, progress, shared models and decode pairs) and the
claim, reads the workload from the claim's lab options, and returns the plain figures the claim's rule reads
(numbers, {median, min, max, all} spreads, the model, what was timed)."""

from __future__ import annotations

from dataclasses import asdict, is_dataclass

from llmviz.analysis.claim_spec import SERVING_SLOTS, ClaimSpec
from llmviz.engine.loading.model import LoadedModel
from llmviz.engine.serving.continuous import ServeConfig
from llmviz.engine.serving.requests import load_trace
from llmviz.engine.serving.schedulers import serve, warm_up
from llmviz.engine.timing import spread
from llmviz.i18n.translator import timed
from llmviz.labs.batch_sweep import batch_sweep
from llmviz.labs.decode_pair import claim_figures
from llmviz.labs.layout_sweep import LONG, SHORT, default_lengths, layout_sweep, sweep_max_seq
from llmviz.labs.prefill_timing import attention_ms, prefill_sweep, text_ids
from llmviz.labs.rounds import CONTROL
from llmviz.labs.speculative import alone_decode, speculate
from llmviz.trace.config import EMBEDDED_DRAFT, LAYOUT_SWEEP_BACKEND, LAYOUT_SWEEP_BLOCK, LAYOUT_SWEEP_STEPS
from llmviz.trace.progress import within

SLOTS = SERVING_SLOTS  # the serving claims' slots, declared beside the claims


def prefill_lab(m, claim: ClaimSpec) -> dict:
    """Prefill time against the prompt's length in rounds (prefill_timing.prefill_sweep), the claim's lengths for
    a quick or a full run, its `control` length (options["control"](lengths)[0]) once more in each round."""
    o = claim.lab.options
    lm = m.model(m.model_name(claim))
    lengths = o["quick"] if m.plan.quick else o["full"]
    control = o["control"](lengths)[0] if "control" in o else None
    return prefill_sweep(lm, lengths, m.plan.repeats, device=m.plan.device, control=control,
                         progress=within(m.progress, 0.0, 1.0, claim.id))


def pair_lab(m, claim: ClaimSpec) -> dict:
    """The decode pair of the claim's Compare preset at the plan's long context (labs/decode_pair.py); one run
    serves every claim of that preset in a claims run."""
    return claim_figures(m.pair(claim.lab.options["preset"]))


def layouts_lab(m, claim: ClaimSpec) -> dict:
    """The KV layouts page's sweep at the lengths the claim is judged at (layout_lengths)."""
    lm = m.model(m.model_name(claim))
    sweep = layout_sweep(lm, layout_lengths(sweep_max_seq(lm), m.plan.quick), steps=LAYOUT_SWEEP_STEPS,
                         repeats=m.plan.repeats, progress=within(m.progress, 0.0, 1.0, claim.id),
                         block_size=LAYOUT_SWEEP_BLOCK, backend=LAYOUT_SWEEP_BACKEND)
    return {k: sweep[k] for k in ("lengths", "ms_per_token", "kv", "what_was_timed", "timed", "seconds", "control")
            if k in sweep} | {"model": lm.name, **m.where(lm)}


def layout_lengths(max_seq: int, quick: bool) -> list[int]:
    """The layout claim's lengths are the KV layouts page's automatic ones (one measurement per claim):
    in a quick run only those it is judged at (512, and the longest past 1,024), all of them in a full one. Each
    length's rounds run on their own, so the page's other lengths change nothing at these."""
    lengths = default_lengths(max_seq, LAYOUT_SWEEP_STEPS)
    return [n for n in lengths if n == SHORT or n == lengths[-1] > LONG] if quick else lengths


def batch_lab(m, claim: ClaimSpec) -> dict:
    """Batch sizes of copies of one held-out prompt (labs/batch_sweep.py): the Batch page's sweep."""
    lm = m.model(m.model_name(claim))
    work = batch_workload(claim, lm, m.plan.repeats)
    sweep = batch_sweep(lm, work["prompt"], sizes=claim.lab.options["sizes"], steps=work["steps"],
                        repeats=work["repeats"], device=m.plan.device, progress=within(m.progress, 0.0, 1.0, claim.id))
    return {k: sweep[k] for k in ("sizes", "model", "device", "threads", "prompt_tokens", "what_was_timed",
                                  "timed", "control")}


def batch_workload(claim: ClaimSpec, lm: LoadedModel, repeats: int) -> dict:
    """A batch claim's prompt (its `tokens` of held-out text: a 3-token prompt leaves a CPU's cores idle at batch
    1, and batching looks far better there than on a prompt that already fills them), steps and rounds."""
    o = claim.lab.options
    return {"prompt": text_ids(lm, o["tokens"]), "tokens": o["tokens"], "steps": o["steps"], "repeats": repeats}


def attention_lab(m, claim: ClaimSpec) -> dict:
    """One layer's attention alone on the model's whole context, the claim's backends interleaved in rounds, the
    first once more in each round (prefill_timing.attention_ms)."""
    lm = m.model(m.model_name(claim))
    backends = tuple(claim.lab.options["backends"])
    ids = text_ids(lm, lm.cfg.max_position_embeddings - 1)  # the whole context: 2047 tokens and one slot
    m.progress(0.0, claim.id, {"what": "q, k, v"})
    out = attention_ms(lm, ids, backends, m.plan.repeats,
                       lambda i, name: m.progress((i + 1) / (len(backends) + 1), claim.id, {"what": name}),
                       control=True)
    again = out.pop(CONTROL)  # the first backend once more in each round: the A-vs-A floor
    return {"model": lm.name, "tokens": len(ids), "layer": 0, "attention_ms": out, "control_ms": again,
            **m.where(lm), **timed(claim.lab.options["timed"])}


def serving_lab(m, claim: ClaimSpec) -> dict:
    """The claim's request trace served once per run it names ({name: scheduler and options}), with the trace's
    facts a count depends on: the requests' output lengths, the prefix every prompt shares."""
    o = claim.lab.options
    lm = m.model(m.model_name(claim))
    runs = {}
    for i, (name, run) in enumerate(o["runs"].items()):
        m.progress(i / len(o["runs"]), claim.id, {"what": name})
        options = {k: v for k, v in run.items() if k != "scheduler"}
        config = ServeConfig(slots=SLOTS, device=m.plan.device, **options)
        if "serving warm" not in m.memo:  # untimed runs pay the one-time costs
            warm_up(lm, config)
            m.memo["serving warm"] = True
        runs[name] = plain(serve(lm, load_trace(o["trace"]), run["scheduler"], config))
    return {"trace": o["trace"], "slots": SLOTS, **runs, **trace_facts(o["trace"]), "model": lm.name, **m.where(lm),
            **timed(o["timed"], slots=SLOTS)}


def trace_facts(name: str) -> dict:
    """What a count over a request trace depends on: its requests' output lengths, the prefix every prompt shares
    (position by position up to the shortest prompt) and a prompt's mean length."""
    requests = load_trace(name).requests
    lengths, prompts = [r.output_len for r in requests], [r.prompt_ids for r in requests]
    columns = zip(*prompts, strict=False)
    shared = next((i for i, ids in enumerate(columns) if len(set(ids)) > 1), min(map(len, prompts)))
    return {"output_lens": [min(lengths), max(lengths)], "requests": len(requests), "shared_prefix_tokens": shared,
            "prompt_tokens_mean": sum(map(len, prompts)) / len(prompts)}


def plain(result: dict) -> dict:
    """A serving result with its step records as dicts (JSON-ready)."""
    return {**result, "records": [asdict(r) if is_dataclass(r) else r for r in result["records"]]}


def speculative_lab(m, claim: ClaimSpec) -> dict:
    """Speculative decoding with the embedded draft against the target alone in each round, and the target alone
    once more as the control (labs/speculative.py)."""
    o = claim.lab.options
    target, draft = m.model(m.model_name(claim)), m.model(EMBEDDED_DRAFT)
    runs, again = [], []
    for r in range(m.plan.repeats):
        m.progress(r / m.plan.repeats, claim.id, {"round": r + 1})
        runs.append(speculate(target, draft, o["prompt"], o["k"], o["tokens"]))
        again.append(alone_decode(target, runs[-1]["prompt_ids"], o["tokens"])[1])
    return {"model": target.name, "draft": EMBEDDED_DRAFT, "k": o["k"], "tokens": o["tokens"],
            "speculative_ms_per_token": spread([x["ms_per_token"] for x in runs]),
            "target_alone_ms_per_token": spread([x["target_alone_ms_per_token"] for x in runs]),
            "control_alone_ms_per_token": spread(again), "acceptance_rate": runs[-1]["acceptance_rate"],
            "identical_outputs": all(x["identical_outputs"] for x in runs), **m.where(target),
            **timed(o["timed"], repeats=m.plan.repeats)}


LABS = {"prefill_sweep": prefill_lab, "decode_pair": pair_lab, "layout_sweep": layouts_lab, "batch_sweep": batch_lab,
        "attention": attention_lab, "serving": serving_lab, "speculative": speculative_lab}
