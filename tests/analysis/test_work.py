"""The estimate of a request's engine work (llmviz/analysis/work.py): its arithmetic by hand,
and which side of LIGHT_S the finding's links and a class's ordinary ones fall (the estimate decides what waits in
a public server's heavy queue)."""

import pytest

from llmviz import service
from llmviz.analysis import work
from llmviz.analysis.memory_calc import bundled_text
from llmviz.analysis.predict import Setup, Shape

TINY = {"vocab_size": 10, "hidden_size": 4, "num_layers": 1, "num_heads": 1, "num_kv_heads": 1, "head_dim": 4,
        "intermediate_size": 8, "max_position_embeddings": 16}  # gated MLP, RMSNorm, RoPE, untied tables


def test_one_step_by_hand():
    """3 new tokens, nothing cached. Matmul weights per block: q 4x4, k and v 4x4 each, o 4x4, gate/up/down 3 x 4x8
    = 160; FLOPs 2 x 3 x 160 + the head 2 x 10 x 4 (last token only) + attention 4 x 1 x 4 x (1 + 2 + 3) = 1,136.
    Weights read: (160 + 2 norms x 4) x 4 B + final norm 4 x 4 B + two 10 x 4 tables x 4 B = 1,008 B, less the 9
    embedding rows a step does not read (9 x 4 x 4 B): 864 B."""
    setup = Setup(Shape.from_config(TINY))
    expected = 864 / work.WEIGHT_BYTES_PER_S + 1136 / work.FLOPS_PER_S + work.STEP_S
    assert work.step_seconds(setup, 3, 0) == pytest.approx(expected, rel=1e-12)


def test_a_run_is_its_prefill_and_its_decode_steps_by_hand():
    """Rows of 2 and 3 tokens pad to 3: the prefill feeds 3 to each of 2 rows; then steps at 3 and 4 cached."""
    setup = Setup(Shape.from_config(TINY))
    prefill = work.step_seconds(setup, 3, 0, 2)
    steps = work.step_seconds(setup, 1, 3, 2) + work.step_seconds(setup, 1, 4, 2)
    assert work.run_seconds(TINY, [2, 3], 2) == pytest.approx(prefill + steps, rel=1e-12)
    assert work.run_seconds(TINY, [2, 3], 2, copies=3) == pytest.approx(3 * (prefill + steps), rel=1e-12)
    assert work.decode_seconds(TINY, 2, 3, 2) == pytest.approx(steps, rel=1e-12)
    assert work.run_seconds(TINY, [], 5) == 0 and work.decode_seconds(TINY, 2, 3, 0) == 0


@pytest.fixture(scope="module")
def gpt2() -> dict:
    return service.models.config_from_text(bundled_text("gpt2"))  # GPT-2 124M's shape, gpt2-124m-random's too


@pytest.fixture(scope="module")
def embedded() -> dict:
    return service.models.model_config_dict("llmviz-tiny")


def test_the_findings_links_are_heavy(gpt2):
    """Measured on the 2-core CPU machine before the fix, outside the gate: the KV layouts link (4 prompts of 470
    tokens, 3 layouts, 32 steps) 42 s; the Batch page's prefill of 8 x 500 tokens 10.8 s, its run to the end
    11.4 s. The estimate puts each past LIGHT_S, within a factor of 4 of what was measured."""
    kv = work.run_seconds(gpt2, [470] * 4, 32, copies=3)
    batch = work.run_seconds(gpt2, [500] * 8, 0)
    to_end = work.decode_seconds(gpt2, 8, 500, 63)
    assert 42 / 4 < kv < 42 * 4 and 10.8 / 4 < batch < 10.8 * 4 and 11.4 / 4 < to_end < 11.4 * 4
    assert not any(work.is_light(x) for x in (kv, batch, to_end))


def test_a_class_is_never_queued(embedded, gpt2):
    """The embedded model's run opened at a link's 32 steps, its KV layouts page's own link and its batch examples,
    and one Next of gpt2-124m-random (its steps one click each): light, run at once."""
    assert work.is_light(work.run_seconds(embedded, [4], 32))
    assert work.is_light(work.run_seconds(embedded, [4, 3, 4], 2, copies=3))
    assert work.is_light(work.run_seconds(embedded, [3, 5, 9, 1], 0))
    assert work.is_light(work.decode_seconds(gpt2, 1, 479, 1))
