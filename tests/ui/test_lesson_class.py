"""A class in one room, in the lesson (its pages' first increment), with AppTest and a SQLite store in a
temporary folder: the teacher starts a class; a student's device joins from the join link and follows the teacher's
step (a step of its own leaves the pace, one tap rejoins); the student's prediction reaches the class's store and,
after the teacher's Reveal, the projector's histogram counts exactly what was submitted; a wrong code is refused;
the teacher's key appears on no page."""

import json

import pytest
from ui_helpers import open_app, page_file, rendered_text, settings

from llmviz.analysis.claim_effects import judged
from llmviz.classroom.stores import STORE_ENV
from llmviz.i18n.translator import translate
from llmviz.ui.lesson.class_wall import times
from llmviz.ui.lesson.lesson_class import DEVICE, store

PAGE = page_file("lesson")


pytestmark = pytest.mark.usefixtures("class_store")  # a class store of each test's own (tests/ui/conftest.py)


def k4_report(decode_b: float) -> dict:
    spread = lambda m: {"median": m, "min": 0.98 * m, "max": 1.02 * m, "all": [m, 1.02 * m, 0.98 * m]}  # noqa: E731
    claim = judged("K4", {"model": "llmviz-tiny", "device": "cpu", "threads": 2, "specs": ["a", "b"],
                          "decode_ms_per_token": [spread(10.0), spread(decode_b)],
                          "prefill_ms": [spread(1.0), spread(1.0)], "kv_bytes_allocated": [1000, 500]})
    return {"quick": True, "claims": [claim], "when": "2026-12-05 12:00:00"}


def teacher_at(position: str):
    at = open_app(PAGE, lang="zh", lesson=position)
    at.button(key="class_start").click().run()
    s = settings(at)
    assert len(s.lesson.room) == 6 and s.lesson.teach and not s.lesson.me
    return at, s.lesson.room, s.lesson.teach


def test_a_student_joins_and_follows_the_teacher(app_model):
    teacher, code, key = teacher_at("2.2.1")
    assert store().get(code).step == "2.2.1"
    assert key not in " ".join(rendered_text(teacher))  # the key is in the teacher's URL only
    teacher.button(key="lesson_next").click().run()
    assert store().get(code).step == "2.2.2"
    student = open_app(PAGE, lang="zh", room=code.lower())  # the code as typed
    me = settings(student).lesson.me
    assert [s.id for s in store().students(code)] == [me] and settings(student).lesson.at == "2.2.2"
    assert any(translate("zh", "class.student", code=code, name=store().students(code)[0].name) in c.value
               for c in student.caption)
    student.button(key="lesson_back").click().run()  # a step of its own: the class's pace is left
    assert settings(student).lesson.at == "2.2.1"
    teacher.button(key="lesson_next").click().run()
    student.run()
    assert settings(student).lesson.at == "2.2.1"
    student.button(key="class_rejoin").click().run()
    assert settings(student).lesson.at == store().get(code).step == "2.2.3"


def test_the_classes_predictions_on_the_projector_after_the_reveal(app_model):
    teacher, code, _ = teacher_at("2.2.2")  # K4: the slider's x1.00..x6.00, the report's x1.50 measured
    values = [2.0, 2.0, 1.5]
    for value in values:
        student = open_app(PAGE, lang="zh", room=code)
        student.slider(key="lesson_predict_K4").set_value(value).run()
    assert sorted(store().predictions(code, "K4", 1).values()) == sorted(values)
    teacher.run()
    assert any(translate("zh", "class.answered", n=3, joined=3) in c.value for c in teacher.caption)
    teacher.session_state["llmviz_claims_report"] = k4_report(10.0 / 1.5)
    teacher.button(key="lesson_reveal_K4").click().run()
    [fig] = [json.loads(c.proto.spec) for c in teacher.get("plotly_chart") if "class_histogram" in c.proto.id]
    bars = fig["data"][0]
    # the three submitted, no more, in 39 bins of three slider positions (x0.25..x6.00 by 0.05): by hand, x1.50 is
    # position 25, in the bin of positions 24-26 (centre x1.50); x2.00 position 35, in 33-35 (centre x1.95)
    assert sum(bars["y"]) == 3 and len(bars["y"]) == 39
    held = {round(x, 4): y for x, y in zip(bars["x"], bars["y"], strict=True) if y}
    assert held == {1.5: 1, 1.95: 2}
    marks = [s["x0"] for s in fig["layout"]["shapes"]]
    assert marks[0] == pytest.approx(1.5, rel=1e-3) and marks[1] == pytest.approx(1.8)  # here, and the article's


