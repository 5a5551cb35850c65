"""The Compare page's state: which comparison the settings name, its prediction before it runs, running it
with a progress bar on the shared model cache, and its result kept in this browser session (C8-C11, C14,
C19-C21).
"""

from __future__ import annotations

import streamlit as st

from llmviz import service
from llmviz.analysis.predict import Prediction, Setup, Shape, predict
from llmviz.trace.config import SamplingConfig, default_max_seq
from llmviz.trace.switches import parse_spec
from llmviz.ui import measure, server
from llmviz.ui.settings import Settings

RESULT_KEY, BANDWIDTH_KEY = "llmviz_compare", "llmviz_bandwidth"


def model_of(s: Settings) -> str:
    return s.compare.model or s.model


def key_of(s: Settings) -> tuple:
    """What a comparison depends on: change any of these and the shown result is another comparison's."""
    c = s.compare
    return model_of(s), s.device, s.prompt, s.seed, c.a, c.b, c.steps, c.repeats, c.ppl


def base_model(s: Settings):
    """The model as stored (fp32, no load-time switch): its shape and tokenizer feed the prediction."""
    return server.model(model_of(s), s.device, "fp32")


def max_seq(s: Settings) -> int:
    """The slots a session of the compared model holds (its context, capped as a session caps it)."""
    return default_max_seq(base_model(s).card()["config"]["max_position_embeddings"])


def preview(s: Settings) -> tuple[Prediction, Prediction, int]:
    """What arithmetic predicts for A and B before anything runs (bandwidth: this session's last probe)."""
    lm = base_model(s)
    config = lm.card()["config"]
    shape = Shape.from_config(config)
    n = len(service.models.tokens(lm, s.prompt))
    max_seq = default_max_seq(config["max_position_embeddings"])
    gbps = st.session_state.get(BANDWIDTH_KEY, {}).get(str(lm.device))  # this device's last probe
    sides = [predict(Setup.of(shape, parse_spec(spec), max_seq), n, s.compare.steps, gbps)
             for spec in (s.compare.a, s.compare.b)]
    return sides[0], sides[1], n


def shown_result(s: Settings) -> dict | None:
    return measure.kept(RESULT_KEY, key_of(s))


def run(t, s: Settings) -> dict | None:
    """Run the comparison the settings name, with a progress bar; None (and a message) when it cannot run."""
    def work(queued):
        config = service.CompareConfig(prompt=s.prompt, a=s.compare.a, b=s.compare.b, model=model_of(s),
                                       steps=s.compare.steps, repeats=s.compare.repeats, seed=s.seed, device=s.device,
                                       sampling=SamplingConfig(temperature=0), perplexity=bool(s.compare.ppl))
        with queued() as progress:
            return service.measure.compare(config, server.load, lambda f, stage, values: progress(
                f, t(f"progress.compare.{stage}", **values)))

    result = measure.run(t, RESULT_KEY, key_of(s), work, text=t("progress.compare.load", side="A"))
    if result is None:
        return None
    st.session_state[BANDWIDTH_KEY] = {**st.session_state.get(BANDWIDTH_KEY, {}),
                                       result["device"]: result["bandwidth"]["gb_per_s"]}
    return result
