"""The trainer end to end in seconds: `python -m llmviz.training --smoke` writes a folder that
transformers loads as a causal LM with its tokenizer, plus the model card and licence notice."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FILES = ("config.json", "generation_config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
         "README.md", "card.json", "NOTICE")


@pytest.fixture(scope="module")
def smoke_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("train") / "tiny"
    done = subprocess.run([sys.executable, "-m", "llmviz.training", "--smoke", "--out", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


def test_smoke_folder_has_every_file(smoke_dir):
    missing = [name for name in FILES if not (smoke_dir / name).is_file()]
    assert not missing
    card = json.loads((smoke_dir / "card.json").read_text())
    for key in ("heldout_perplexity", "corpus_sha256", "train_command", "parameters"):
        assert key in card
    assert card["train_command"].startswith("python -m llmviz.training --smoke")
    assert json.loads((smoke_dir / "tokenizer_config.json").read_text())["tokenizer_class"] == "PreTrainedTokenizerFast"
    assert "Python Software Foundation" in (smoke_dir / "NOTICE").read_text()


def test_smoke_folder_loads_in_transformers(smoke_dir):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(smoke_dir), local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(str(smoke_dir), local_files_only=True, dtype=torch.float32)
    assert type(model).__name__ == "LlamaForCausalLM"
    text = "Return the list. 济南的冬天"
    ids = tok.encode(text, add_special_tokens=False)
    assert tok.decode(ids) == text
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits  # [1, n, V]
    assert logits.shape == (1, len(ids), model.config.vocab_size)
    assert torch.isfinite(logits).all()


def test_entry_point_does_not_import_torch():
    code = "import sys, llmviz.training.__main__; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=60)
