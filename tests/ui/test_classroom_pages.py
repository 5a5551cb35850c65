"""The classroom stepper's defects, each in AppTest: every test here failed before its fix."""

from __future__ import annotations

from ui_helpers import open_app, page_file

from llmviz.i18n.translator import translate
from llmviz.ui.state import RUN_KEY, SETTINGS_KEY


def shown_prompt(at) -> str:
    return at.session_state[RUN_KEY].trace.prompt


def test_typed_text_and_boxes_survive_a_page_change():
    """Defect 1 (the part AppTest can see): what was typed on Home and not yet run is still there after another
    page, the other boxes keep their values (attention stays sdpa), and typing ran nothing."""
    at = open_app()
    at.text_area(key="home_prompt").set_value("Once upon a time")
    at.text_input(key="home_engine").set_value("kv-layout=paged")
    at.switch_page(page_file("decode")).run()
    assert not at.exception
    assert shown_prompt(at) == "The list of"  # the applied settings' run
    at.switch_page(page_file("home")).run()
    assert at.text_area(key="home_prompt").value == "Once upon a time"
    assert at.text_input(key="home_engine").value == "kv-layout=paged"
    assert at.selectbox(key="home_attn").value == "sdpa" and at.text_input(key="home_model").value == "llmviz-tiny"
    assert at.session_state[SETTINGS_KEY].prompt == "The list of"


def test_a_changed_setting_reaches_the_boxes_but_a_draft_stays_otherwise():
    """The boxes follow the settings when those change elsewhere (here: the Decode page's seed through the
    state), and keep a draft when they do not."""
    at = open_app()
    at.text_area(key="home_prompt").set_value("draft")
    at.run()
    at.session_state[SETTINGS_KEY] = at.session_state[SETTINGS_KEY].with_(prompt="Return the")
    at.run()
    assert at.text_area(key="home_prompt").value == "Return the"


def test_an_example_pill_runs_again_after_the_prompt_was_edited():
    """Defect 3: click an example, edit and run another prompt, click the same example again: it runs."""
    at = open_app()
    at.pills(key="home_example").set_value("Return the").run()
    assert shown_prompt(at) == "Return the"
    at.text_area(key="home_prompt").set_value("This module")
    next(b for b in at.button if b.label == "Load and run the prefill").click().run()
    assert shown_prompt(at) == "This module"
    assert at.pills(key="home_example").value is None  # not left selected, so the next click selects it
    at.pills(key="home_example").set_value("Return the").run()
    assert shown_prompt(at) == "Return the" and at.text_area(key="home_prompt").value == "Return the"


def error_text(at) -> str:
    return " ".join(str(e.value) for e in at.error)


def run_home(at, lang: str = "en", **boxes):
    for key, value in boxes.items():
        at.text_input(key=key).set_value(value)
    next(b for b in at.button if b.label == translate(lang, "home.run")).click().run()
    assert not at.exception
    return error_text(at)


def test_model_box_messages_say_what_is_wrong_once():
    """Defect 4: a blank name, a folder without config.json (its path as typed, not capitalised), an
    offline hub id (said once), an unavailable device (its name not capitalised)."""
    at = open_app()
    shown = run_home(at, home_model="   ")
    assert "No model is named" in shown and "config.json" not in shown, shown
    shown = run_home(at, home_model="assets/corpus")
    assert "assets/corpus has no config.json" in shown and "Assets/corpus" not in shown, shown
    shown = run_home(at, home_model="someone/not-downloaded")
    assert shown.count("offline") == 1 and "someone/not\\-downloaded" in shown, shown
    at.selectbox(key="home_device").set_value("mps")
    shown = run_home(at, home_model="llmviz-tiny")
    assert "Apple GPU" in shown and "Mps" not in shown, shown


def test_model_box_messages_in_chinese():
    at = open_app(lang="zh")
    shown = run_home(at, "zh", home_model=" ")
    assert "没有填写模型" in shown, shown
    shown = run_home(at, "zh", home_model="someone/not-downloaded")
    assert shown.count("离线") == 1, shown


def dist_chart(at) -> dict:
    import json

    return json.loads(next(c for c in at.get("plotly_chart") if "dist" in c.proto.id).proto.spec)


