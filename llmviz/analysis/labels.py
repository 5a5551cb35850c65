"""Short, readable labels for tokens and positions, from the trace's token table (C1)."""

from __future__ import annotations

REPLACEMENT = "\ufffd"


def token_label(tokens: dict, token_id: int) -> str:
    """The token's text, or its bytes in hex when they are not a whole UTF-8 character (a byte token)."""
    info = tokens.get(int(token_id))
    if info is None:
        return f"#{token_id}"
    text = info["text"]
    if REPLACEMENT in text or not text.strip():
        return text.replace(" ", "␣") if text and REPLACEMENT not in text else f"<{info['bytes']}>"
    return text.replace("\n", "⏎")


def position_labels(trace, cursor: int) -> list[str]:
    """Label of the token at every position the cache holds after step `cursor`.

    Positions 0..n-1 are the prompt; position n+t-1 is the token sampled at step t-1 (fed in at step t).
    """
    ids = list(trace.prompt_ids) + [int(s.sampled[0]) for s in trace.steps[:cursor]]
    return [token_label(trace.tokens, i) for i in ids]
