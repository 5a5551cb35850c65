"""The Trace page: the downloaded .zip reads back to the same run; an upload replays without a model;
a damaged upload gives a clear message, never an exception, and the app keeps working."""

from __future__ import annotations

import io
import json
import re
import zipfile
from datetime import UTC, datetime
from pathlib import Path
from typing import ClassVar

import pytest
from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1 import app_test as app_test_module
from ui_helpers import APP, LANGUAGE_SWITCH, PROMPT, ROOT, page_file, rendered_text

from llmviz.i18n.translator import translate
from llmviz.trace.records import trace_from_zip, trace_to_zip
from llmviz.ui.trace_file import download_name, generated_text, markdown_escape, public_copy, short_name, summary


class RecordingStorage(MemoryMediaFileStorage):
    """AppTest's in-memory media storage, remembered so the test can fetch what a download button serves."""

    made: ClassVar[list[RecordingStorage]] = []

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        RecordingStorage.made.append(self)


def served(url: str) -> bytes:
    name = url.rsplit("/", 1)[-1]
    for storage in reversed(RecordingStorage.made):
        if name.split(".")[0] in storage._files_by_id:
            return storage.get_file(name).content
    raise AssertionError(f"no media file behind {url}")


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def trace_page(model: str, step: int = 0) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["model"] = model
    at.query_params["prompt"] = PROMPT
    at.query_params["step"] = str(step)
    at.run()
    assert not at.exception, at.exception
    at.switch_page(page_file("trace")).run()
    return at


@pytest.fixture(scope="module")
def downloaded(app_model):
    """The trace page of a live run at step 3, and the bytes its download button serves."""
    RecordingStorage.made.clear()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(app_test_module, "MemoryMediaFileStorage", RecordingStorage)
        at = trace_page(app_model, step=3)
        assert not at.exception, at.exception
        buttons = at.get("download_button")
        assert len(buttons) == 1
        return at, buttons[0].proto, served(buttons[0].proto.url)


def test_download_reads_back_to_the_same_run(downloaded, app_model):
    at, button, data = downloaded
    run = at.session_state["llmviz_run"]
    assert run.key is not None and len(run.trace.steps) == 4  # prefill + the 3 steps the URL asked for
    back = trace_from_zip(data)
    assert back.output_ids == run.trace.output_ids and len(back.output_ids) == 4
    assert back.prompt == PROMPT and back.prompt_ids == run.trace.prompt_ids
    assert back.steps[-1].kv == run.trace.steps[-1].kv
    # the same trace.json as the run's own archive (the zip headers carry file times, so not the same bytes)
    ours = zipfile.ZipFile(io.BytesIO(trace_to_zip(run.trace)))
    assert zipfile.ZipFile(io.BytesIO(data)).read("trace.json") == ours.read("trace.json")
    assert button.label.startswith("Download the run (")


def test_the_page_runs_inside_app_py(downloaded):
    at, _, _ = downloaded
    assert [r.label for r in at.radio] == [LANGUAGE_SWITCH], "the Trace page ran without app.py's sidebar"


def test_summary_shows_the_runs_numbers(downloaded):
    at, _, _ = downloaded
    trace = at.session_state["llmviz_run"].trace
    shown = metrics(at)
    assert shown["Prompt tokens"] == str(len(trace.prompt_ids)) and len(trace.prompt_ids) >= 4
    assert shown["Steps recorded"] == "4" and shown["Tokens generated"] == "4"
    text = "\n".join(m.value for m in at.markdown)
    assert f"**Prompt:** {PROMPT}" in text
    assert f"**Generated text:** {markdown_escape(generated_text(trace))}".rstrip() in text  # a line ends unpadded
    assert "attention sdpa" in text and "seed 0" in text and "temperature 0.7" in text


def upload(at: AppTest, name: str, data: bytes) -> AppTest:
    at.file_uploader[0].set_value((name, data, "application/zip"))
    return at.run()


def test_upload_replays_without_a_model(downloaded):
    _, _, data = downloaded
    original = trace_from_zip(data)
    at = trace_page("/no/such/model")  # the live model cannot load here: only the file can be shown
    assert not at.exception
    assert any(translate("en", "error.ModelNotFoundError") in e.value for e in at.error)
    upload(at, "run.zip", data)
    assert not at.exception and not at.error
    run = at.session_state["llmviz_run"]
    assert run.key is None and run.handle is None and run.cursor == 0
    assert run.trace.output_ids == original.output_ids
    assert metrics(at)["Steps recorded"] == "4"
    assert [s.value for s in at.success] == [translate("en", "trace.loaded", name=markdown_escape("run.zip"), steps=4)]
    assert [i.value for i in at.info] == [translate("en", "common.replay")]
    at.switch_page(page_file("home")).run()  # another page draws from the replayed trace
    assert not at.exception and not at.error
    assert any(i.value == translate("en", "common.replay") for i in at.info)
    home = metrics(at)
    assert home["Layers"] == str(original.model_card["config"]["num_layers"])


