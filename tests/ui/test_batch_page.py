"""Batch page (C13): the padded grid's wasted slots match the prompts' lengths, every row's tokens equal
that prompt alone with its seed, and the throughput sweep lists batch 1, 2, 4, 8."""

from ui_helpers import open_app, page_file, rendered_text

from llmviz import service
from llmviz.engine.loading.model import load_model
from llmviz.trace.config import EngineConfig, SamplingConfig

PROMPTS = ["The quick brown fox", "The", "Return the value of the"]


def click(at, *labels):
    next(b for b in at.button if b.label in labels).click().run(timeout=180)
    assert not at.exception, [e.value for e in at.exception]


def test_grid_wasted_slots_and_rows_alone(app_model):
    at = open_app(page_file("batch"), model=app_model, temperature=0.7, seed=3)
    at.text_area(key="batch_prompts_w").set_value("\n".join(PROMPTS)).run()
    at.number_input(key="batch_max_new_w").set_value(5).run()
    click(at, "Run the prefill")
    lm = load_model(app_model, device="cpu")
    lengths = [len(lm.tokenizer.encode(p)) for p in PROMPTS]
    widest = max(lengths)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Wasted slots"] == str(sum(widest - n for n in lengths))
    assert metrics["Slots computed"] == str(3 * widest)
    click(at, "Run to the end")
    metrics = {m.label: m.value for m in at.metric}
    run = at.session_state["llmviz_batch"]
    finished_early = sum(1 for s in run.trace.steps[1:] for i in s.input_ids[:, 0] if i < 0)
    assert metrics["Slots computed"] == str(3 * (widest + 4))
    assert metrics["Wasted slots"] == str(sum(widest - n for n in lengths) + finished_early)
    for i, prompt in enumerate(PROMPTS):  # row i draws with seed + i, as the prompt alone does
        alone = service.runs.run(lm, prompt, EngineConfig(device="cpu", seed=3 + i, sampling=SamplingConfig(0.7),
                                                          capture="off", max_seq_len=widest + 6), 5)
        assert run.trace.row_output_ids(i) == alone.output_ids[:len(run.trace.row_output_ids(i))]
        assert run.trace.row_output_ids(i)


def test_throughput_sweep(app_model):
    at = open_app(page_file("batch"), model=app_model)
    click(at, "Measure batch 1, 2, 4, 8")
    texts = rendered_text(at)
    assert any("batch 8 gives" in x for x in texts)
    result = at.session_state["llmviz_batch_sweep"][1]
    assert [r["batch"] for r in result["sizes"]] == [1, 2, 4, 8]
    # K5's own workload by default (one measurement per claim): the 64 held-out tokens the Claims page
    # and the lesson batch, in 6 rounds (one look: the fewest with a 95% interval), judged by the
    # claims' one rule in the box they use
    from llmviz.analysis.claim_effects import judged
    from llmviz.i18n.translator import translate

    lm = service.models.load(app_model, EngineConfig(device="cpu"))
    assert (result["prompt_tokens"], result["steps"], result["repeats"]) == (64, 2, 6)
    if app_model == "llmviz-tiny":  # the model K5 is judged on (a checkout without its weights runs another)
        verdict = translate("en", "claims.verdict." + judged("K5", result)["verdict"])
        assert any(x.startswith(f"**K5 · {verdict}**") for x in texts), texts
    # the first prompt above instead: another workload, measured and drawn, not judged as K5
    at.radio(key="batch_workload_w").set_value("prompt").run()
    click(at, "Measure batch 1, 2, 4, 8")
    other = at.session_state["llmviz_batch_sweep"][1]
    assert other["prompt_tokens"] == len(lm.tokenizer.encode(at.text_area(key="batch_prompts_w").value.split("\n")[0]))
    texts = rendered_text(at)
    assert not any(x.startswith("**K5 · ") for x in texts) and any("K5 is judged on its own workload" in x
                                                                   for x in texts)


def test_too_many_prompts_get_a_message(app_model):
    at = open_app(page_file("batch"), model=app_model)
    at.text_area(key="batch_prompts_w").set_value("\n".join(["a b"] * 9)).run()
    click(at, "Run the prefill")
    assert any("1 to 8 prompts" in e.value for e in at.error)


def test_chinese_page(app_model):
    at = open_app(page_file("batch"), model=app_model, lang="zh")
    click(at, "运行预填充")
    assert any(m.label == "浪费的槽位" for m in at.metric)


def test_the_pad_side_reads_in_chinese_and_still_pads_that_side(app_model):
    """The choice shows 右侧 / 左侧 in Chinese (it showed the engine's own 'right'); 左侧 sets padding=left."""
    at = open_app(page_file("batch"), model=app_model, lang="zh")
    box = at.selectbox(key="batch_padding_w")
    assert box.options == ["右侧", "左侧"]
    box.set_value("left").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["llmviz_settings"].batch.padding == "left"
