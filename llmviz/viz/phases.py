"""The prefill / decode diagram of the Home page, as Graphviz DOT (rendered by the browser)."""

from __future__ import annotations


def phases_dot(prompt: str, prefill: str, cache: str, decode: str, token: str, edges: tuple[str, str, str],
               rankdir: str = "LR") -> str:
    """Prompt -> prefill (all tokens at once) -> KV cache <-> decode (one token per step) -> token, looping.

    edges: the labels of prefill -> cache (what is written), cache -> decode (read), decode -> cache (append).
    rankdir: LR (left to right, a wide screen) or TB (top to bottom: a phone, where LR's labels shrink unreadably).
    """
    def q(s: str) -> str:
        return '"' + s.replace('"', "'") + '"'

    return f"""digraph {{
  rankdir={rankdir}; bgcolor="transparent";
  node [shape=box, style="rounded,filled", fontname="Noto Sans CJK SC,sans-serif", fillcolor="#eef3fb"];
  prompt [label={q(prompt)}, fillcolor="#ffffff"];
  prefill [label={q(prefill)}, fillcolor="#dbe8ff"];
  cache [label={q(cache)}, shape=cylinder, fillcolor="#fff1d6"];
  decode [label={q(decode)}, fillcolor="#dff5e3"];
  token [label={q(token)}, fillcolor="#ffffff"];
  prompt -> prefill; prefill -> cache [label={q(edges[0])}]; prefill -> token;
  cache -> decode [label={q(edges[1])}]; decode -> cache [label={q(edges[2])}]; decode -> token;
  token -> decode [style=dashed];
}}"""
