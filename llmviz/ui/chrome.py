"""What every page draws itself: its heading, the run it shows, and the small views (text shown as typed, CSV for
downloads, a step's timing). The frame around the pages (sidebar, navigation, presenter) is llmviz/ui/frame.py."""

from __future__ import annotations

import csv
import html
import io
import json
import re
import unicodedata

import streamlit as st

from llmviz.i18n.translator import Translator
from llmviz.trace.budget import is_shed
from llmviz.trace.config import RANDOM_MODELS
from llmviz.trace.hooks import writes_cache_rows
from llmviz.ui import demo, presenter, server, state
from llmviz.ui.charts import chart
from llmviz.ui.markdown import escape
from llmviz.viz.timing import span_bars


def translator() -> Translator:
    return Translator(state.settings().lang)


def heading(t: Translator, page: str) -> None:
    """A page's title and its introduction (catalog keys `<page>.title` and `<page>.intro`)."""
    if presenter.active():  # a projector: the title only, small, so the figures fit in one screen
        st.subheader(t(f"{page}.title"))
        return
    st.title(t(f"{page}.title"))
    st.markdown(t(f"{page}.intro"))


def shown_run(t: Translator, link_home: bool = True) -> state.Run | None:
    """The run this session shows (live or replayed), saying so when it is a replay; None after an error
    (then, on pages other than Home, a link back to where the model and prompt are chosen)."""
    run = state.current_run(t)
    if run is None:
        if link_home:
            st.page_link("app_pages/home.py", label=t("error.go_home"), icon=":material/home:")
        demo.offer(t, key="demo_after_error")  # the stepper still works, on the recording
    elif demo.showing(run):
        demo.notice(t, run)
    elif run.key is None:
        st.info(t("common.replay"))
    return run


def literal(text: str) -> str:
    """Text shown as typed inside markdown (a prompt or generated text may hold any character): the UI's one
    escaper (llmviz/ui/markdown.py); newlines become ↵ so a row stays one line."""
    return escape(text)


def missing_note(t: Translator, step, missing: list[str], shown: int = 6) -> None:
    """The one note for tensors a page draws that `step` does not hold: never copied within the session's budget
    (the step planned its capture: its records are there without their arrays), dropped later to keep
    within it (only its K/V row norms are left), or a trace recorded at capture meta/off or with a filter."""
    names = literal(", ".join(missing[:shown])) + (" …" if len(missing) > shown else "")
    if is_shed(step) and any(not writes_cache_rows(r.name) for r in step.hooks):
        st.warning(t("budget.not_kept", step=step.index, names=names, mb=server.policy().trace_budget_mb))
    elif is_shed(step):
        st.warning(t("budget.step_shed", step=step.index))
    else:
        st.warning(t("common.no_tensors", capture=literal(str(step.timings.get("capture", "?"))), names=names))


_HAIR_SPACE = "\u200a"  # Unicode whitespace to CommonMark (category Zs), next to invisible


def with_bold_tail(plain: str, tail: str) -> str:
    """`plain` then `tail` in bold, both shown as typed. CommonMark opens bold only where `**` is not followed
    by a space, and, when followed by punctuation (。, or an escape's backslash), only after a space or
    punctuation: 济南的冬天**。有** stays literal asterisks, so a hair space goes between the two there."""
    shown, bold = literal(plain), literal(tail)
    core = bold.strip()
    if not core:
        return shown + bold
    joint = bold[: bold.index(core[0])] or shown[-1:]
    if _punctuation(core[0]) and joint and not joint[-1].isspace() and not _punctuation(joint[-1]):
        shown += _HAIR_SPACE
    return shown + bold.replace(core, f"**{core}**", 1)


def _punctuation(char: str) -> bool:
    """CommonMark's Unicode punctuation: general categories P and S."""
    return unicodedata.category(char)[0] in "PS"


# OWASP's CSV injection rule: a spreadsheet runs a cell beginning with one of these as a formula (a
# student named =cmd|'/C calc'!A0 in the teacher's class summary). A plain decimal number or percentage ("-0.5",
# "+3", "-1e-3", "-12%") is one it reads as that number, never a formula, so it stays as written.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?%?")


