"""Speculative decoding (C16, K8): greedy output is the target's own, self-speculation accepts everything,
the rejection rule gives the target's distribution, and bad pairs are typed errors."""

import pytest
import torch

from llmviz.analysis.serving import predicted_speedup
from llmviz.engine.loading.model import load_model
from llmviz.engine.serving.speculative import Speculator, accept
from llmviz.engine.session import Session
from llmviz.errors import ConfigError
from llmviz.trace.config import EngineConfig, SamplingConfig


@pytest.fixture(scope="module")
def pair():
    return load_model("llmviz-tiny", device="cpu"), load_model("llmviz-tiny-draft", device="cpu")


def target_alone(lm, ids, n):
    cfg = EngineConfig(device="cpu", capture="off", logit_lens_top_k=0, stop_at_eos=False,
                       sampling=SamplingConfig(temperature=0))
    return Session(lm, config=cfg, prompt_ids=[ids]).generate(n).output_ids


@pytest.mark.parametrize("k", [1, 3, 5])
def test_greedy_output_is_the_targets(pair, k):
    target, draft = pair
    ids = target.tokenizer.encode("Return the value of the")
    result = Speculator(target, draft, ids, k, max_new=24).run()
    assert result["output_ids"] == target_alone(target, ids, 24)
    assert 0 < result["acceptance_rate"] < 1  # a real draft is sometimes wrong
    for r in result["rounds"]:
        assert len(r.proposed) <= k and 0 <= r.accepted <= len(r.proposed)
    # the rate a checked draft is kept: a round checks its drafts up to its first rejection, no further
    rejections = sum(1 for r in result["rounds"] if r.accepted < len(r.proposed))
    assert result["acceptance_rate"] == result["accepted"] / (result["accepted"] + rejections)
    assert result["acceptance_rate"] >= result["accepted_share"]


def test_self_speculation_accepts_every_draft(pair):
    target, _ = pair
    ids = target.tokenizer.encode("The list of")
    result = Speculator(target, target, ids, 4, max_new=20).run()
    assert result["acceptance_rate"] == 1.0 and result["output_ids"] == target_alone(target, ids, 20)
    assert len(result["rounds"]) == 4  # 5 tokens a round (4 drafts + the bonus)


def test_rejection_sampling_gives_the_target_distribution():
    """k = 1 on a 5-token vocabulary: the first token kept (the draft's if accepted, else the residual draw)
    follows p, not q (20,000 draws, fixed seed)."""
    p = torch.tensor([[0.5, 0.2, 0.15, 0.1, 0.05], [0.2] * 5])
    q = torch.tensor([[0.1, 0.1, 0.2, 0.3, 0.3]])
    gen = torch.Generator().manual_seed(0)
    counts = torch.zeros(5)
    n = 20_000
    for _ in range(n):
        d = int(torch.multinomial(q[0], 1, generator=gen))
        kept, token = accept(p, q, [d], gen)
        counts[d if kept == 1 else token] += 1
    assert torch.allclose(counts / n, p[0], atol=0.012), counts / n
    assert abs(counts[3] / n - q[0, 3]) > 0.15  # far from the draft's own distribution


def test_predicted_speedup_by_hand():
    assert predicted_speedup(0.5, 2, 0.25) == pytest.approx(1.75 / 1.5)  # (1 - 0.5^3) / 0.5 tokens, 1.5 steps
    assert predicted_speedup(1.0, 4, 0.1) == pytest.approx(5 / 1.4)
    assert predicted_speedup(0.0, 4, 0.1) == pytest.approx(1 / 1.4)


def test_bad_pairs_and_settings(pair, model_dirs):
    target, draft = pair
    ids = target.tokenizer.encode("The list of")
    for k in (0, -1, 17):
        with pytest.raises(ConfigError, match="k"):
            Speculator(target, draft, ids, k)
    other = load_model(str(model_dirs["gpt2"]), device="cpu")
    with pytest.raises(ConfigError, match="another tokenizer or vocabulary"):
        Speculator(target, other, ids, 2)
    with pytest.raises(ConfigError, match="repetition"):
        Speculator(target, draft, ids, 2, sampling=SamplingConfig(temperature=1.0, repetition_penalty=1.2))
    with pytest.raises(ConfigError, match="context"):
        Speculator(target, draft, ids, 4, max_new=600)