def test_a_wrong_code_is_refused(app_model):
    at = open_app(PAGE, lang="zh", room="ZZZZZZ")
    assert any(translate("zh", "class.error.no_class") in w.value for w in at.warning)
    assert settings(at).lesson.room == "" and store().students("ZZZZZZ") == []


def test_the_teacher_downloads_the_summary_then_ends_the_class(app_model):
    teacher, code, _ = teacher_at("2.2.2")
    student = open_app(PAGE, lang="zh", room=code)
    student.slider(key="lesson_predict_K4").set_value(2.5).run()
    teacher.run()
    labels = [d.proto.label for d in teacher.get("download_button")]
    assert translate("zh", "claims.download_json") in labels and translate("zh", "claims.download_csv") in labels
    name = store().students(code)[0].name
    teacher.button(key="class_end").click().run()
    assert store().get(code) is None and store().students(code) == [] and settings(teacher).lesson.room == ""
    student.run()  # the student's device: the class is gone, said so
    assert any(translate("zh", "class.error.no_class") in w.value for w in student.warning)
    assert name  # generated: an animal and a number


def histogram_of(at) -> dict:
    [fig] = [json.loads(c.proto.spec) for c in at.get("plotly_chart") if "class_histogram" in c.proto.id]
    return fig


def test_peer_instruction_two_votes_then_the_measurement(app_model):
    """The class votes, the projector shows the votes (no measurement yet), the teacher opens a second vote, the
    class votes again, then the Reveal: both votes drawn, each summing to its submissions."""
    teacher, code, _ = teacher_at("2.2.2")
    students = [open_app(PAGE, lang="zh", room=code) for _ in range(3)]
    for student, value in zip(students, (1.2, 1.3, 3.0), strict=True):
        student.slider(key="lesson_predict_K4").set_value(value).run()
    teacher.toggle(key="llmviz_class_shown_K4").set_value(True).run()
    before = histogram_of(teacher)
    assert [sum(b["y"]) for b in before["data"]] == [3]
    assert len(before["layout"]["shapes"]) == 1  # the article's figure only: nothing measured yet
    teacher.button(key="class_round_K4").click().run()
    assert store().get(code).round == 2
    for student, value in zip(students[:2], (1.1, 1.1), strict=True):  # two change their minds
        student.slider(key="lesson_predict_K4").set_value(value).run()
    assert sorted(store().predictions(code, "K4", 2).values()) == [1.1, 1.1]
    assert sorted(store().predictions(code, "K4", 1).values()) == [1.2, 1.3, 3.0]
    teacher.session_state["llmviz_claims_report"] = k4_report(10.0 / 1.5)
    teacher.button(key="lesson_reveal_K4").click().run()
    after = histogram_of(teacher)
    assert [sum(b["y"]) for b in after["data"]] == [3, 2] and len(after["layout"]["shapes"]) == 2


def test_the_chapters_question_counted_on_the_projector(app_model):
    """Two students answer §1.2's question, one right (worked out by hand from the config file and the prompt's
    tokens, with that student's own draw), one wrong: the projector says 1 of 2 right and the wrong answer given."""
    from transformers import AutoTokenizer
    from ui_helpers import EMBEDDED_WEIGHTS

    from llmviz.analysis.chapter_check import draw
    from llmviz.ui.lesson.lesson_check import SEED_KEY

    hf = json.loads((EMBEDDED_WEIGHTS.parent / "config.json").read_text())
    per_token = hf["num_key_value_heads"] * hf["head_dim"] * 2 * 4 * hf["num_hidden_layers"]
    teacher, code, _ = teacher_at("1.2.7")
    right_one, wrong_one = (open_app(PAGE, lang="zh", room=code) for _ in range(2))
    n = len(AutoTokenizer.from_pretrained(str(EMBEDDED_WEIGHTS.parent))(settings(right_one).prompt)["input_ids"])
    more = draw(right_one.session_state[SEED_KEY])["more"]
    for at, value in ((right_one, (n + more) * per_token), (wrong_one, 1234.0)):
        at.number_input(key="lesson_q_1.2").set_value(value).run()
        at.button(key="lesson_q_check_1.2").click().run()
    teacher.run()
    said = [m.value for m in teacher.markdown]
    ratio = 1234.0 / ((n + draw(wrong_one.session_state[SEED_KEY])["more"]) * per_token)  # of its own right answer
    assert translate("zh", "class.answers", right=1, n=2) + " " + translate(
        "zh", "class.common_wrong_ratio", value="1,234 B", count=1, ratio=times(ratio)) in said, said


