"""The model every browser session shares stays read-only: after every page has run its live run and
its measurements on it, its weights, buffers, module attributes and tokenizer are exactly what they were."""

from __future__ import annotations

import hashlib

import pytest
from ui_helpers import EMBEDDED_WEIGHTS, open_app, page_file

pytestmark = pytest.mark.skipif(not EMBEDDED_WEIGHTS.exists(), reason="the pages' measurements use the embedded model")

ACTIONS = {  # page -> the button that runs its measurement on the shared model (a page joins with a line)
    "decode": "Next ▶",
    "compare": "Compare",
    "batch": "Run the prefill",
    "serving": "Run speculative decoding",
}


def fingerprint(lm) -> dict:
    """Every tensor's bytes hashed, every module's attribute names and flags, the tokenizer's attributes."""
    import torch

    out = {}
    for name, t in [*lm.model.named_parameters(), *lm.model.named_buffers()]:
        data = t.detach().to("cpu").contiguous().view(torch.uint8).numpy().tobytes()
        out[name] = (tuple(t.shape), str(t.dtype), t.requires_grad, hashlib.sha256(data).hexdigest())
    for name, module in lm.model.named_modules():
        out[f"module:{name}"] = (module.training, tuple(sorted(module.__dict__)), tuple(module._forward_hooks),
                                 tuple(module._forward_pre_hooks))
    out["tokenizer"] = tuple(sorted((k, repr(v)[:200]) for k, v in vars(lm.tokenizer).items() if k != "hf"))
    out["card"] = (lm.name, str(lm.device), str(lm.dtype), repr(lm.cfg))
    return out


def test_pages_leave_the_shared_model_as_loaded():
    from llmviz.ui.state import model

    lm = model("llmviz-tiny", "auto", "fp32")  # the entry every page reads (llmviz/ui/model_cache.py)
    before = fingerprint(lm)
    for page, label in ACTIONS.items():
        at = open_app(page_file(page), prompt="The list of")
        buttons = [b for b in at.button if b.label == label]
        assert buttons, f"{page} has no button {label!r}: {[b.label for b in at.button]}"
        buttons[0].click().run(timeout=300)
        assert not at.exception, (page, [e.value for e in at.exception])
    assert model("llmviz-tiny", "auto", "fp32") is lm  # still the one entry
    after = fingerprint(lm)
    changed = [k for k in before if before[k] != after.get(k)]
    assert not changed, changed[:10]


def test_pages_write_no_file(tmp_path, monkeypatch):
    """Nothing written outside a temp folder: the pages run from an empty working folder, which stays
    empty, and the project's own folders gain no file."""
    from ui_helpers import ROOT

    def files(folder):
        return {p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts and ".git" not in p.parts
                and ".venv" not in p.parts and ".pytest_cache" not in p.parts and ".ruff_cache" not in p.parts}

    before = files(ROOT)
    monkeypatch.chdir(tmp_path)
    for page, label in {"decode": "Next ▶", "trace": None, "serving": "Run speculative decoding"}.items():
        at = open_app(page_file(page), prompt="The list of")
        if label:
            next(b for b in at.button if b.label == label).click().run(timeout=300)
        assert not at.exception, (page, [e.value for e in at.exception])
    assert list(tmp_path.iterdir()) == []
    assert files(ROOT) - before == set()
