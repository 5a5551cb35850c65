"""The lesson's steps in the article's order (issue 23): one registry the lesson page, its URL position, the
`llmviz class` command and their tests read. Each step names the section it follows, the live panel that draws it
from the student's own run, the full page it opens, the concepts and claim it shows, and the article's slips that
bear on it (llmviz/analysis/article.py). Its words are catalogue entries, `lesson.<id>.title` and `lesson.<id>.says`.

A position is a step's id (`1.2.3`: section 1.2, its third step), or `end` (the summary of what was revealed); a
chapter (`4.2`) opens its first step. Plain data here, below both the UI and the command line (issue 47: a class is
started at a position the lesson has): no torch, no streamlit.
"""

from __future__ import annotations

from dataclasses import dataclass

from llmviz.errors import UnknownNameError

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


def position(text: str) -> str:
    """The position a value names, as the lesson's URL reads it (`opened`, then one of POSITIONS): a step's id or
    `end` as it is, a chapter its first step. Anything else is UnknownNameError (a ConfigError), naming the forms
    and a few of the lesson's own ids: a class started at a position the lesson lacks fails every student page."""
    found = opened(text)
    if found not in POSITIONS:
        some = ", ".join(dict.fromkeys((STEP_IDS[0], STEP_IDS[len(STEP_IDS) // 2], STEP_IDS[-1])))
        raise UnknownNameError(f"no lesson step {text!r}: a step is its section and number ({some}, ... of "
                               f"{len(STEP_IDS)} steps), a chapter {CHAPTERS[0]} to {CHAPTERS[-1]} opens its first "
                               f"step, and {END!r} the lesson's summary", code="no_step", step=text)
    return found