@pytest.mark.parametrize(("ratio", "said"), [(0.5, "×1/2"), (0.25, "×1/4"), (1 / 1024, "×1/1024"), (2.0, "×2"),
                                             (1000 / 1024, "×0.98"), (1023.0, "×1023"), (1.3, "×1.3"),
                                             (0.3, "×0.3"), (7 / 120, "×0.058")])
def test_a_mistake_said_as_a_teacher_says_it(ratio, said):
    assert times(ratio) == said


def test_a_second_teacher_device_follows_the_projector(app_model):
    """The teacher's link opened on a second device: it says so, follows the projector's steps and moves nothing;
    its Next is undone by the projector's step. "Lead from here" makes it the projector; the first then follows and
    says so."""
    projector, code, key = teacher_at("2.2.1")
    second = open_app(PAGE, lang="zh", room=code, teach=key, lesson="1.1.1")
    assert settings(second).lesson.at == "2.2.1" and store().get(code).step == "2.2.1"
    assert any(translate("zh", "class.follows") in i.value for i in second.info)
    second.button(key="lesson_next").click().run()
    assert store().get(code).step == "2.2.1" and settings(second).lesson.at == "2.2.1"
    projector.button(key="lesson_next").click().run()
    second.run()
    assert settings(second).lesson.at == store().get(code).step == "2.2.2"
    second.button(key="class_take_lead").click().run()
    assert store().get(code).leader == second.session_state[DEVICE] and not second.info
    second.button(key="lesson_next").click().run()
    assert store().get(code).step == "2.2.3"
    projector.run()  # a full run asks the store as the projector's poll does: it follows now
    assert settings(projector).lesson.at == "2.2.3"
    assert any(translate("zh", "class.follows") in i.value for i in projector.info)
    projector.button(key="lesson_next").click().run()
    assert store().get(code).step == "2.2.3"  # it moves nothing


def test_the_class_is_the_workload(app_model, monkeypatch):
    """§3.2: three students send prompts; the projector shows their lengths until approved, then the texts; the
    teacher's run serves them through continuous and static batching on the engine; the Gantt's rows are the
    students' names; each phone shows its own request's text as it comes (written every STREAM_S: here every step),
    which is at last what that request draws served alone, and its time to first token."""
    from llmviz import service
    from llmviz.classroom import classes
    from llmviz.trace.config import EngineConfig
    from llmviz.ui.lesson import lesson_workload

    written: list[dict] = []  # what the run wrote for the phones, in order (the store's own writes, watched)
    real = classes.put_results
    monkeypatch.setattr(classes, "put_results", lambda *a, **k: (written.append(a[3]), real(*a, **k))[1])
    monkeypatch.setattr(lesson_workload, "STREAM_S", 0.0)
    teacher, code, _ = teacher_at("3.2.1")
    prompts = ["济南的冬天", "The list of", "人工智能"]
    phones = []
    for text in prompts:
        phone = open_app(PAGE, lang="zh", room=code)
        phone.text_input(key="class_prompt").input(text).run()
        phone.button(key="class_send").click().run()
        phones.append(phone)
    teacher.run()
    [listed] = [x.value for x in teacher.table if translate("zh", "class.col_prompt") in x.value.columns]
    assert list(listed[translate("zh", "class.col_prompt")]) == [
        translate("zh", "class.unapproved", chars=len(p)) for p in prompts]  # nothing unvetted on the wall
    classes.rename(store(), code, settings(phones[1]).lesson.me, "<b>Lin</b>")
    first = settings(phones[0]).lesson.me  # a phone while its request is drawn: the text so far and its count
    real(store(), code, settings(teacher).lesson.teach, {first: {"text": "天气", "partial": True, "tokens": 2}})
    phones[0].run()
    assert translate("zh", "class.drawing", text="天气", n=2) in [m.value for m in phones[0].markdown]
    teacher.button(key="class_approve").click().run()
    teacher.button(key="class_run").click().run()
    assert not teacher.exception, [e.value for e in teacher.exception]
    names = [s.name for s in store().students(code)]
    [gantt] = [json.loads(c.proto.spec) for c in teacher.get("plotly_chart") if "class_gantt" in c.proto.id]
    assert gantt["layout"]["yaxis"]["ticktext"] == [n.replace("<", "&lt;").replace(">", "&gt;") for n in names]
    assert "&lt;b&gt;Lin&lt;/b&gt;" in gantt["layout"]["yaxis"]["ticktext"]  # a name is text, never markup
    # slot use by hand: requests arrive at steps 0, 2, 4 and hold a slot (of 4) for their 16, 24, 32 tokens (the
    # prefill draws the first), so 1, 2, 3, then 2, then 1 slots feed a token over the 36 steps
    [util] = [json.loads(c.proto.spec) for c in teacher.get("plotly_chart") if "class_util" in c.proto.id]
    cont = next(d for d in util["data"] if d["name"] == translate("zh", "serving.sched.continuous"))
    assert cont["y"] == pytest.approx([n / 4 for n in [1] * 2 + [2] * 2 + [3] * 12 + [2] * 10 + [1] * 10])
    [pool] = [json.loads(c.proto.spec) for c in teacher.get("plotly_chart") if "class_blocks" in c.proto.id]
    served = teacher.session_state[lesson_workload.RUN_KEY][1][0]["continuous"]  # the pool's own count, each step
    assert pool["data"][0]["y"] == [r.blocks_used for r in served["records"]] and max(pool["data"][0]["y"]) > 0
    lm = service.models.load("llmviz-tiny", EngineConfig())
    alone = service.serving.serve_alone(lm, service.serving.class_trace(lm, prompts), "cpu")
    assert [len(alone[i]) for i in range(3)] == [16, 24, 32]  # the trace's lengths: they leave at different steps
    for i, phone in enumerate(phones):
        phone.run()
        me = settings(phone).lesson.me
        mine = store().result(code, me)
        assert mine["text"] == service.models.text_of(lm, alone[i]) and mine["ttft_ms"] > 0
        assert any(translate("zh", "class.yours", text="")[:6] in m.value for m in phone.markdown)
        counts = [w[me]["tokens"] for w in written if me in w and w[me].get("partial")]  # as they came
        assert counts == list(range(1, len(alone[i]) + 1))  # a write a step drawn, one token more each
        last = [w[me] for w in written if me in w and w[me].get("partial")][-1]
        assert last["text"] == mine["text"] and "partial" not in mine