def test_next_token_chart_names_a_lower_ranked_draw_and_keeps_its_legend_colours():
    """Defect 7: the legend swatch of "with these settings" is that colour even when the top token was drawn;
    when the drawn token ranks below 10 there are 11 bars and the title and the bar say its rank (checked
    against the rank read off the step's own logits)."""
    import numpy as np

    from llmviz.viz.decode import HIGHLIGHT, KEPT

    at = open_app(page_file("decode"), temperature=1.3, top_k=0, seed=5, device="cpu")
    ranks = []
    for _ in range(24):
        step = at.session_state[RUN_KEY].step
        logits = np.asarray(step.logits[0], dtype=np.float64)
        drawn = int(step.sampled[0])
        rank = 1 + int(np.sum(logits > logits[drawn])) + int(np.sum(logits[:drawn] == logits[drawn]))
        ranks.append(rank)
        spec = dist_chart(at)
        bars = spec["data"][1]
        legend = {d["name"]: d["marker"]["color"] for d in spec["data"][2:]}
        assert legend == {"with these settings": KEPT, "drawn this step": HIGHLIGHT}
        assert bars.get("showlegend") is False
        title = spec["layout"]["title"]["text"]
        assert len(bars["x"]) == (11 if rank > 10 else 10), (rank, bars["x"])
        assert (f"#{rank}" in title) == (rank > 10), (rank, title)
        if rank > 10:
            assert bars["x"][-1].startswith(f"#{rank} ")
        button = next(b for b in at.button if b.label == "Next ▶")
        if button.disabled:  # the run ended (EOS)
            break
        button.click().run()
        assert not at.exception
    assert min(ranks) == 1 and max(ranks) > 10, ranks  # both cases were met


def test_latency_fit_is_explained_and_the_length_sweep_measures_the_trend():
    """Defect 8: with few steps the page says why there is no trend line (no line drawn); the sweep measures
    8 lengths with the run's layout, each a median within its min..max, and says what was timed."""
    import json

    from llmviz.analysis.decode_series import MIN_FIT_POINTS
    from llmviz.trace.config import default_max_seq

    at = open_app(page_file("decode"), step=3, device="cpu")
    assert any(f"at least {MIN_FIT_POINTS} decode steps" in c.value for c in at.caption)
    latency = json.loads(next(c for c in at.get("plotly_chart") if "latency" in c.proto.id).proto.spec)
    assert [d["name"] for d in latency["data"]] == ["first 2 steps (warm-up, left out of the fit)",
                                                  "decode time per token"]  # a series, not its unit
    next(b for b in at.button if b.label == "Measure decode latency over lengths").click().run()
    assert not at.exception and not at.error
    result = at.session_state["llmviz_dec_sweep"][1]
    context = default_max_seq(at.session_state[RUN_KEY].trace.model_card["config"]["max_position_embeddings"])
    assert result["layouts"] == ["contiguous"] and len(result["lengths"]) == MIN_FIT_POINTS
    from llmviz.ui.latency.latency_sweep import STEPS

    assert result["lengths"][0] == 16 and result["lengths"][-1] == context - STEPS  # room for the timed steps
    cells = result["ms_per_token"]["contiguous"]
    assert all(lo <= m <= hi and m > 0 for lo, m, hi in zip(cells["min"], cells["median"], cells["max"], strict=True))
    chart = json.loads(next(c for c in at.get("plotly_chart") if "dec_sweep" in c.proto.id).proto.spec)
    assert chart["data"][0]["x"] == result["lengths"]
    shown = " ".join(c.value for c in at.caption)
    assert "contiguous layout and sdpa attention" in shown
    # the slope judged by the lesson's C18 rule (one rule for one figure), its interval in the sentence
    texts = " ".join(m.value for m in at.markdown)
    assert any(w in texts for w in ("adds **", "includes none at all", "shorter steps with a longer cache")), texts
    assert result["element"] == "fp32" and result["bandwidth"]["gb_per_s"] > 0  # the bytes' slope beside it


def test_a_replayed_trace_puts_its_own_run_in_the_url_and_that_link_recomputes_it():
    """Defect 6: while a trace is replayed the URL holds the recorded run (model, prompt, seed, sampling,
    switches, step), so a shared link opens that run live: the same tokens."""
    from llmviz import service
    from llmviz.trace.config import EngineConfig, SamplingConfig
    from llmviz.trace.records import trace_to_zip

    lm = service.models.load("llmviz-tiny", EngineConfig(device="cpu"))
    config = EngineConfig(device="cpu", seed=7, kv_layout="paged", kv_block_size=8, capture="full",
                          sampling=SamplingConfig(temperature=0.9, top_k=20), max_seq_len=512, logit_lens_top_k=5)
    recorded = service.runs.run(lm, "Return the", config, 6)
    at = open_app(page_file("trace"), device="cpu")  # a live run of the default prompt first
    at.file_uploader[0].set_value(("run.zip", trace_to_zip(recorded), "application/zip"))
    at.run()
    at.switch_page(page_file("decode")).run()
    for _ in range(3):
        next(b for b in at.button if b.label == "Next ▶").click().run()
    url = {k: v[0] if isinstance(v, list) else v for k, v in at.query_params.items()}
    assert url["prompt"] == "Return the" and url["seed"] == "7" and url["step"] == "3"
    assert url["engine"] == "kv-layout=paged,kv-block-size=8" and url["temperature"] == "0.9"
    assert url["top_k"] == "20" and url["device"] == "cpu"
    shared = open_app(page_file("decode"), **url)
    live = shared.session_state[RUN_KEY]
    assert live.key is not None and live.cursor == 3
    assert live.trace.output_ids[:4] == recorded.output_ids[:4]


