"""The lesson's steps in the article's order: one registry (Lesson: the stock steps, and any a
registration places among them) the lesson page, its URL position, the `llmviz class` command and their tests read.
Each step names the section it follows, the live panel that draws it from the student's own run, the full page it
opens, the concepts and claim it shows, and the article's slips that bear on it (llmviz/analysis/article.py). Its
words are catalogue entries, `lesson.<id>.title` and `lesson.<id>.says`.

A position is a step's id (`1.2.3`: section 1.2, its third step), or `end` (the summary of what was revealed); a
chapter (`4.2`) opens its first step. Plain data here, below both the UI and the command line (a class is
started at a position the lesson has): no torch, no streamlit.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from llmviz.analysis import claim_spec
from llmviz.analysis.step_map import Recipe, check_recipe
from llmviz.errors import ConfigError, UnknownNameError

END = "end"


CLAIM = "claim"  # the panel of a claim's step: its prediction and Reveal (ui/lesson/lesson_reveal.py)


@dataclass(frozen=True)
class Step:
    """One step, whole: where it sits, what draws it, what it shows. Its words are the catalogue entries
    `lesson.<id>.title` and `lesson.<id>.says`; its panel a function of the lesson page's table (checked when the
    lesson is built: ui/lesson/lesson_steps.check_panels)."""

    id: str  # "1.2.3": the section, then the step's number in it
    panel: str  # the live panel that draws it (the lesson page's table of panels), CLAIM on a claim's step
    page: str  # the full page it opens with the same settings
    concepts: tuple = ()  # C and K ids it shows
    claim: str | None = None  # the claim a student may predict, then reveal (measured here)
    slips: tuple = ()  # ids of the article's slips shown with it
    map: Recipe | None = None  # the tensors its map draws per side (analysis/step_map.py); a claim's step: the claim's

    def __post_init__(self):
        parts = self.id.split(".")
        if not 2 <= len(parts) <= 3 or not all(p.isdigit() for p in parts):
            raise ConfigError(f"a step's id is its section and number (1.2.3 or 5.1), got {self.id!r}")
        if (self.panel == CLAIM) != (self.claim is not None):
            raise ConfigError(f"step {self.id}: a claim's step has the panel {CLAIM!r} and a claim, another neither")
        if self.claim is None and self.map is None:
            raise ConfigError(f"step {self.id} draws no map: give it one (analysis/step_map.py's parts)")
        try:
            check_recipe(self.recipe)
        except ValueError as exc:  # the claim it names, or its map (ConfigError is one)
            raise ConfigError(f"step {self.id}: {exc}", code="lesson_step") from None

    @property
    def section(self) -> str:
        return self.id.rsplit(".", 1)[0]

    @property
    def words(self) -> tuple[str, ...]:
        """The catalogue entries it reads: its title and text; on a claim's step also the claim's cause (and its
        variant for a recording without the figures the cause names) and, for a counted claim, the numbers behind
        it (ui/lesson/lesson_reveal.py, lesson_again.py)."""
        keys = [f"lesson.{self.id}.title", f"lesson.{self.id}.says"]
        if self.claim is not None:
            spec = claim_spec.claim(self.claim)
            keys.append(f"lesson.cause.{self.claim}")
            keys += [f"lesson.cause.{self.claim}_unmeasured"] if spec.facts else []
            keys += [f"lesson.behind.{self.claim}"] if spec.behind is not None else []
        return tuple(keys)

    @property
    def recipe(self) -> Recipe:
        """The map it draws: its own, or on a claim's step the tensors the claim's measurement turns on."""
        return self.map if self.map is not None else claim_spec.claim(self.claim).step_map


# maps several steps draw
PROMPT_IDS = {"prefill": ("ids",)}
GROWING = {"decode": ("cache+",)}  # the cache after each of the first decode steps
BUDGET = {"decode": ("cache@max",)}  # the cache at the model's longest context
READS = {"decode": ("weights", "cache")}  # what a decode step reads


CHAPTERS = ("1.1", "1.2", "2.1", "2.2", "3.1", "3.2", "4.1", "4.2", "5")
STOCK = (
    # §1.1 prefill
    Step("1.1.1", "tokens", "tokens", ("C1",), slips=("four_tokens",), map=PROMPT_IDS),
    Step("1.1.2", "bert", "tokens", ("C1", "C2"), slips=("bert_decodes",), map=PROMPT_IDS),
    Step("1.1.3", "embedding", "tokens", ("C2",), map={"prefill": ("ids", "embed")}),
    Step("1.1.4", "qkv", "prefill", ("C3",), slips=("one_head",), map={"prefill": ("embed", "q", "k", "v")}),
    Step("1.1.5", "scores", "prefill", ("C3",), map={"prefill": ("q", "k", "scores")}),
    Step("1.1.6", "kv_shape", "prefill", ("C4",), map={"prefill": ("k", "v", "cache")}),
    Step("1.1.7", "kv_bytes", "prefill", ("C4",), slips=("per_layer",), map={"prefill": ("cache",)}),
    Step("1.1.8", "claim", "claims", ("K1", "C3"), claim="K1", slips=("prefill_linear",)),
    # §1.2 decode
    Step("1.2.1", "decode_input", "decode", ("C5",), slips=("fifth_token",),
         map={"prefill": ("embed",), "decode": ("embed",)}),
    Step("1.2.2", "decode_qkv", "decode", ("C5",), slips=("only_q",),
         map={"prefill": ("q", "k", "v"), "decode": ("q", "k", "v", "cache")}),
    Step("1.2.3", "cache_growth", "decode", ("C6",), map={"prefill": ("cache",), "decode": ("cache+",)}),
    Step("1.2.4", "kv_bytes_1024", "memory", ("C4",), slips=("per_layer",), map={"decode": ("cache@1024",)}),
    Step("1.2.5", "roofline", "claims", ("C7",), slips=("decode_25ms",), map=READS),
    Step("1.2.6", "claim", "claims", ("K2", "C7"), claim="K2"),
    Step("1.2.7", "continuation", "decode", ("C5", "C6"),
         map={"decode": ("embed", "head")}),  # the embedded model continues 济南的冬天
    # §2.1 memory layouts
    Step("2.1.1", "contiguous", "kv_layouts", ("C8",), map=GROWING),
    Step("2.1.2", "paged", "kv_layouts", ("C9",), slips=("block_tables",), map=GROWING),
    Step("2.1.3", "claim", "kv_layouts", ("K3", "C8", "C9"), claim="K3"),
    # §2.2 graph optimizations
    Step("2.2.1", "claim", "compare", ("K11", "C10"), claim="K11", slips=("norm_fusion",)),
    Step("2.2.2", "claim", "compare", ("K4", "C11"), claim="K4", slips=("half_kv_bound",)),
    Step("2.2.3", "locality", "kv_layouts", ("C12",), slips=("prefetch",), map=GROWING),  # the article's prefetch loop
    # §3.1 prefill tuning
    Step("3.1.1", "claim", "batch", ("K5", "C13"), claim="K5", slips=("pad_sequences",)),
    Step("3.1.2", "claim", "compare", ("K6", "C14"), claim="K6", slips=("flash_import",)),
    # §3.2 decode tuning
    Step("3.2.1", "claim", "serving", ("K7", "C15"), claim="K7"),
    Step("3.2.2", "claim", "serving", ("K8", "C16"), claim="K8"),
    # §4.1 out of memory
    Step("4.1.1", "kv_shape", "memory", ("C17",), slips=("cache_shape",), map={"prefill": ("k", "v", "cache")}),
    Step("4.1.2", "oom_budget", "memory", ("C17",), slips=("oom_budget",), map=BUDGET),
    Step("4.1.3", "paged", "kv_layouts", ("C9", "C17"), map=GROWING),
    Step("4.1.4", "max_seq", "memory", ("C17",), map=BUDGET),
    # §4.2 decode slowing down
    Step("4.2.1", "slowdown", "decode", ("C18",), slips=("slowdown",), map={"decode": ("weights", "cache+")}),
    Step("4.2.2", "roofline", "claims", ("C7",), map=READS),
    Step("4.2.3", "kv_dtype", "compare", ("C11",), slips=("kv_cache_dtype",),
         map={"decode": ("cache/fp32", "cache/fp16")}),
    Step("4.2.4", "gqa", "compare", ("C19",), slips=("gqa_config",), map={"decode": ("q", "k", "cache")}),
    # §5 frontier
    Step("5.1", "sparse", "prefill", ("C20",), map={"prefill": ("scores",)}),
    Step("5.2", "quant", "compare", ("C21",), slips=("quant_names",), map={"decode": ("weights/fp32", "weights/int8")}),
    Step("5.3", "claim", "serving", ("K9", "C22"), claim="K9"),
    Step("5.4", "claim", "compare", ("K10", "C14", "C21"), claim="K10", slips=("a100_fp8",)),
)


class Lesson(Sequence):
    """The lesson's steps in order: the stock ones, and any a registration placed among them (`add`: a new step in
    one declaration, its panel and its words registered beside it). Like the switches' tables it is extended at import
    or in a test's fixture (`remove` undoes it), never per session: Streamlit sessions are threads of one process.
    Indexing, `len`, `in` and `index` read it as a tuple."""

    def __init__(self, steps: tuple[Step, ...]):
        self._steps = list(steps)
        self._stock = frozenset(s.id for s in steps)

    def __getitem__(self, i):
        return self._steps[i]

    def __len__(self) -> int:
        return len(self._steps)

    def add(self, step: Step, after: str) -> Step:
        """Place `step` right after the step `after`, in that step's chapter, or first in the next one when `after`
        ends its chapter (ConfigError naming what is wrong: an id taken, an unknown place, a chapter the lesson lacks,
        a step that would split a chapter)."""
        if not isinstance(step, Step):
            raise ConfigError(f"a lesson step is a Step, got {type(step).__name__}", code="lesson_step")
        ids = [s.id for s in self._steps]
        if step.id in ids:
            raise ConfigError(f"lesson step {step.id} is declared twice", code="lesson_step")
        if after not in ids:
            raise ConfigError(f"lesson step {step.id}: no step {after!r} to follow", code="lesson_step")
        if step.section not in CHAPTERS:
            raise ConfigError(f"lesson step {step.id}: no chapter {step.section} (chapters: {', '.join(CHAPTERS)})",
                              code="lesson_step")
        at = ids.index(after)
        here = CHAPTERS.index(self._steps[at].section)
        ends = at + 1 == len(self._steps) or self._steps[at + 1].section != self._steps[at].section
        if CHAPTERS.index(step.section) != here and not (CHAPTERS.index(step.section) == here + 1 and ends):
            raise ConfigError(f"lesson step {step.id} cannot follow {after}: its chapter {step.section} is not "
                              f"{after}'s, nor the next one's first step after {after} ends its chapter",
                              code="lesson_step")
        self._steps.insert(at + 1, step)
        return step

    def remove(self, step_id: str) -> None:
        """Undo an `add` (a test's registration); a stock step stays."""
        if step_id in self._stock:
            raise ConfigError(f"lesson step {step_id} is the lesson's own: it cannot be removed", code="lesson_step")
        self._steps = [s for s in self._steps if s.id != step_id]


class _Ids(Sequence):
    """A live view of the lesson's step ids (and `end` after them when `end`)."""

    def __init__(self, end: bool):
        self._end = end

    def _ids(self) -> list[str]:
        return [s.id for s in STEPS] + ([END] if self._end else [])

    def __getitem__(self, i):
        return self._ids()[i]

    def __iter__(self):
        return iter(self._ids())

    def index(self, value, *args) -> int:  # one pass (Sequence.index reads item by item)
        return self._ids().index(value, *args)

    def __len__(self) -> int:
        return len(STEPS) + self._end

    def __contains__(self, value) -> bool:
        return (value == END and self._end) or any(s.id == value for s in STEPS)


class _ChapterEnds(Collection):
    """A live view of the last step of each chapter: where its recap and question are (ui/lesson/lesson_check.py)."""

    def _ends(self) -> list[str]:
        steps = list(STEPS)
        return [a.id for a, b in zip(steps, (*steps[1:], None), strict=True) if b is None or b.section != a.section]

    def __contains__(self, value) -> bool:
        return value in self._ends()

    def __iter__(self):
        return iter(self._ends())

    def __len__(self) -> int:
        return len(self._ends())


STEPS = Lesson(STOCK)
STEP_IDS = _Ids(end=False)
CHAPTER_ENDS = _ChapterEnds()
POSITIONS = _Ids(end=True)  # every step's id, then END


def opened(text: str) -> str:
    """A link's lesson value as a position: a chapter ("4.2", "5") opens its first step; any other text is kept as
    it is (and checked against POSITIONS by the settings)."""
    return next((s.id for s in STEPS if s.section == text), text) if text in CHAPTERS else text


def position_of(text: str) -> int:
    """The index of a position in POSITIONS; ConfigError (a ValueError) when it names none (a link's hostile value)."""
    if text not in POSITIONS:
        raise ConfigError(f"no lesson step {text!r}")
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


def check_built(steps: tuple[Step, ...], panels: Collection[str], has_text: Callable[[str], bool]) -> None:
    """The lesson as the page builds it: each step's panel is one the page draws (CLAIM: the Reveal) and its words
    are in the catalogue; ConfigError naming every step that is not, never a KeyError mid-lesson."""
    wrong = [f"{s.id} (no panel {s.panel!r})" for s in steps if s.panel != CLAIM and s.panel not in panels]
    wrong += [f"{s.id} (no text {key})" for s in steps for key in s.words if not has_text(key)]
    ids = [s.id for s in steps]
    wrong += [f"{i} (twice)" for i in dict.fromkeys(i for i in ids if ids.count(i) > 1)]
    if wrong:
        raise ConfigError(f"the lesson's steps are not whole: {'; '.join(wrong)}", code="lesson_steps")