def test_a_rerun_never_copies_the_first_vote_into_the_second(app_model):
    """Review finding: a student's page rerun after the second vote opened stored their first vote again as the
    second. Only a move of the slider sends a vote."""
    teacher, code, _ = teacher_at("2.2.2")
    student = open_app(PAGE, lang="zh", room=code)
    student.slider(key="lesson_predict_K4").set_value(3.0).run()
    teacher.button(key="class_round_K4").click().run()
    student.run()
    student.run()
    assert store().predictions(code, "K4", 1) == {settings(student).lesson.me: 3.0}
    assert store().predictions(code, "K4", 2) == {}
    teacher.run()
    assert any(translate("zh", "class.answered", n=0, joined=1) in c.value for c in teacher.caption)  # vote 2's


def test_the_teachers_link_opened_again_shows_the_class_where_it_is(app_model):
    """A class started by `llmviz class start` (no device leads yet) at 2.2.2: the teacher's link opened at an older
    step (1.1.1, a link kept from the start) shows 2.2.2 and moves nothing; this device leads, and its Next moves
    the class."""
    from llmviz.classroom import classes

    code, key = classes.start(store(), step="2.2.2")
    at = open_app(PAGE, lang="zh", room=code, teach=key, lesson="1.1.1")
    assert settings(at).lesson.at == "2.2.2" and store().get(code).step == "2.2.2"
    assert store().get(code).leader == at.session_state[DEVICE] and not at.info
    at.button(key="lesson_next").click().run()
    assert store().get(code).step == "2.2.3"


