"""KV cache bytes: the formula, the bytes of the recorded tensors, and the article's example (C4).

The cache keeps, for every layer, the keys and the values of every token: per layer K and V are each
[tokens, kv_heads, head_dim]. So

    bytes = tokens x kv_heads x head_dim x 2 (K and V) x bytes per element x layers (x batch).

The article's example (BERT-base, per layer): 4 tokens x 12 heads x 64 dims x 2 x 4 bytes (fp32)
= 24,576 bytes = 24 KB. Here the same arithmetic is redone with the loaded model's numbers and the
prompt's real token count, and set next to what the engine read from its allocated tensors.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def kv_bytes(tokens: int, kv_heads: int, head_dim: int, element_bytes: int, layers: int = 1,
             batch: int = 1) -> int:
    """C4's formula."""
    return tokens * kv_heads * head_dim * 2 * element_bytes * layers * batch


@dataclass(frozen=True)
class KVExample:
    """One line of the article's arithmetic: the numbers that multiply into the per-layer bytes."""

    tokens: int
    kv_heads: int
    head_dim: int
    element_bytes: int
    layers: int = 1

    @property
    def per_layer(self) -> int:
        return kv_bytes(self.tokens, self.kv_heads, self.head_dim, self.element_bytes)

    @property
    def total(self) -> int:
        return self.per_layer * self.layers

    def formula(self) -> str:
        """'4 × 12 × 64 × 2 × 4 B = 24,576 B' (per layer)."""
        return (f"{self.tokens} × {self.kv_heads} × {self.head_dim} × 2 × {self.element_bytes} B"
                f" = {self.per_layer:,} B")


ARTICLE_EXAMPLE = KVExample(tokens=4, kv_heads=12, head_dim=64, element_bytes=4, layers=12)  # BERT-base, fp32


@dataclass(frozen=True)
class LayerKV:
    layer: int
    k_shape: tuple  # [tokens, kv_heads, head_dim], the article's layout
    v_shape: tuple
    bytes: int  # K and V of this layer in the cache's element size


def layer_kv(k_shapes: list, v_shapes: list, element_bytes: int) -> list[LayerKV]:
    """Per-layer K/V from the recorded k and v shapes [b, kv, n, hd], in the cache's dtype.

    The hooks record [b, kv, n, hd]; the article writes one sequence's K as [n, kv, hd]
    (the same numbers, heads and tokens swapped).
    """
    rows = []
    for layer, (k, v) in enumerate(zip(k_shapes, v_shapes, strict=True)):
        k_art = (int(k[2]), int(k[1]), int(k[3]))  # [b, kv, n, hd] -> [n, kv, hd]
        v_art = (int(v[2]), int(v[1]), int(v[3]))
        count = int(np.prod(k, dtype=np.int64)) + int(np.prod(v, dtype=np.int64))
        rows.append(LayerKV(layer, k_art, v_art, count * element_bytes))
    return rows


def human(n: float) -> str:
    """Bytes in binary units, as the article counts them (24,576 B = 24 KB): '24.0 KiB'."""
    if abs(n) < 1024:
        return f"{n:,.0f} B"
    for unit in ("KiB", "MiB", "GiB"):
        n /= 1024
        if abs(n) < 1024 or unit == "GiB":
            break
    return f"{n:,.1f} {unit}"


def in_one_unit(values: list[float]) -> list[str]:
    """Byte counts shown side by side, all in the binary unit the largest reads best in (no KiB beside MiB)."""
    largest = max((abs(v) for v in values), default=0)
    unit, size = next(((u, s) for u, s in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)) if largest >= s),
                      ("B", 1))
    digits = 0 if unit == "B" else (2 if largest / size < 100 else 1)
    return [f"{v / size:,.{digits}f} {unit}" for v in values]


def comparison(article: KVExample, here: KVExample) -> list[tuple[str, str, str]]:
    """Rows (what, article, this model) of the 24 KB example redone; `what` is a message-key suffix."""
    rows = [("tokens", article.tokens, here.tokens), ("kv_heads", article.kv_heads, here.kv_heads),
            ("head_dim", article.head_dim, here.head_dim), ("k_and_v", 2, 2),
            ("element_bytes", article.element_bytes, here.element_bytes)]
    out = [(what, str(a), str(b)) for what, a, b in rows]
    out.append(("per_layer", f"{article.per_layer:,} B ({human(article.per_layer)})",
                f"{here.per_layer:,} B ({human(here.per_layer)})"))
    out.append(("layers", str(article.layers), str(here.layers)))
    out.append(("total", f"{article.total:,} B ({human(article.total)})", f"{here.total:,} B ({human(here.total)})"))
    return out
