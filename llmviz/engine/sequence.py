"""Sequence: one request's own state, as a serving engine keeps it (C13, C15).

A sequence owns its token ids (prompt, then what it generated), its sampling settings and its random
generator, and its finished reason. How many of its tokens sit in the KV cache is not stored here:
the cache owns that (`KVCache.length(seq.seq_id)`), so there is one owner of the cache length. A batch
is a list of sequences of different lengths.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from llmviz.errors import PromptError
from llmviz.trace.config import SamplingConfig


@dataclass
class Sequence:
    seq_id: int
    ids: list[int]  # prompt + generated tokens, in order
    prompt_len: int
    sampling: SamplingConfig
    generator: torch.Generator
    seed: int
    prompt: str = ""  # the text it came from, if any
    finished: str = ""  # "" while running; "eos" | "max_seq_len" | "max_new_tokens" once it stops
    _saved: tuple = field(default=(), repr=False)

    @classmethod
    def start(cls, seq_id: int, ids: list[int], sampling: SamplingConfig, seed: int, device: torch.device,
              prompt: str = "") -> Sequence:
        ids = [int(i) for i in ids]
        if not ids:
            raise PromptError("a sequence needs at least one prompt token", code="prompt_empty")
        generator = torch.Generator(device=device).manual_seed(seed)
        return cls(seq_id, ids, len(ids), sampling, generator, seed, prompt)

    def history(self, device: torch.device) -> torch.Tensor:
        """[1, t] every token so far (prompt and generated, never padding): the repetition-penalty history."""
        return torch.tensor([self.ids], dtype=torch.long, device=device)

    def checkpoint(self) -> None:
        """Remember the state a failed step must return to (the cache is truncated separately)."""
        self._saved = (len(self.ids), self.finished, self.generator.get_state())

    def restore(self) -> None:
        n, self.finished, rng = self._saved
        del self.ids[n:]
        self.generator.set_state(rng)