def test_each_phone_shows_the_teachers_reveal_not_its_own(app_model):
    """In a class a student's device has no Reveal (thirty measurements would queue on one server and spoil the
    discussion): it says the teacher reveals, and once the projector has, it shows that very measurement (its
    verdict and its effect, from the projector's judged claim) beside the student's own prediction."""
    from llmviz.analysis import reveal as rv
    from llmviz.classroom import classes
    from llmviz.ui.lesson.lesson_measure import REVEALED_KEY

    teacher, code, _ = teacher_at("2.2.2")
    student = open_app(PAGE, lang="zh", room=code)
    assert not [b for b in student.button if b.key == "lesson_reveal_K4"]
    assert any(translate("zh", "class.reveal_on_projector") in c.value for c in student.caption)
    student.slider(key="lesson_predict_K4").set_value(2.0).run()
    teacher.session_state["llmviz_claims_report"] = report = k4_report(10.0 / 1.5)
    teacher.button(key="lesson_reveal_K4").click().run()
    student.run()  # as its poll does once the class's reveal is there
    mine, theirs = student.session_state[REVEALED_KEY]["K4"], teacher.session_state[REVEALED_KEY]["K4"]
    assert mine["source"] == "class" and mine["claim"] == report["claims"][0] == theirs["claim"]
    assert mine["verdict"] == theirs["verdict"] and rv.shown_of("K4", mine["measured"]) == pytest.approx(1.5)
    assert mine["predicted"] == pytest.approx(rv.effect_of("K4", 2.0)) and theirs["predicted"] is None
    assert not student.exception
    again = k4_report(10.0 / 1.2)["claims"][0]  # the teacher measured again (more rounds): x1.20 this time
    classes.put_reveal(store(), code, settings(teacher).lesson.teach, "K4",
                       {"claim": again, "when": "2026-12-05 12:05:00"})
    student.run()
    mine = student.session_state[REVEALED_KEY]["K4"]
    assert mine["when"] == "2026-12-05 12:05:00" and rv.shown_of("K4", mine["measured"]) == pytest.approx(1.2)


def test_the_app_sweeps_its_class_store_from_its_first_page(app_model, tmp_path, monkeypatch):
    """Any page starts the store's sweep (once a process): a class past its time ends though no one opens a class
    page again (the sweep itself: tests/classroom/test_class_lead.py)."""
    import threading

    from llmviz.classroom.stores import sweeper_name

    url = f"sqlite:///{tmp_path / 'swept.db'}"
    monkeypatch.setenv(STORE_ENV, url)
    assert sweeper_name(url) not in {x.name for x in threading.enumerate()}
    open_app(page_file("home"), lang="zh")
    assert [x.daemon for x in threading.enumerate() if x.name == sweeper_name(url)] == [True]


def test_a_student_changes_their_generated_name(app_model):
    """Anonymous by default, changeable: the new name is the class's (the projector's and the summary's); a blank one
    is refused and said, the name kept (the box holds at most NAME_CHARS; the library refuses more)."""
    _, code, _ = teacher_at("2.2.1")
    student = open_app(PAGE, lang="zh", room=code)
    [generated] = [s.name for s in store().students(code)]
    student.text_input(key="class_name").input("  Lin   Wei ").run()
    student.button(key="class_rename").click().run()
    assert [s.name for s in store().students(code)] == ["Lin Wei"]
    student.text_input(key="class_name").input("   ").run()
    student.button(key="class_rename").click().run()
    assert [s.name for s in store().students(code)] == ["Lin Wei"] and generated != "Lin Wei"
    assert [x.value for x in student.toast] == [translate("zh", "class.error.bad_value")]


def test_a_store_that_cannot_be_used_is_said_not_thrown(app_model, monkeypatch):
    """The store's own failure (here a file in a folder that cannot be made) gets a clear message, no traceback."""
    monkeypatch.setenv(STORE_ENV, "sqlite:////proc/llmviz-no-such/class.db")
    at = open_app(PAGE, lang="zh", lesson="2.2.1")
    at.button(key="class_start").click().run()
    assert not at.exception and settings(at).lesson.room == ""
    assert [e.value for e in at.error] == [translate("zh", "class.error.store")]


def test_a_cleared_review_box_stays_with_its_prompt(app_model):
    """Review finding: the boxes were keyed by their place in the list, which a resubmitted prompt moves to the end:
    the teacher's cleared box then stood for another student, and the prompt they refused came back ticked."""
    from llmviz.classroom import classes
    from llmviz.ui.lesson.lesson_workload import tick_key

    teacher, code, key = teacher_at("3.2.1")
    a, b = (open_app(PAGE, lang="zh", room=code) for _ in range(2))
    for phone, text in ((a, "济南的冬天"), (b, "unvetted words")):
        phone.text_input(key="class_prompt").input(text).run()
        phone.button(key="class_send").click().run()
    teacher.run()
    refused = next(r for r in classes.workload(store(), code, key) if r["text"] == "unvetted words")
    teacher.checkbox(key=tick_key(refused)).uncheck().run()
    a.text_input(key="class_prompt").input("人工智能").run()  # A sends again: its prompt moves to the end
    a.button(key="class_send").click().run()
    teacher.run()
    teacher.button(key="class_approve").click().run()
    assert {r["text"]: r["approved"] for r in classes.workload(store(), code, key)} == {
        "unvetted words": False, "人工智能": True}
