"""Trace: download the current run as one .zip, or load one back and replay it with no model (and no torch)."""

import streamlit as st

from llmviz.errors import NotAllowedError, TraceFormatError
from llmviz.trace.budget import bound_replay
from llmviz.trace.records import trace_from_zip, trace_to_zip
from llmviz.ui import server, state
from llmviz.ui.chrome import heading, translator
from llmviz.ui.errors import explain
from llmviz.ui.trace_file import download_name, markdown_escape, public_copy, replay_bound, summary

UPLOAD_KEY, LOADED_KEY, ZIP_KEY = "trace_upload", "trace_loaded_file", "trace_zip"


def load_upload(t) -> None:
    """Replay a newly chosen file once (a rerun with the same file keeps the step being shown)."""
    upload = st.session_state.get(UPLOAD_KEY)
    if upload is None or upload.file_id == st.session_state.get(LOADED_KEY):
        return
    st.session_state[LOADED_KEY] = upload.file_id
    policy = server.policy()
    try:
        policy.check_upload(upload.size)
        trace = trace_from_zip(upload.getvalue(), replay_bound(policy))  # refused unread when too large
        shed = bound_replay(trace, policy.trace_budget_bytes, policy.public)  # before any page holds it
    except (TraceFormatError, NotAllowedError) as exc:
        explain(t, exc)
        return
    state.replay(trace)
    state.held_run().shed = shed  # the pages say which steps lost their tensors, and why
    st.success(t("trace.loaded", name=markdown_escape(upload.name), steps=len(trace.steps)))
    if shed:
        st.info(t("budget.notice", n=shed, mb=policy.trace_budget_mb))


def zip_bytes(run, public: bool) -> bytes:
    """The run as a .zip, rebuilt only when the run has gained steps since the last render; a public server's
    without its own folders and memory figures (trace_file.public_copy), the run shown keeping them."""
    cached = st.session_state.get(ZIP_KEY)
    if cached is None or cached[0] is not run.trace or cached[1] != len(run.trace.steps):
        cached = (run.trace, len(run.trace.steps), trace_to_zip(public_copy(run.trace) if public else run.trace))
        st.session_state[ZIP_KEY] = cached
    return cached[2]


def run_summary(t, run) -> None:
    """What the run is; every text from the trace escaped (an uploaded file's may be any markdown)."""
    s = {k: markdown_escape(v) if isinstance(v, str) else v for k, v in summary(run.trace).items()}
    st.subheader(t("trace.summary"))
    cols = st.columns(4)
    cols[0].metric(t("trace.model"), s["model_short"], help=s["model"])
    cols[1].metric(t("trace.prompt_tokens"), s["prompt_tokens"])
    cols[2].metric(t("trace.steps"), s["steps"], help=t("trace.steps_help"))
    cols[3].metric(t("trace.generated"), s["generated_tokens"])
    st.markdown(t("trace.prompt_line", prompt=s["prompt"]))
    st.markdown(t("trace.output_line", text=s["generated_text"]))
    st.markdown(t("trace.engine_line", family=s["family"], parameters=f"{s['parameters']:,}", device=s["device"],
                  dtype=s["dtype"], attn=s["attn"], kv_layout=s["kv_layout"], kv_dtype=s["kv_dtype"],
                  capture=s["capture"], seed=s["seed"], temperature=s["temperature"], top_k=s["top_k"],
                  top_p=s["top_p"]))
    if s["finished"]:
        key = f"trace.finished_{run.trace.steps[-1].finished}"
        st.caption(t(key) if key in t else s["finished"])
    with st.expander(t("trace.config_json")):
        st.json(run.trace.engine_config)


def download(t, run) -> None:
    st.subheader(t("trace.download"))
    st.caption(t("trace.download_help"))
    data = zip_bytes(run, server.policy().public)
    st.download_button(t("trace.download_button", size=f"{len(data) / 2**20:,.2f}"), data,
                       file_name=download_name(run.trace), mime="application/zip", on_click="ignore",
                       type="primary", icon=":material/download:", key="trace_download")


def upload(t) -> None:
    st.subheader(t("trace.upload"))
    st.file_uploader(t("trace.upload_label"), type=["zip"], key=UPLOAD_KEY, help=t("trace.upload_help"))


def main() -> None:
    t = translator()
    heading(t, "trace")
    load_upload(t)
    run = state.current_run(t)
    if run is not None and run.key is None:
        left, right = st.columns([4, 1], vertical_alignment="center")
        left.info(t("common.replay"))
        right.button(t("trace.back_to_live"), on_click=state.forget_run, width="stretch")
    if run is not None:
        run_summary(t, run)
        download(t, run)
    upload(t)
    st.subheader(t("trace.png"))
    st.markdown(t("trace.png_help"))
    state.sync_url()


main()