def live_tokens(seed: int, steps: int, reseed: dict | None = None) -> list[int]:
    """What the engine draws alone for the Decode page's default run (the app's UI config) with `seed`."""
    from llmviz import service
    from llmviz.trace.config import EngineConfig
    from llmviz.ui.settings import Settings

    s = Settings(seed=seed, device="cpu", temperature=1.0, top_k=0)
    lm = service.models.load(s.model, EngineConfig(device="cpu"))
    run = service.runs.start(lm, s.prompt, s.engine_config(lm.cfg.max_position_embeddings))
    for i in range(steps + 1):
        run.step(seed=(reseed or {}).get(i))
    return run.trace.output_ids


def test_seed_box_new_sample_and_resample_from_a_step(monkeypatch):
    """Defect 2: a seed control, "new sample" (a fresh seed, the same step) and "resample from this step"
    (tokens before it kept, its own drawn again), each checked against the engine alone with that seed; the
    two samples are shown with where they part; the URL carries it all, and that link replays it."""
    from llmviz.ui.decode import seed_controls

    fresh_seeds = iter([21, 33])  # what secrets would draw, fixed so that no run ends (EOS) before step 5
    monkeypatch.setattr(seed_controls, "fresh_seed", lambda: next(fresh_seeds))
    at = open_app(page_file("decode"), step=5, device="cpu", temperature=1.0, top_k=0)
    run = at.session_state[RUN_KEY]
    assert run.trace.output_ids == live_tokens(0, 5)
    at.number_input(key="dec_seed").set_value(11).run()  # the seed box: the run again, to step 5
    run = at.session_state[RUN_KEY]
    assert run.cursor == 5 and run.trace.output_ids == live_tokens(11, 5)
    shown = " ".join(m.value for m in at.markdown)
    assert "Before (seed 0)" in shown and "Now (seed 11)" in shown
    next(b for b in at.button if b.label == "New sample").click().run()
    seed = at.session_state[SETTINGS_KEY].seed
    assert seed == 21 and at.number_input(key="dec_seed").value == seed
    assert at.session_state[RUN_KEY].trace.output_ids == live_tokens(seed, 5)
    before = at.session_state[RUN_KEY].trace.output_ids
    next(b for b in at.button if b.label == "◀ Previous").click().run()
    next(b for b in at.button if b.label == "Resample from step 4").click().run()
    assert not at.exception and not at.error
    run = at.session_state[RUN_KEY]
    fresh = run.step.sampling["seed"]
    assert run.cursor == 4 and len(run.trace.steps) == 5 and fresh == 33
    assert run.trace.output_ids == live_tokens(seed, 4, {4: fresh})  # steps 0-3 as before, step 4 from `fresh`
    assert run.trace.output_ids[:4] == before[:4]
    assert at.query_params["reseed"] in (f"4:{fresh}", [f"4:{fresh}"])
    url = {k: v[0] if isinstance(v, list) else v for k, v in at.query_params.items()}
    again = open_app(page_file("decode"), **url)
    assert again.session_state[RUN_KEY].trace.output_ids == run.trace.output_ids


def test_seed_controls_in_chinese_and_off_for_a_replay():
    at = open_app(page_file("decode"), lang="zh", device="cpu")
    labels = [b.label for b in at.button]
    assert "重新采样" in labels and not any("Resample" in x for x in labels)
    assert next(b for b in at.button if b.label.startswith("从第")).disabled  # step 0: nothing before it


