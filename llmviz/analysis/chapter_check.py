"""A question per chapter of the lesson, answered from the student's own run (retrieval practice): the
numbers in it come from the run (its prompt's tokens, its model's shape, its batch's lengths) and from a draw of
the student's own (how many more tokens, which block size), so that two neighbours get two questions; the answer is
computed here and graded exactly, within a tolerance that only forgives rounding.

Each chapter's question turns on what the chapter showed: the cache's bytes (C4, C6), paged blocks (C9), the cache's
share of what a decode step reads (C7, K4), padding (C13, K5), static batching's idle slots (C15, K7), the cache at
the longest context (C17), what a longer context adds to a step (C18), and GQA's smaller cache (C19). Pure
arithmetic on a config dict; the UI asks, keeps the answers, and lists them at the end.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from llmviz.analysis.kv_memory import kv_bytes
from llmviz.analysis.predict import Setup, Shape, format_of, kv_read_bytes, weight_read_bytes

MIB = 2**20
CHAPTERS = ("1.1", "1.2", "2.1", "2.2", "3.1", "3.2", "4.1", "4.2", "5")


@dataclass(frozen=True)
class RunFacts:
    """What the questions read of the student's run."""

    config: dict  # ModelConfig.to_dict() of the run's model
    prompt: int  # the prompt's tokens
    element_bytes: int = 4  # one cached number's bytes as the run stores it
    dtype: str = "fp32"  # the weights' format
    batch: tuple[int, ...] = ()  # the token counts of the lesson's batch (the prompt and the article's §3.1 prompts)

    def __post_init__(self):
        if self.prompt < 1 or self.element_bytes < 1 or any(n < 1 for n in self.batch):
            raise ValueError(f"a prompt, a cached number and every batched prompt of at least one: {self}")


@dataclass(frozen=True)
class Question:
    chapter: str
    key: str  # the catalogue's lesson.q.<key> (text), lesson.q.<key>.why (the worked answer)
    values: dict = field(default_factory=dict)  # the numbers the question and its worked answer show
    answer: float = 0.0
    unit: str = "B"  # "B", "MiB", "blocks", "slots", "%"
    tolerance: float = 0.5  # what rounding may leave: half of the last digit the unit asks for

    @property
    def worked(self) -> str:
        """The worked answer's catalogue key: lesson.q.<key>.why, or its _exact twin where the tokens fill their
        blocks exactly (no block is partly empty then)."""
        exact = self.key == "blocks" and self.values["held"] % self.values["block"] == 0
        return f"lesson.q.{self.key}.why" + ("_exact" if exact else "")

    def right(self, given: float | None) -> bool:
        return given is not None and math.isfinite(given) and abs(given - self.answer) <= self.tolerance


def draw(seed: int) -> dict:
    """The student's own draw (kept for the session): the numbers a question adds to the run's."""
    rng = random.Random(seed)
    return {"more": rng.randint(2, 9), "block": rng.choice((8, 16, 32)), "later": rng.choice((64, 128, 256)),
            "outputs": tuple(rng.randint(3, 24) for _ in range(4)), "group": rng.choice((2, 4))}


def gaps(lengths: tuple) -> str:
    """The worked sum written out, each term shown: (9 − 4) + (9 − 9) + (9 − 5), not "9 minus the sum of the lengths"
    (which reads as 9 − 13)."""
    return " + ".join(f"({max(lengths)} − {x})" for x in lengths)