def csv_cell(value):
    """A cell as a spreadsheet must read it: text that would start a formula gets a leading ', so it is read as
    text; anything not text (a number: -0.5 from a float), and text that is a plain decimal number, stays."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS) and not _DECIMAL.fullmatch(value):
        return "'" + value
    return value


def csv_text(rows: list[list]) -> str:
    """Rows (the first one the header) as CSV text, for a download button: every CSV the app writes, each cell
    through csv_cell."""
    buf = io.StringIO()
    csv.writer(buf).writerows([csv_cell(cell) for cell in row] for row in rows)
    return buf.getvalue()


def table_csv(rows: list[dict]) -> str:
    """Dicts of equal keys as CSV text: a header line of the keys, then one line per dict."""
    return csv_text([list(rows[0]), *([r[k] for k in rows[0]] for r in rows)] if rows else [])


def html_report(title: str, rows: list[dict], items: list[tuple[str, str]], lead: str = "", after: str = "") -> str:
    """One self-contained page (the exports' HTML): a title, a lead line, the rows as a table, a list of
    (bold id, text) items, then `after` (already HTML: a figure). Every text is escaped here."""
    head = "".join(f"<th>{html.escape(k)}</th>" for k in rows[0]) if rows else ""
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in r.values()) + "</tr>" for r in rows)
    listed = "".join(f"<li><b>{html.escape(k)}</b> {html.escape(v)}</li>" for k, v in items)
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            "<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto}table{border-collapse:collapse}"
            "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}</style></head><body>"
            f"<h1>{html.escape(title)}</h1><p>{html.escape(lead)}</p><table><tr>{head}</tr>{body}</table>"
            f"<ul>{listed}</ul>{after}</body></html>")


SPAN_KEYS = {"embed": "span.embed", "mask": "span.mask", "kv.write": "span.kv_write", "head": "span.head",
             "sample": "span.sample"}


def step_timing(t: Translator, step, title: str, key: str) -> None:
    """One step's timed spans as bars, labelled in the session's language, with what the timing includes."""
    spans = step.timings.get("spans_ms") or {}
    labels = [t(SPAN_KEYS[k]) if k in SPAN_KEYS else t("span.layer", i=k.removeprefix("layer.")) for k in spans]
    chart(t, span_bars(labels, list(spans.values()), title, t("span.ms")), key=key)
    tm = step.timings
    note = "common.capture_note" if tm.get("capture") == "full" else "common.capture_note_light"
    plan = f" {t('span.mask_note')}" if "mask" in spans else ""
    st.caption(t(note, device=escape(tm.get("device", "?")), threads=tm.get("threads", "?"),
                 capture=escape(tm.get("capture", "?"))) + plan)  # a replayed trace's fields: any text


def scroll_to(anchor: str) -> None:
    """Scroll the page to the element with id `anchor` (a header's anchor), once, from a zero-height frame:
    Streamlit has no scroll call, and the frame shares the page's origin."""
    st.iframe(f"<script>const target = window.parent.document.getElementById({json.dumps(anchor)});"
              "if (target) target.scrollIntoView({behavior: 'smooth', block: 'start'});</script>", height=1)


ARTICLE_SHAPES = RANDOM_MODELS[0]  # gpt2-124m-random: the article's 768 x 12 x 64 x 12 shapes, random weights


def use_model(name: str) -> None:
    """Run the session on another model from its prefill (the step and the drawn history are the old run's)."""
    state.update(model=name, step=0, history="", reseed="")
    state.forget_run()


def article_shapes_offered() -> bool:
    """Whether this server may run the article's shapes (a public server offers only its allow-list)."""
    policy = server.policy()
    return not policy.public or ARTICLE_SHAPES in policy.models


def _use_article_shapes() -> None:
    use_model(ARTICLE_SHAPES)


def article_shapes(t: Translator, run, key: str) -> None:
    """On a page that shows shapes: the model with the article's own shapes, offered (or named, when it runs)."""
    if run.trace.model_card.get("name") == ARTICLE_SHAPES:
        st.caption(t("shapes.using"))
        return
    if not article_shapes_offered():
        return
    left, right = st.columns([4, 1])
    left.caption(t("shapes.offer"))
    right.button(t("shapes.use"), key=key, on_click=_use_article_shapes)
