"""The lesson's steps in the article's order (issue 23): one registry the lesson page, its URL position and its
tests read. Each step names the section it follows, the live panel that draws it from the student's own run, the
full page it opens, the concepts and claim it shows, and the article's slips that bear on it
(llmviz/analysis/article.py). Its words are catalogue entries, `lesson.<id>.title` and `lesson.<id>.says`.

A position is a step's id (`1.2.3`: section 1.2, its third step), or `end` (the summary of what was revealed).
No torch, no streamlit here.
"""

from __future__ import annotations

from dataclasses import dataclass

from llmviz.classroom.classes import is_code, normal_code
from llmviz.ui.url_fields import Field, Section, between, one_of

END = "end"


@dataclass(frozen=True)
class Step:
    id: str  # "1.2.3": the section, then the step's number in it
    panel: str  # the live panel that draws it (the lesson page's table of panels)
    page: str  # the full page it opens with the same settings
    concepts: tuple = ()  # C and K ids it shows
    claim: str | None = None  # the claim a student may predict, then reveal (measured here)
    slips: tuple = ()  # ids of the article's slips shown with it

    @property
    def section(self) -> str:
        return self.id.rsplit(".", 1)[0]


CHAPTERS = ("1.1", "1.2", "2.1", "2.2", "3.1", "3.2", "4.1", "4.2", "5")
STEPS = (
    # §1.1 prefill
    Step("1.1.1", "tokens", "tokens", ("C1",), slips=("four_tokens",)),
    Step("1.1.2", "bert", "tokens", ("C1", "C2"), slips=("bert_decodes",)),
    Step("1.1.3", "embedding", "tokens", ("C2",)),
    Step("1.1.4", "qkv", "prefill", ("C3",), slips=("one_head",)),
    Step("1.1.5", "scores", "prefill", ("C3",)),
    Step("1.1.6", "kv_shape", "prefill", ("C4",)),
    Step("1.1.7", "kv_bytes", "prefill", ("C4",), slips=("per_layer",)),
    Step("1.1.8", "claim", "claims", ("K1", "C3"), claim="K1", slips=("prefill_linear",)),
    # §1.2 decode
    Step("1.2.1", "decode_input", "decode", ("C5",), slips=("fifth_token",)),
    Step("1.2.2", "decode_qkv", "decode", ("C5",), slips=("only_q",)),
    Step("1.2.3", "cache_growth", "decode", ("C6",)),
    Step("1.2.4", "kv_bytes_1024", "memory", ("C4",), slips=("per_layer",)),
    Step("1.2.5", "roofline", "claims", ("C7",), slips=("decode_25ms",)),
    Step("1.2.6", "claim", "claims", ("K2", "C7"), claim="K2"),
    Step("1.2.7", "continuation", "decode", ("C5", "C6")),  # the embedded model continues 济南的冬天
    # §2.1 memory layouts
    Step("2.1.1", "contiguous", "kv_layouts", ("C8",)),
    Step("2.1.2", "paged", "kv_layouts", ("C9",), slips=("block_tables",)),
    Step("2.1.3", "claim", "kv_layouts", ("K3", "C8", "C9"), claim="K3"),
    # §2.2 graph optimizations
    Step("2.2.1", "claim", "compare", ("K11", "C10"), claim="K11"),
    Step("2.2.2", "claim", "compare", ("K4", "C11"), claim="K4", slips=("half_kv_bound",)),
    Step("2.2.3", "locality", "kv_layouts", ("C12",), slips=("prefetch",)),  # the article's prefetch loop
    # §3.1 prefill tuning
    Step("3.1.1", "claim", "batch", ("K5", "C13"), claim="K5", slips=("pad_sequences",)),
    Step("3.1.2", "claim", "compare", ("K6", "C14"), claim="K6", slips=("flash_import",)),
    # §3.2 decode tuning
    Step("3.2.1", "claim", "serving", ("K7", "C15"), claim="K7"),
    Step("3.2.2", "claim", "serving", ("K8", "C16"), claim="K8"),
    # §4.1 out of memory
    Step("4.1.1", "kv_shape", "memory", ("C17",), slips=("cache_shape",)),
    Step("4.1.2", "oom_budget", "memory", ("C17",), slips=("oom_budget",)),
    Step("4.1.3", "paged", "kv_layouts", ("C9", "C17")),
    Step("4.1.4", "max_seq", "memory", ("C17",)),
    # §4.2 decode slowing down
    Step("4.2.1", "slowdown", "decode", ("C18",), slips=("slowdown",)),
    Step("4.2.2", "roofline", "claims", ("C7",)),
    Step("4.2.3", "kv_dtype", "compare", ("C11",), slips=("kv_cache_dtype",)),
    Step("4.2.4", "gqa", "compare", ("C19",), slips=("gqa_config",)),
    # §5 frontier
    Step("5.1", "sparse", "prefill", ("C20",)),
    Step("5.2", "quant", "compare", ("C21",), slips=("quant_names",)),
    Step("5.3", "claim", "serving", ("K9", "C22"), claim="K9"),
    Step("5.4", "claim", "compare", ("K10", "C14", "C21"), claim="K10", slips=("a100_fp8",)),
)
STEP_IDS = tuple(s.id for s in STEPS)
# The last step of each chapter: where its recap and question are (ui/lesson/lesson_check.py)
CHAPTER_ENDS = {a.id for a, b in zip(STEPS, (*STEPS[1:], None), strict=True) if b is None or b.section != a.section}
POSITIONS = (*STEP_IDS, END)


def opened(text: str) -> str:
    """A link's lesson value as a position: a chapter ("4.2", "5") opens its first step; any other text is kept as
    it is (and checked against POSITIONS by the settings)."""
    return next((s.id for s in STEPS if s.section == text), text) if text in CHAPTERS else text


def position_of(text: str) -> int:
    """The index of a position in POSITIONS; ValueError when it names none (a link's hostile value)."""
    if text not in POSITIONS:
        raise ValueError(f"no lesson step {text!r}")
    return POSITIONS.index(text)



# The lesson's URL section (ui/url_fields.py): the step shown, "1.2.3" or "end"; a chapter ("4.2") opens its first
# opened; from_lesson=1: the page shown was opened from that step, and offers the way back (ui/lesson_link.py)
# room, teach, me, review: a class in one room (issue 39): its join code, the teacher's key (the teacher's URL only),
# this device's student id once joined; review=1 on the teacher's own second device (it reads and approves the
# class's prompts off the projector, and never moves the class)
SECTION = Section("lesson", (Field("lesson", STEP_IDS[0], one_of(POSITIONS), parse=opened),
                             Field("from_lesson", 0, between(0, 1)),
                             Field("room", "", lambda v: v == "" or is_code(v), parse=normal_code),
                             Field("teach", "", lambda v: len(v) <= 64 and all(c.isalnum() or c in "-_" for c in v)),
                             Field("me", "", lambda v: len(v) <= 32 and all(c in "0123456789abcdef" for c in v)),
                             Field("review", 0, between(0, 1))))