def question(chapter: str, facts: RunFacts, picked: dict) -> Question:
    """The chapter's question on this run and this draw."""
    c, n, eb = facts.config, facts.prompt, facts.element_bytes
    kv, hd, layers, heads = c["num_kv_heads"], c["head_dim"], c["num_layers"], c["num_heads"]
    more, block = picked["more"], picked["block"]
    if chapter == "1.1":
        return Question(chapter, "layer_bytes", {"n": n, "kv": kv, "hd": hd, "eb": eb}, kv_bytes(n, kv, hd, eb))
    if chapter == "1.2":
        return Question(chapter, "cache_after", {"n": n, "more": more, "kv": kv, "hd": hd, "eb": eb, "layers": layers},
                        kv_bytes(n + more, kv, hd, eb, layers))
    if chapter == "2.1":
        held = n + more
        return Question(chapter, "blocks", {"n": n, "more": more, "block": block, "held": held},
                        math.ceil(held / block), "blocks", 0.0)
    if chapter == "2.2":
        at, shape = n + more, Shape.from_config(c)
        kv_read = kv_read_bytes(Setup(shape, dtype=facts.dtype, kv_dtype=format_of(eb)), at)
        weights = weight_read_bytes(Setup(shape, dtype=facts.dtype))
        return Question(chapter, "kv_share", {"at": at, "weights": weights, "cache": kv_read},
                        100 * kv_read / (weights + kv_read), "%", 0.05)
    if chapter == "3.1":
        lengths = facts.batch or (n,)
        return Question(chapter, "padding", {"lengths": lengths, "longest": max(lengths), "count": len(lengths),
                                              "gaps": gaps(lengths)},
                        sum(max(lengths) - x for x in lengths), "slots", 0.0)
    if chapter == "3.2":
        outputs = picked["outputs"]
        return Question(chapter, "idle_slots", {"outputs": outputs, "longest": max(outputs), "count": len(outputs),
                                                 "gaps": gaps(outputs)},
                        sum(max(outputs) - x for x in outputs), "slots", 0.0)
    if chapter == "4.1":  # `more` sequences: one at the longest context is the budget slider's end at step 4.1.4
        longest, count = c["max_position_embeddings"], picked["more"]
        return Question(chapter, "longest_cache", {"longest": longest, "count": count, "kv": kv, "hd": hd, "eb": eb,
                                                   "layers": layers},
                        count * kv_bytes(longest, kv, hd, eb, layers) / MIB, "MiB", 0.05)
    if chapter == "4.2":
        later = picked["later"]
        return Question(chapter, "longer_step", {"n": n, "later": later, "kv": kv, "hd": hd, "eb": eb,
                                                 "layers": layers}, kv_bytes(later, kv, hd, eb, layers))
    if chapter == "5":  # fewer KV heads than the model has now (a GQA model's too), each shared by `per` heads
        smallest = next((g for g in range(2, kv + 1) if kv % g == 0), 1)  # an odd count (3) still gets fewer
        group = next((g for g in (picked["group"], 2) if kv % g == 0), smallest)
        fewer = kv // group
        return Question(chapter, "gqa_token", {"heads": heads, "per": heads // fewer, "kv": fewer, "hd": hd,
                                               "eb": eb, "layers": layers}, kv_bytes(1, fewer, hd, eb, layers))
    raise KeyError(f"no chapter {chapter!r}")


def recap_values(facts: RunFacts) -> dict:
    """The run's numbers a chapter's recap names (its catalogue text, lesson.recap.<chapter>)."""
    c, n, eb = facts.config, facts.prompt, facts.element_bytes
    kv, hd, layers = c["num_kv_heads"], c["head_dim"], c["num_layers"]
    shape = Shape.from_config(c)
    weights = weight_read_bytes(Setup(shape, dtype=facts.dtype))
    cache = kv_read_bytes(Setup(shape, dtype=facts.dtype, kv_dtype=format_of(eb)), n + 1)
    longest = c["max_position_embeddings"]
    return {"n": n, "d": c["hidden_size"], "heads": c["num_heads"], "kv": kv, "hd": hd, "layers": layers,
            "layer_bytes": kv_bytes(n, kv, hd, eb), "model_bytes": kv_bytes(n, kv, hd, eb, layers),
            "token_bytes": kv_bytes(1, kv, hd, eb, layers), "hundred_bytes": kv_bytes(100, kv, hd, eb, layers),
            "weights": weights, "kv_share": cache / (weights + cache), "blocks16": math.ceil(n / 16),
            "longest": longest, "longest_bytes": kv_bytes(longest, kv, hd, eb, layers)}