def test_prefill_counts_the_window_apart_from_the_causal_mask(model_dirs):
    """Defect: a sliding window's masked cells were counted as "causal". Mistral, window 8, a 20-token prompt:
    the causal count is n(n-1)/2 and the window's the entries 8 or more back, counted here by hand."""
    prompt = " ".join(["fox"] * 19)
    at = open_app(page_file("prefill"), model=model_dirs["mistral"], prompt=prompt, device="cpu")
    n = len(at.session_state[RUN_KEY].trace.prompt_ids)
    assert n > 8
    window = sum(1 for i in range(n) for j in range(n) if i - j >= 8)
    text = " ".join(m.value for m in at.markdown)
    assert f"to −∞ ({n * (n - 1) // 2} of {n * n} entries)" in text, text[:500]
    assert f"The sliding window masks {window} more entries" in text


def test_decode_figures_and_texts_read_right():
    """Defects: the prefill's Q named as [n, h, hd] with its last row shown; colour scales on the Q map, the
    attention row and the KV grid; masked or not, no 9 px rotated labels past MAX_TICKS columns; a 1-token
    prompt's maps keep their height; the memory figures side by side in one unit; RSS said to be the server's."""
    import json

    from llmviz.analysis.kv_memory import in_one_unit
    from llmviz.viz.style import MAX_TICKS

    at = open_app(page_file("decode"), prompt="The", device="cpu")
    run = at.session_state[RUN_KEY]
    assert len(run.trace.prompt_ids) == 1
    text = " ".join(m.value for m in at.markdown)
    assert "its query per head is `[1, " in text and "Shown: its last row" in text
    specs = {c.proto.id: json.loads(c.proto.spec) for c in at.get("plotly_chart")}
    for name in ("q", "attn", "kvgrid"):
        spec = next(v for k, v in specs.items() if k.endswith(f"-{name}"))
        heat = spec["data"][0]
        assert heat.get("showscale", True) is not False and heat["colorbar"]["title"]["text"], name
        assert spec["layout"]["height"] >= 200, (name, spec["layout"]["height"])
    values = {m.label: m.value for m in at.metric}
    units = {values[k].split()[-1] for k in ("Weights", "KV cache used", "KV cache allocated")}
    assert len(units) == 1 and "Server process memory (RSS)" in values
    assert in_one_unit([3 * 2**20, 20 * 2**10, 512]) == ["3.00 MiB", "0.02 MiB", "0.00 MiB"]
    assert in_one_unit([1023, 5]) == ["1,023 B", "5 B"] and in_one_unit([150 * 2**20]) == ["150.0 MiB"]
    long = open_app(page_file("decode"), prompt=" ".join(["fox"] * (MAX_TICKS + 5)), device="cpu")
    attn = next(json.loads(c.proto.spec) for c in long.get("plotly_chart") if "attn" in c.proto.id)
    assert attn["layout"]["xaxis"].get("tickmode") != "array"  # positions only; tokens on hover
    assert len(attn["data"][0]["customdata"][0]) > MAX_TICKS


def test_presenter_view_in_both_languages():
    """Part 2: ?present=1 keeps the stepper, the KV grid and the next-token chart and leaves out the developer
    detail (timings, memory, the latency sweep), and the new token's attention unless its switch is on; Reset
    demo restores the default prompt, model and seed; the leave button turns it off."""
    from llmviz.i18n.translator import translate
    from llmviz.ui.settings import Settings

    for lang in ("en", "zh"):
        at = open_app(page_file("decode"), present=1, lang=lang, device="cpu", prompt="Return the", seed=4)
        ids = [c.proto.id.rsplit("-", 1)[-1] for c in at.get("plotly_chart")]
        assert {"kvgrid", "dist"} <= set(ids) and not {"spans", "latency", "lens", "q", "attn"} & set(ids), ids
        next(w for w in at.toggle if w.key == "present_attn").set_value(True).run()  # the attention, when asked
        assert {"kvgrid", "dist", "q", "attn"} <= {c.proto.id.rsplit("-", 1)[-1] for c in at.get("plotly_chart")}
        labels = {m.label for m in at.metric}
        assert translate(lang, "decode.mem_rss") not in labels and translate(lang, "decode.step") in labels
        assert translate(lang, "decode.sweep_run") not in [b.label for b in at.button]
        next(b for b in at.button if b.label == translate(lang, "present.reset_demo")).click().run()
        s, default = at.session_state[SETTINGS_KEY], Settings.fresh(lang)  # the language's own prompt
        assert (s.prompt, s.model, s.seed, s.present) == (default.prompt, default.model, default.seed, 1)
        assert shown_prompt(at) == default.prompt and at.session_state[RUN_KEY].cursor == 0
        next(b for b in at.button if b.label == translate(lang, "present.leave")).click().run()
        assert at.session_state[SETTINGS_KEY].present == 0
        assert "spans" in [c.proto.id.rsplit("-", 1)[-1] for c in at.get("plotly_chart")]
