"""The model types a trace may name are declared once in the contract (trace/model_config.py, torch-free) and
implemented by exactly the engine's families (engine/models/): the two lists cannot drift apart."""

from llmviz.engine.models import FAMILIES, gpt2, llama
from llmviz.engine.models.family import Family
from llmviz.trace.check import CARD
from llmviz.trace.model_config import SUPPORTED_MODEL_TYPES


def test_the_declared_model_types_are_the_families_the_engine_implements():
    assert tuple(FAMILIES) == SUPPORTED_MODEL_TYPES
    assert set(llama.MODEL_TYPES) | set(gpt2.MODEL_TYPES) == set(SUPPORTED_MODEL_TYPES)
    ok, _ = CARD["family"]  # a replayed trace's card is checked against the same names
    assert all(ok(t) for t in SUPPORTED_MODEL_TYPES) and not ok("bert")


def test_every_family_module_follows_the_protocol():
    for module in {*FAMILIES.values()}:
        assert isinstance(module, Family), module.__name__
    assert not isinstance(object(), Family)  # the check can fail: a thing without the four names is no family
    # what the loader asks of one, on a name whose mapping is known: GPT-2's first block's fused QKV
    assert gpt2.hf_to_ours("h.0.attn.c_attn.weight") == "layers.0.attn.qkv_proj.weight"
    assert llama.hf_to_ours("model.layers.0.self_attn.q_proj.weight") == "layers.0.attn.q_proj.weight"