def test_a_last_round_that_keeps_every_draft_is_described(pair):
    """Self-speculation keeps every draft, so the last round's bonus token overshoots and is trimmed: the
    page still names it (it once raised a KeyError)."""
    from llmviz import service

    target, _ = pair
    result = service.measure.speculate(target, target, "import numpy as np", 2, max_new=7)
    assert result["identical_outputs"] and result["acceptance_rate"] == 1.0
    assert all(r.token in result["tokens"] and set(r.proposed) <= set(result["tokens"]) for r in result["rounds"])
    # rounds of 3 and 3 tokens, then k clipped to the 1 token left: 1 draft + the bonus, one token too many
    assert [len(r.proposed) for r in result["rounds"]] == [2, 2, 1]
    assert len(result["output_ids"]) == 7 and sum(r.accepted + 1 for r in result["rounds"]) == 8


def test_max_new_must_be_positive(pair):
    target, draft = pair
    for n in (0, -3):
        with pytest.raises(ConfigError, match="max_new"):
            Speculator(target, draft, [1, 2], 2, max_new=n)


@pytest.mark.parametrize("seed", [2**64, 2**70, -(2**63) - 1, True])
def test_a_seed_torch_cannot_take_is_a_config_error(pair, seed):
    """speculative --seed >= 2**64 was an OverflowError: bounded as generate bounds its seed."""
    target, draft = pair
    with pytest.raises(ConfigError, match=r"seed must be an integer in \[-2\*\*63, 2\*\*64\)"):
        Speculator(target, draft, [1, 2], 2, seed=seed, max_new=2)


def test_the_largest_seed_runs_and_the_baseline_keeps_no_logits(pair, monkeypatch):
    from llmviz.labs.speculative import alone_decode

    target, draft = pair
    result = Speculator(target, draft, [5, 6, 7], 2, SamplingConfig(temperature=1.0, top_k=0), 2**64 - 1, 4).run()
    assert len(result["output_ids"]) == 4
    expected = target_alone(target, [5, 6, 7], 5)
    steps, real_step = [], Session.step

    def spy(self):
        steps.append(real_step(self))
        return steps[-1]

    monkeypatch.setattr(Session, "step", spy)
    ids, _ = alone_decode(target, [5, 6, 7], 5)
    assert ids == expected and len(steps) == 5 and all(s.logits is None for s in steps)


def test_a_recorded_round_is_the_targets_step_over_its_drafts(pair):
    """Issue 37: at capture full a round's verification is a StepTrace. Teacher-forced oracle: the target alone
    prefilling the same tokens (the text so far, then the round's drafts) attends from those k + 1 positions as the
    verification did, and its logits at the position the round's token came from are the recorded ones."""
    target, draft = pair
    ids = target.tokenizer.encode("Return the value of the")
    spec = Speculator(target, draft, ids, 3, max_new=12, capture="full", capture_rounds=(1, 2))
    result = spec.run()
    assert sorted(spec.steps) == [1, 2]  # only the rounds asked for
    text = list(ids)
    for r, rnd in enumerate(result["rounds"]):
        fed = [text[-1], *rnd.proposed]  # x, d1..dk
        if r in spec.steps:
            step, n = spec.steps[r], len(fed)
            assert step.input_ids.tolist() == [fed] and step.positions.tolist() == [list(range(len(text) - 1,
                                                                                                 len(text) - 1 + n))]
            assert int(step.sampled[0]) == rnd.token and step.kv["seq_len"] == len(text) - 1 + n  # before the cut
            cfg = EngineConfig(device="cpu", capture="full", logit_lens_top_k=0, stop_at_eos=False)
            alone = Session(target, config=cfg, prompt_ids=[text + list(rnd.proposed[:rnd.accepted])])
            oracle = Session(target, config=cfg, prompt_ids=[text[:-1] + fed]).step()
            last = target.cfg.num_layers - 1
            probs = step.hook(f"layers.{last}.probs").array[0]  # [h, k+1, n_k]
            want = oracle.hook(f"layers.{last}.probs").array[0, :, -n:, :]  # the same k + 1 queries, teacher-forced
            assert probs.shape == want.shape
            torch.testing.assert_close(torch.from_numpy(probs), torch.from_numpy(want), atol=1e-5, rtol=0)
            logits = alone.step().logits[0]  # the target's next-token logits after x, d1..d_kept
            torch.testing.assert_close(torch.from_numpy(step.logits[0]), torch.from_numpy(logits), atol=2e-4,
                                       rtol=1e-4)
        text += [*rnd.proposed[:rnd.accepted], rnd.token]
    with pytest.raises(ConfigError, match="capture must be one of"):
        Speculator(target, draft, ids, 2, capture="everything")
