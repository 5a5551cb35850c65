"""Bad input raises typed errors with a message a person can act on."""

import json
import shutil

import pytest

from llmviz.engine.loading.model import load_model
from llmviz.engine.session import Session
from llmviz.errors import (
    ConfigError,
    DeviceUnavailableError,
    ModelNotCachedError,
    ModelNotFoundError,
    OutOfMemoryError,
    PromptError,
    UnsupportedArchitectureError,
    WeightLoadError,
)
from llmviz.trace.config import EngineConfig
from llmviz.trace.model_config import ModelConfig


def test_missing_path_and_malformed_id():
    with pytest.raises(ModelNotFoundError):
        load_model("./no/such/folder")
    with pytest.raises(ModelNotFoundError, match="valid hub id"):
        load_model("not a model id!")


def test_offline_hub_id_not_cached(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    with pytest.raises(ModelNotCachedError, match="HF_HUB_OFFLINE"):
        load_model("someone/some-model-that-is-not-cached")


def test_unsupported_architecture_names_the_supported_ones(model_dirs, tmp_path):
    folder = tmp_path / "bert"
    shutil.copytree(model_dirs["gpt2"], folder)
    cfg = json.loads((folder / "config.json").read_text())
    cfg["model_type"] = "bert"
    (folder / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(UnsupportedArchitectureError, match="llama, qwen2, mistral, gpt2"):
        load_model(str(folder))


def test_pickle_weights_are_refused(model_dirs, tmp_path):
    folder = tmp_path / "pickled"
    shutil.copytree(model_dirs["gpt2"], folder)
    (folder / "model.safetensors").rename(folder / "pytorch_model.bin")
    with pytest.raises(WeightLoadError, match="never loaded"):
        load_model(str(folder))


def test_shape_mismatch_is_reported(model_dirs, tmp_path):
    folder = tmp_path / "wrong"
    shutil.copytree(model_dirs["qwen2"], folder)
    cfg = json.loads((folder / "config.json").read_text())
    cfg["intermediate_size"] = 80
    (folder / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(WeightLoadError, match="shape"):
        load_model(str(folder))


def test_prompt_errors(model_dirs):
    lm = load_model(str(model_dirs["gpt2"]))
    for empty in ("", "   \n"):
        with pytest.raises(PromptError, match="empty"):
            Session(lm, empty)
    with pytest.raises(PromptError, match="context holds 256"):
        Session(lm, "word " * 400)


def test_bad_settings():
    with pytest.raises(ConfigError):
        EngineConfig(dtype="fp8")
    with pytest.raises(ConfigError):
        EngineConfig(device="tpu")
    with pytest.raises(ConfigError):
        EngineConfig(attn_backend="magic")
    with pytest.raises(ConfigError, match="must divide"):
        ModelConfig(family="llama", vocab_size=10, hidden_size=64, num_layers=1, num_heads=6, num_kv_heads=4,
                    head_dim=8, intermediate_size=32, max_position_embeddings=16)
    with pytest.raises(ConfigError, match="dtype"):
        load_model("llmviz-tiny", dtype="fp64")


def test_cuda_without_a_gpu(model_dirs):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(DeviceUnavailableError, match="no CUDA GPU"):
        load_model(str(model_dirs["gpt2"]), device="cuda")


def test_max_seq_len_beyond_the_context(model_dirs):
    lm = load_model(str(model_dirs["gpt2"]))
    with pytest.raises(ConfigError, match="context of 256"):
        Session(lm, "hello", EngineConfig(max_seq_len=1000))
    with pytest.raises(ConfigError, match="loaded in fp32"):
        Session(lm, "hello", EngineConfig(dtype="bf16"))


def test_out_of_memory_during_a_step_is_typed(model_dirs, monkeypatch):
    import torch



    lm = load_model(str(model_dirs["gpt2"]))
    session = Session(lm, "hello")
    session.step()
    for raised in (torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"),
                   RuntimeError("[enforce fail at alloc_cpu.cpp:117] DefaultCPUAllocator: can't allocate memory")):
        def boom(*args, raised=raised, **kwargs):
            raise raised

        monkeypatch.setattr(lm.model, "forward", boom)
        with pytest.raises(OutOfMemoryError, match=r"step 1 ran out of memory.*shorter prompt"):
            session.step()
    monkeypatch.setattr(lm.model, "forward", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("other bug")))
    with pytest.raises(RuntimeError, match="other bug"):
        session.step()
    monkeypatch.undo()
    assert session.step().index == 1  # the session is still usable after the failures


def test_a_step_that_fails_after_the_cache_moved_leaves_no_trace(model_dirs, monkeypatch):
    """A failure late in a step (after the layers wrote the cache) rolls the cache and the random stream back."""
    from llmviz.trace.config import SamplingConfig

    lm = load_model(str(model_dirs["llama_tied"]))
    cfg = EngineConfig(sampling=SamplingConfig(temperature=1.0), capture="full")
    alone = Session(lm, "hello there", cfg).generate(4).output_ids
    session = Session(lm, "hello there", cfg)
    session.step()
    import llmviz.engine.session as session_module

    calls = {"n": 0}
    original = session_module.record_step

    def fail_once(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("CUDA out of memory while recording")
        return original(*args, **kwargs)

    monkeypatch.setattr(session_module, "record_step", fail_once)
    before = session.cache.length(0)
    with pytest.raises(OutOfMemoryError):
        session.step()
    assert session.cache.length(0) == before and len(session.trace.steps) == 1
    session.generate(4)
    assert session.trace.output_ids == alone  # the retried step drew exactly what an undisturbed run drew


def _edited_copy(src, dst, config_changes=None, generation=None):
    import json
    import shutil

    shutil.copytree(src, dst)
    if config_changes is not None:
        config = json.loads((dst / "config.json").read_text())
        config.pop("rope_parameters", None)
        config.update(config_changes)
        (dst / "config.json").write_text(json.dumps(config))
    if generation is not None:
        (dst / "generation_config.json").write_text(json.dumps(generation))
    return dst


@pytest.mark.parametrize("scaling,needle", [
    ({"rope_type": "llama3", "factor": 8.0}, "malformed"),  # transformers' own check: missing keys
    ({"rope_type": "linear"}, "malformed"),
    ({"rope_type": "linear", "factor": -2}, "factor"),  # transformers only warns about this one
    ({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 4.0, "high_freq_factor": 1.0,
      "original_max_position_embeddings": 64}, "high_freq_factor > low_freq_factor"),
    ("oops", "malformed"),
])
def test_malformed_rope_scaling_is_a_typed_error(model_dirs, tmp_path, scaling, needle):
    from llmviz.errors import ModelConfigError

    folder = _edited_copy(model_dirs["llama_gqa_rope3"], tmp_path / "m", {"rope_scaling": scaling})
    with pytest.raises(ModelConfigError, match=needle):
        load_model(str(folder))


@pytest.mark.parametrize("change,error", [({"n_head": "four"}, "ModelConfigError"), ({"n_head": 3}, "ModelConfigError"),
                                          ({"n_head": None}, "ModelConfigError")])
def test_a_config_with_wrong_sizes_is_a_typed_error(model_dirs, tmp_path, change, error):
    import llmviz.errors

    folder = _edited_copy(model_dirs["gpt2"], tmp_path / "m", change)
    with pytest.raises(getattr(llmviz.errors, error)):
        load_model(str(folder))


def test_eos_ids_from_generation_config_stop_a_run(model_dirs, tmp_path):
    """Llama 3 lists its end-of-turn tokens in generation_config.json only: they stop a run too."""
    from llmviz.trace.config import SamplingConfig

    greedy = EngineConfig(sampling=SamplingConfig(temperature=0))
    plain = load_model(str(model_dirs["llama_tied"]))
    ref = Session(plain, "hello there", greedy.with_(stop_at_eos=False)).generate(6).output_ids
    stop = ref[3]
    assert stop not in ref[:3] and stop not in plain.tokenizer.eos_ids
    folder = _edited_copy(model_dirs["llama_tied"], tmp_path / "m", generation={"eos_token_id": [0, stop]})
    lm = load_model(str(folder))
    assert lm.tokenizer.eos_ids == (0, stop)
    session = Session(lm, "hello there", greedy)
    trace = session.generate(6)
    assert trace.output_ids == ref[:4] and session.finished == "eos"
