"""The baselines a trained model's bits per character are set beside: character unigram and bigram
models counted on the training text, scored on held-out text. No torch; plain counting.

Unigram: add-one over the characters the training text holds, plus one slot for every character it does not.
Bigram: Witten-Bell interpolation with that unigram, P(c | p) = (n(p, c) + t(p) P1(c)) / (n(p) + t(p)), where n
counts the pairs and t(p) is the number of distinct characters seen after p: no weight to tune on the held-out
text. A document's first character is scored by the unigram.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter


class CharModels:
    """Unigram and bigram character counts of a list of training documents."""

    def __init__(self, documents: list[str]):
        self.unigrams = Counter(ch for d in documents for ch in d)
        self.total = sum(self.unigrams.values())
        self.pairs = Counter(pair for d in documents for pair in itertools.pairwise(d))
        self.after: Counter = Counter()  # n(p): pairs that start with p
        for (a, _), n in self.pairs.items():
            self.after[a] += n
        self.followers = Counter(a for a, _ in self.pairs)  # t(p): distinct characters after p

    def p1(self, ch: str) -> float:
        """Add-one unigram over the seen characters and one slot for the unseen ones."""
        return (self.unigrams.get(ch, 0) + 1) / (self.total + len(self.unigrams) + 1)

    def p2(self, prev: str, ch: str) -> float:
        n, t = self.after.get(prev, 0), self.followers.get(prev, 0)
        if n == 0:
            return self.p1(ch)
        return (self.pairs.get((prev, ch), 0) + t * self.p1(ch)) / (n + t)

    def bits_per_char(self, documents: list[str], order: int) -> float:
        """Bits per character of held-out `documents` under the unigram (order 1) or the bigram (order 2)."""
        bits, chars = 0.0, 0
        for doc in documents:
            for i, ch in enumerate(doc):
                p = self.p1(ch) if order == 1 or i == 0 else self.p2(doc[i - 1], ch)
                bits -= math.log2(p)
                chars += 1
        return bits / chars
