"""Property: any text prompt either runs and survives tokenizer -> engine -> trace saved and loaded unchanged,
or is refused with a PromptError (empty, a lone surrogate, longer than the context) and nothing else."""

from __future__ import annotations

import tempfile
from datetime import timedelta
from pathlib import Path

import numpy as np
from hostile_helpers import time_limit
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmviz.engine.session import Session
from llmviz.errors import PromptError
from llmviz.trace.config import EngineConfig, SamplingConfig
from llmviz.trace.records import load_trace, trace_from_zip, trace_to_zip

PIECES = st.one_of(
    st.text(max_size=20),  # any Unicode scalar value (hypothesis leaves surrogates out here)
    st.text(st.characters(max_codepoint=0x1F), max_size=4),  # control characters, NUL included
    st.text(st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF), max_size=6),  # CJK
    st.sampled_from(["👩\u200d👩\u200d👧\u200d👦", "🇨🇳", "👍🏽", "1\ufe0f\u20e3", "\u202e", "\u2067", "\ufeff", " ",
                     "\n", "\t", "<|endoftext|>", "e\u0301", "مرحبا", "שלום", "The list of"]),
    st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF, categories=["Cs"]),  # a lone surrogate
)
PROMPTS = st.lists(PIECES, max_size=6).map("".join)
CONFIG = EngineConfig(sampling=SamplingConfig(temperature=0), capture="meta", stop_at_eos=False)


def _same(a, b) -> None:
    assert (a.prompt, a.prompts, a.prompt_ids, a.output_ids) == (b.prompt, b.prompts, b.prompt_ids, b.output_ids)
    assert a.tokens == b.tokens and len(a.steps) == len(b.steps)
    for x, y in zip(a.steps, b.steps, strict=True):
        for key in ("input_ids", "positions", "sampled", "logits", "topk_ids", "topk_logits", "logsumexp"):
            np.testing.assert_array_equal(getattr(x, key), getattr(y, key), err_msg=key)
        assert [h.name for h in x.hooks] == [h.name for h in y.hooks] and x.kv == y.kv


@settings(max_examples=25, deadline=timedelta(seconds=5), database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(prompt=PROMPTS)
def test_any_prompt_round_trips_or_is_a_prompt_error(tiny, prompt):
    tok, limit = tiny.tokenizer, tiny.cfg.max_position_embeddings
    lone_surrogate = any("\ud800" <= c <= "\udfff" for c in prompt)
    with time_limit(20):
        try:
            ids = tok.encode(prompt)
        except PromptError:
            assert lone_surrogate or not prompt.strip()
            return
        assert not lone_surrogate and prompt.strip()
        assert tok.decode(ids) == prompt  # byte-level BPE loses nothing: NUL, RTL marks, emoji, CJK
        assert b"".join(tok.token_bytes(i) for i in ids) == prompt.encode("utf-8")
        try:
            trace = Session(tiny, prompt, CONFIG).generate(3)
        except PromptError:
            assert len(ids) >= limit  # too long for the context: the one other refusal
            return
        assert trace.prompt_ids == ids and all(int(s.sampled[0]) == int(s.logits[0].argmax()) for s in trace.steps)
        with tempfile.TemporaryDirectory() as tmp:
            _same(load_trace(trace.save(Path(tmp) / "trace")), trace)
        _same(trace_from_zip(trace_to_zip(trace)), trace)
