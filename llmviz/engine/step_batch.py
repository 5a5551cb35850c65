"""StepBatch: everything one forward pass needs to know about its rows, built by the caller and handed
down the model (nano-vllm's per-step context, but passed, never global) (C5, C13, C20).

Row i feeds `n_real[i]` new tokens at positions start_list[i] .. start_list[i] + n_real[i] - 1, padded to a
common width n (right or left padding). Pad tokens are never written into the KV cache and never
attended to: a row's cache holds only its own tokens, so a batch of prompts of different lengths gives
every row what it gives alone. A finished row of a static batch stays in the pass as padding only
(C13's wasted slot) and feeds nothing.

Positions travel as tensors; the Python ints beside them (n_real, start_list, key_len) only shape
slices.

A packed step (a serving engine's "varlen" batch, C15) lays every row's real tokens end to end in one row
of m = sum(n_real) tokens for everything that works token by token (embedding, projections, norms, MLP,
head), so a prefill chunk beside one-token decode rows costs its own tokens and no padding. Only the
attention core sees the padded [b, n] layout, where each row reads its own cache.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from llmviz.errors import ConfigError
from llmviz.trace.sparsity import BlockSparse, window_allows

PAD_ID = 0  # the id fed in a pad slot; its output is never read and its K/V never stored


@dataclass(frozen=True)
class StepMask:
    """Which keys each query may see, for one step and one window size.

    mask: [b, 1, n, n_k] bool (True = may attend), or None when every key read is visible (a decode step
    of equal-length rows). causal_square: a prefill from position 0 of equal-length rows without a
    window, which SDPA can run with is_causal=True (and so pick a flash kernel). key_start: the first
    key slot read (> 0 only for a sliding window in such a decode step: fewer keys are read at all).
    """

    mask: torch.Tensor | None
    causal_square: bool
    key_start: int
    window: int = 0
    padded: bool = False
    sparse: BlockSparse | None = None

    @property
    def note(self) -> str:
        """What the mask did, in words (recorded with the scores)."""
        window = f" within a {self.window}-token sliding window" if self.window else ""
        if self.sparse is not None:
            window = f", {self.sparse.describe()}"
        if self.mask is None:
            return f"no mask needed: the one new query may see every cached key{window}"
        pad = "; padding and other rows' unused cache slots are masked too" if self.padded else ""
        return f"causal mask{window}: -inf where a query may not look{pad}"


@dataclass(frozen=True)
class PackedGroup:
    """Rows of a packed step whose queries are equally wide, attended in one call: all one-token (decode)
    rows together, each wider row (a prefill chunk) alone, so no query is padding."""

    rows: torch.Tensor  # [g] batch rows
    tokens: torch.Tensor  # [g * width] their tokens' indices in the packed row, row-major
    width: int  # new tokens per row
    first_col: int  # the column of each row's first real token in the padded layout (its mask's rows)
    span: tuple | None = None  # (first row, end row, first token, end token) when the rows are consecutive: slices


@dataclass
class StepBatch:
    ids: torch.Tensor  # [b, n] token ids, PAD_ID in pad slots
    positions: torch.Tensor  # [b, n] positions of the tokens (0 in pad slots)
    real: torch.Tensor  # [b, n] bool: a real token (not padding)
    last_cols: torch.Tensor  # [b] column of each row's last real token (0 for a row that feeds nothing)
    n_real: tuple  # per row, the real tokens fed this step (Python ints)
    start_list: tuple  # per row, the tokens it had cached before this step
    key_len: int  # key slots read per row: max(start + n_real)
    uniform: bool  # every row feeds all n columns from the same start: slices, no masks for padding
    backend: str
    masks: dict = field(default_factory=dict)  # window -> StepMask
    kv: object = None  # the cache's addressing for this step (rows, block tables), set by the cache
    seq_ids: tuple = ()
    layer_windows: tuple = ()  # per layer: its sliding window (0 = full causal attention)
    # Static shapes (a compiled decode step): every row reads all key_len = max_seq slots of its cache row
    # and the mask hides what is not written yet, so no shape or Python int changes from step to step.
    static: bool = False
    packed: bool = False
    packed_last: torch.Tensor | None = None  # [b] index in the packed row of each row's last real token
    groups: tuple = ()  # PackedGroup: the rows whose attention runs together in a packed step

    def set_masks(self, key_positions: torch.Tensor | None = None) -> None:
        """One mask per distinct window. key_positions [b, n_k]: the position each key slot holds, when a
        cache reads its keys in another order than slot = position (a ring buffer)."""
        self.masks = {w: step_mask(self, w, key_positions) for w in set(self.layer_windows)}

    @property
    def batch(self) -> int:
        return self.ids.shape[0]

    @property
    def width(self) -> int:
        return self.ids.shape[1]

    @property
    def start(self) -> int:
        """The common start of a uniform batch."""
        return self.start_list[0]

    @property
    def real_rows(self) -> torch.Tensor:
        """[m] the batch row of every real token, in row-major order."""
        b, n = self.ids.shape
        return torch.arange(b, device=self.ids.device)[:, None].expand(b, n)[self.real]

    @property
    def real_positions(self) -> torch.Tensor:
        """[m] the position of every real token, in the same order as real_rows."""
        return self.positions[self.real]

    def unpack(self, t: torch.Tensor) -> torch.Tensor:
        """A packed [1, heads, m, hd] -> the padded [b, heads, n, hd] (zeros in pad slots)."""
        _, heads, _, hd = t.shape
        out = t.new_zeros(self.batch, self.width, heads, hd)  # [b, n, heads, hd]
        out[self.real] = t[0].transpose(0, 1)  # [m, heads, hd] into the real slots, row-major
        return out.transpose(1, 2)


def layer_windows(cfg, window: int | BlockSparse | None = None) -> tuple:
    """Each layer's mask beyond causal: the model's own window (Mistral's), or `window` on every layer (the
    sliding-window switch, or a block-sparse pattern: C20)."""
    return (window,) * cfg.num_layers if window else tuple(cfg.window(i) for i in range(cfg.num_layers))


def build_step(rows: list[list[int]], starts: list[int], *, backend: str, windows: tuple, device: torch.device,
               padding: str = "right", seq_ids=(), static_len: int | None = None, packed: bool = False) -> StepBatch:
    """rows: the new token ids of each row (a row may be empty: it only pads); starts: their cached lengths.
    packed: lay the real tokens end to end outside attention (no effect when every row feeds as many tokens)."""
    b = len(rows)
    n_real = tuple(len(r) for r in rows)
    n = max(max(n_real), 1)
    ids = torch.full((b, n), PAD_ID, dtype=torch.long)
    positions = torch.zeros((b, n), dtype=torch.long)
    real = torch.zeros((b, n), dtype=torch.bool)
    at_rows, at_cols, values, places, last = [], [], [], [], [0] * b  # the real slots, gathered in Python first
    for i, (row, start) in enumerate(zip(rows, starts, strict=True)):
        k = len(row)
        if not k:
            continue
        first = n - k if padding == "left" else 0
        at_rows += [i] * k
        at_cols += range(first, first + k)
        values += row
        places += range(start, start + k)
        last[i] = first + k - 1
    if values:  # one write per tensor, not four per row
        where = (torch.tensor(at_rows), torch.tensor(at_cols))
        ids[where] = torch.tensor(values, dtype=torch.long)
        positions[where] = torch.tensor(places, dtype=torch.long)
        real[where] = True
    last_cols = torch.tensor(last, dtype=torch.long)
    uniform = all(k == n for k in n_real) and len(set(starts)) == 1
    key_len = static_len or max(s + k for s, k in zip(starts, n_real, strict=True))
    step = StepBatch(ids.to(device), positions.to(device), real.to(device),
                     last_cols.to(device), n_real,
                     tuple(int(s) for s in starts), key_len, uniform, backend, seq_ids=tuple(seq_ids),
                     layer_windows=tuple(windows), static=static_len is not None)
    if packed and len(set(n_real)) > 1:  # rows of one width (decode rows at different lengths) need no packing
        if step.static:
            raise ConfigError("a packed step has no static shapes: it cannot be a compiled step")
        step.packed = True
        ends = torch.tensor(n_real, dtype=torch.long).cumsum(0) - 1  # [b]
        step.packed_last = ends.clamp(min=0).to(device)  # a row that feeds nothing reads token 0, never used
        step.groups = _packed_groups(n_real, n, padding, device)
    step.set_masks()
    return step


def _packed_groups(n_real: tuple, n: int, padding: str, device) -> tuple:
    offsets = [0]
    for k in n_real:
        offsets.append(offsets[-1] + k)
    groups = [[i] for i, k in enumerate(n_real) if k > 1]
    decoding = [i for i, k in enumerate(n_real) if k == 1]
    if decoding:
        groups.insert(0, decoding)
    out = []
    for rows in groups:
        k = n_real[rows[0]]
        tokens = [t for i in rows for t in range(offsets[i], offsets[i] + k)]
        consecutive = rows == list(range(rows[0], rows[0] + len(rows)))  # a decode group ahead of the chunks, a chunk
        span = (rows[0], rows[-1] + 1, tokens[0], tokens[-1] + 1) if consecutive else None
        out.append(PackedGroup(torch.tensor(rows, device=device), torch.tensor(tokens, device=device), k,
                               n - k if padding == "left" else 0, span))
    return tuple(out)


def whole_sequence(ids: torch.Tensor, backend: str, windows: tuple) -> StepBatch:
    """ids [b, n] at positions 0..n-1 with no cache (training, a plain full forward pass)."""
    b, n = ids.shape
    positions = torch.arange(n, device=ids.device).expand(b, n)
    step = StepBatch(ids, positions, torch.ones_like(ids, dtype=torch.bool),
                     torch.full((b,), n - 1, dtype=torch.long, device=ids.device),
                     (n,) * b, (0,) * b, n, True, backend, layer_windows=tuple(windows))
    step.set_masks()
    return step


def step_mask(step: StepBatch, window: int | BlockSparse, key_positions: torch.Tensor | None = None) -> StepMask:
    """The mask over each row's key slots: slot s holds position s, or key_positions[row, s] when given
    (a slot that holds nothing has a position beyond every query's, so it is masked). `window` is a layer's
    sliding window (0: none) or a block-sparse pattern."""
    sparse = window if isinstance(window, BlockSparse) else None
    window = 0 if sparse is not None else window
    n, total = step.width, step.key_len
    if key_positions is None and step.uniform and n == 1 and not step.static and sparse is None:
        start = max(0, total - window) if window else 0
        return StepMask(None, False, start, window)  # one query per row sees every key from `start` on
    if key_positions is None:
        k_pos = torch.arange(total, device=step.ids.device)[None, None, :]  # [1, 1, n_k]
    else:
        k_pos = key_positions[:, None, :]  # [b, 1, n_k]
    # causal (which also hides the slots past a row's own length), within the window if any: trace/sparsity's rule
    allowed = window_allows(step.positions[:, :, None], k_pos, window)  # [b, n, n_k]
    if sparse is not None:  # the rule of trace/sparsity.py, on the positions of queries and keys
        allowed &= sparse.allows(step.positions[:, :, None], k_pos)
    if not step.uniform:
        # a pad query sees slot 0 only, so its softmax stays finite; its output is never read
        slot0 = torch.zeros(allowed.shape[-1], dtype=torch.bool, device=allowed.device)
        slot0[0] = True
        allowed = torch.where(step.real[:, :, None], allowed, slot0)
    square = (key_positions is None and step.uniform and step.start == 0 and not window and not step.static
              and sparse is None)
    return StepMask(allowed[:, None], square, 0, window, padded=not step.uniform or step.static, sparse=sparse)