def damaged_archives(good: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(good)) as archive:
        doc = json.loads(archive.read("trace.json"))
        arrays = archive.read("arrays.npz")

    def pack(trace_json: bytes, npz: bytes | None) -> bytes:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            archive.writestr("trace.json", trace_json)
            if npz is not None:
                archive.writestr("arrays.npz", npz)
        return buffer.getvalue()

    future = dict(doc, schema_version=99)
    no_steps = dict(doc, steps=[{"index": 0}])
    return {
        "not a zip": b"this is not a zip file",
        "truncated": good[: len(good) // 2],
        "no arrays": pack(json.dumps(doc).encode(), None),
        "bad json": pack(b"{not json", arrays),
        "future schema": pack(json.dumps(future).encode(), arrays),
        "broken step": pack(json.dumps(no_steps).encode(), arrays),
        "broken npz": pack(json.dumps(doc).encode(), arrays[:100]),
    }


def test_a_damaged_upload_shows_an_error_and_the_app_keeps_working(downloaded, app_model):
    _, _, good = downloaded
    at = trace_page(app_model)
    live = at.session_state["llmviz_run"]
    headline = translate("en", "error.TraceFormatError")
    for label, data in damaged_archives(good).items():
        upload(at, f"{label}.zip", data)
        assert not at.exception, label
        assert [e.value for e in at.error if headline in e.value], label
        assert at.session_state["llmviz_run"] is live, label  # the run shown before is kept
        assert metrics(at)["Steps recorded"] == "1", label
    upload(at, "good.zip", good)  # and a good file still loads afterwards
    assert not at.exception and not at.error
    assert at.session_state["llmviz_run"].key is None
    assert metrics(at)["Steps recorded"] == "4"


def test_a_damaged_upload_in_chinese(downloaded, app_model):
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update(model=app_model, prompt=PROMPT, lang="zh")
    at.run()
    at.switch_page(page_file("trace")).run()
    upload(at, "x.zip", b"PK\x03\x04 damaged")
    assert not at.exception
    assert any(translate("zh", "error.TraceFormatError") in e.value for e in at.error)


def test_back_to_the_live_model(downloaded, app_model):
    _, _, data = downloaded
    at = trace_page(app_model)
    upload(at, "run.zip", data)
    assert at.session_state["llmviz_run"].key is None
    back = [b for b in at.button if b.label == translate("en", "trace.back_to_live")]
    assert len(back) == 1
    back[0].click().run()
    assert not at.exception
    run = at.session_state["llmviz_run"]
    assert run.key is not None and len(run.trace.steps) == 1
    assert not [b for b in at.button if b.label == translate("en", "trace.back_to_live")]


def test_download_name_and_summary(downloaded):
    _, _, data = downloaded
    trace = trace_from_zip(data)
    when = datetime(2026, 11, 30, 6, 5, 9, tzinfo=UTC)
    name = download_name(trace, when)
    assert name.endswith("-20261130-060509.zip") and name.startswith("llmviz-")
    trace.model_card["name"] = "llmviz-tiny"
    assert download_name(trace, when) == "llmviz-tiny-20261130-060509.zip"
    trace.model_card["name"] = "HuggingFaceTB/SmolLM2-135M"
    assert download_name(trace, when) == "llmviz-SmolLM2-135M-20261130-060509.zip"
    trace.model_card["name"] = "/tmp/my models/a b:c/"
    assert download_name(trace, when) == "llmviz-a-b-c-20261130-060509.zip"
    assert markdown_escape("a *b* [x](y) $1\n#") == "a \\*b\\* \\[x\\]\\(y\\) \\$1 ↵ \\#"
    s = summary(trace)
    assert (s["steps"], s["decode_steps"], s["generated_tokens"]) == (4, 3, 4)
    assert s["kv_len"] == len(trace.prompt_ids) + 3  # the last sampled token is not in the cache yet
    from llmviz.engine.loading.model import load_model

    tok = load_model("llmviz-tiny").tokenizer
    assert s["generated_text"] == tok.hf.decode(trace.output_ids, skip_special_tokens=True)


def test_generated_text_regroups_a_character_split_into_byte_tokens(downloaded):
    """济 is three byte tokens in the embedded vocabulary (it occurs twice in its Chinese text), each decoding
    alone to U+FFFD; 南 is one token: the page's text joins the bytes before decoding."""
    import copy

    import numpy as np

    from llmviz.engine.loading.model import load_model

    tok = load_model("llmviz-tiny").tokenizer
    ids = [*tok.encode("济南"), tok.eos_ids[0]]
    trace = copy.deepcopy(trace_from_zip(downloaded[2]))
    trace.steps = [copy.copy(trace.steps[0]) for _ in ids]
    for step, token in zip(trace.steps, ids, strict=True):
        step.sampled = np.array([token])
    trace.tokens.update(tok.describe(ids))
    assert len(ids) == 5 and "".join(trace.tokens[i]["text"] for i in ids[:-1]) == "\ufffd" * 3 + "南"
    assert generated_text(trace) == "济南" == tok.hf.decode(ids, skip_special_tokens=True)


# --- an uploaded trace's text renders as text; a public server's download carries none of its own facts
EVIL = "![x](http://evil.example/a.png) [click](http://evil.example)"


def live_markdown(texts: list[str]) -> list[str]:
    """The texts that would render a link or an image: `](` or `![` not escaped by a backslash."""
    return [s for s in texts if re.search(r"(?<!\\)\]\(|(?<!\\)!\[", s)]


def with_card(good: bytes, **changes) -> bytes:
    with zipfile.ZipFile(io.BytesIO(good)) as archive:
        doc, arrays = json.loads(archive.read("trace.json")), archive.read("arrays.npz")
    doc["model_card"].update(changes)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("trace.json", json.dumps(doc))
        archive.writestr("arrays.npz", arrays)
    return buffer.getvalue()


def test_an_uploaded_traces_names_render_as_text(downloaded, app_model):
    _, _, good = downloaded
    data = with_card(good, name=EVIL, device=f"cpu {EVIL}")
    assert trace_from_zip(data).model_card["name"] == EVIL  # a name is any text: it is shown escaped, not refused
    at = trace_page(app_model)
    upload(at, f"{EVIL}.zip", data)
    assert not at.exception and not at.error
    texts = rendered_text(at)
    assert any("evil" in s for s in texts)  # the name and the file name are shown...
    assert live_markdown(texts) == []  # ...as text: no image fetched from another host, no link
    assert live_markdown([EVIL]) == [EVIL]  # (the check finds a live one)


def test_a_public_download_leaves_out_the_servers_paths_and_memory(app_model, monkeypatch):
    monkeypatch.setenv("LLMVIZ_PUBLIC", "1")
    monkeypatch.setenv("LLMVIZ_ALLOWED_MODELS", app_model)
    RecordingStorage.made.clear()
    monkeypatch.setattr(app_test_module, "MemoryMediaFileStorage", RecordingStorage)
    at = trace_page(app_model, step=2)
    data = served(at.get("download_button")[0].proto.url)
    text = zipfile.ZipFile(io.BytesIO(data)).read("trace.json").decode()
    assert str(ROOT) not in text and str(Path.home()) not in text and "rss_bytes" not in text
    back = trace_from_zip(data)
    assert "path" not in back.model_card and all(s.memory == {} for s in back.steps)
    run = at.session_state["llmviz_run"].trace  # the live run keeps them: only the download leaves them out
    assert back.output_ids == run.output_ids and "rss_bytes" in run.steps[-1].memory and "path" in run.model_card
    assert back.model_card["name"] == short_name(app_model)


def test_public_copy_shortens_a_server_folder_and_keeps_a_hub_id(downloaded, tmp_path):
    trace = trace_from_zip(downloaded[2])
    folder = tmp_path / "models" / "mine"
    folder.mkdir(parents=True)
    for name, shown in ((str(folder), "mine"), ("~/models/x", "x"), ("./x/y", "y"),
                        ("HuggingFaceTB/SmolLM2-135M", "HuggingFaceTB/SmolLM2-135M"), ("llmviz-tiny", "llmviz-tiny")):
        trace.model_card["name"] = name
        copy = public_copy(trace)
        assert copy.model_card["name"] == shown and trace.model_card["name"] == name, name
    assert copy.steps[0].input_ids is trace.steps[0].input_ids  # shared, not copied
    assert trace.steps[0].memory and not copy.steps[0].memory


def test_a_public_download_replays_on_the_decode_page_of_the_local_tool(downloaded, app_model):
    """Its steps hold no memory figures (public_copy): the Decode page draws without them."""
    at = trace_page(app_model)
    upload(at, "public.zip", trace_to_zip(public_copy(trace_from_zip(downloaded[2]))))
    assert not at.exception and not at.error
    at.switch_page(page_file("decode")).run()
    assert not at.exception and not at.error, [e.value for e in [*at.exception, *at.error]]
