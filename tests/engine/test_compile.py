"""torch.compile of the decode step (C10): exact against eager, no recompilation as the sequence grows,
and the first call's compile time reported apart. Slow (compilation takes tens of seconds on a CPU):
CI runs it as a second step, `pytest -m slow`."""

import numpy as np
import pytest

from llmviz.engine.loading.model import load_model
from llmviz.engine.session import Session
from llmviz.errors import ConfigError
from llmviz.trace.config import EngineConfig, SamplingConfig

pytestmark = pytest.mark.slow
PROMPT = "Return the value of the function"
STEPS = 17  # the prefill + 16 decode steps


def test_compiled_decode_equals_eager():
    import torch._dynamo

    lm = load_model("llmviz-tiny")
    cfg = EngineConfig(sampling=SamplingConfig(temperature=0), stop_at_eos=False, max_seq_len=64)
    eager = Session(lm, PROMPT, cfg).generate(STEPS)
    session = Session(lm, PROMPT, cfg.with_(compile=True))
    session.generate(3)  # the prefill and two compiled decode steps
    graphs = dict(torch._dynamo.utils.counters["stats"])
    compiled = session.generate(STEPS)
    assert compiled.output_ids == eager.output_ids
    for a, b in zip(eager.steps, compiled.steps, strict=True):
        assert np.abs(a.logits - b.logits).max() <= 1e-4
    spans = [list(s.timings["spans_ms"]) for s in compiled.steps]
    assert "compile + forward" in spans[1] and all("forward (compiled)" in s for s in spans[2:])
    states = [s.timings.get("compile") for s in compiled.steps]  # the field the lab reads, not the span labels
    assert states[0] is None and states[1] == "compiled now" and set(states[2:]) == {"reused"}
    first = compiled.steps[1].timings["total_ms"]
    steady = sorted(s.timings["total_ms"] for s in compiled.steps[2:])[7]
    assert first > 20 * steady  # the compile time shows in the first call only
    assert dict(torch._dynamo.utils.counters["stats"]) == graphs  # static shapes: no new graph as it grows


@pytest.mark.parametrize("change,needle", [({"kv_layout": "paged"}, "contiguous"), ({"capture": "meta"}, "capture off"),
                                           ({"sliding_window": 8}, "sliding window")])
def test_compile_refuses_shapes_that_change(change, needle):
    with pytest.raises(ConfigError, match=needle):
        Session(load_model("llmviz-tiny"), PROMPT, EngineConfig(compile=True, **change))


def test_a_graph_the_compiler_cannot_lower_is_a_config_error():
    """Inductor cannot lower PyTorch's CPU int4 kernel: the step says so and names the fix (no traceback)."""
    lm = load_model("llmviz-tiny", quant="int4")
    if lm.options["kernels"].get("torch", 0) == 0:
        pytest.skip("this device runs int4 through the reference, which compiles")
    session = Session(lm, PROMPT, EngineConfig(compile=True, quant="int4", stop_at_eos=False))
    session.step()  # the prefill runs eager
    with pytest.raises(ConfigError, match="run without compile"):
        session.step()
    assert len(session.trace.steps) == 1 and session.cache.length(0) == len(session.sequences[0].ids) - 1
