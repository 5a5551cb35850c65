"""Home: run the engine on a prompt and show its tokens, the generated text and the KV cache."""

import streamlit as st

from llmviz import service
from llmviz.engine.config import ATTN_BACKENDS, DTYPES, EngineConfig, SamplingConfig
from llmviz.errors import LlmvizError
from llmviz.ui.state import load_or_explain

EXAMPLES = ("The list of", "Return the", "This module provides", "济南的冬天")


def settings() -> tuple[str, str, str, str, int, float]:
    with st.sidebar:
        st.header("Model")
        name = st.text_input("Model (embedded, hub id or local folder)", service.EMBEDDED_MODEL)
        device = st.selectbox("Device", ("auto", "cpu", "cuda", "mps"))
        dtype = st.selectbox("Dtype", DTYPES)
        attn = st.selectbox("Attention backend", ATTN_BACKENDS, index=1)
        new_tokens = st.slider("New tokens", 1, 64, 16)
        temperature = st.slider("Temperature (0 = greedy)", 0.0, 1.5, 0.7, 0.05)
    return name, device, dtype, attn, new_tokens, temperature


def show_run(lm, trace) -> None:
    tokens = trace.tokens
    st.subheader(f"Prompt: {len(trace.prompt_ids)} tokens (vocab {lm.cfg.vocab_size:,})")
    st.dataframe([{"position": i, "id": t, "piece": tokens[t]["piece"], "bytes": tokens[t]["bytes"]}
                  for i, t in enumerate(trace.prompt_ids)], hide_index=True)
    text = service.generated_text(lm, trace)
    st.subheader("Generated")
    st.markdown(f"**{trace.prompt}**{text}")
    last = trace.steps[-1]
    kv = last.kv
    cols = st.columns(4)
    cols[0].metric("KV cache used", f"{kv['bytes_used']:,} B", help="read from the allocated tensors")
    cols[1].metric("KV cache allocated", f"{kv['bytes_allocated']:,} B",
                   help=f"preallocated for {kv['max_seq']} tokens")
    cols[2].metric("Prefill", f"{trace.steps[0].timings['total_ms']:.1f} ms")
    decode = [s.timings["total_ms"] for s in trace.steps[1:]]
    cols[3].metric("Decode / token", f"{sum(decode) / len(decode):.2f} ms" if decode else "–")
    st.caption(
        f"KV bytes = {kv['seq_len']} tokens × {kv['kv_heads']} KV heads × {kv['head_dim']} head_dim × 2 (K,V) × "
        f"{kv['element_bytes']} bytes × {kv['layers']} layers = {kv['bytes_used']:,} B. Timed on "
        f"{last.timings['device']} with {last.timings['threads']} threads, capture {last.timings['capture']}.")


def main() -> None:
    st.title("llmviz: watch a language model run")
    st.write("**Prefill** reads the whole prompt in one parallel pass and fills the KV cache; **decode** then "
             "adds one token per step, reading every cached key and value.")
    name, device, dtype, attn, new_tokens, temperature = settings()
    prompt = st.text_area("Prompt", EXAMPLES[0])
    st.caption("Examples: " + " · ".join(EXAMPLES) + ". The embedded model knows English only: Chinese text "
               "becomes byte-level tokens (3 per character).")
    lm = load_or_explain(name, device, dtype)
    if lm is None:
        return
    st.caption(f"{lm.name}: {lm.parameters:,} parameters, {lm.cfg.num_layers} layers, {lm.cfg.num_heads} heads, "
               f"{lm.cfg.num_kv_heads} KV heads, head_dim {lm.cfg.head_dim}, on {lm.device} in {dtype}.")
    if st.button("Run", type="primary"):
        config = EngineConfig(device=device, dtype=dtype, attn_backend=attn,
                              sampling=SamplingConfig(temperature=temperature))
        try:
            st.session_state["run"] = (lm.name, service.run(lm, prompt, config, new_tokens))
        except LlmvizError as exc:
            st.error(str(exc))
        except MemoryError:
            st.error("Out of memory: use a shorter prompt or fewer new tokens.")
    run = st.session_state.get("run")
    if run and run[0] == lm.name:
        show_run(lm, run[1])


main()
