"""A declared choice in the page's language: every page takes a KV layout's or an attention backend's
label and its one line from its declaration (llmviz/trace/extensions.py), stock or registered by an extension, with
the declaration's fallback to English. A name no table holds (an old trace's, an extension not loaded here) is
shown as itself."""

from __future__ import annotations

from llmviz.trace.extensions import Names
from llmviz.ui.markdown import escape


def label(t, table: Names, name) -> str:
    """`name`'s label in t's language; the name itself when `table` does not declare it."""
    return table.describe(name).label_in(t.lang) if name in table.recorded else str(name)


def about(t, table: Names, name) -> str:
    """`name`'s one line in t's language; "" when it has none or is not declared."""
    return table.describe(name).about_in(t.lang) if name in table.recorded else ""


def abouts(t, table: Names) -> str:
    """Every choice's one line, as a widget's help (markdown): "**label**: line", one per line (an extension's words
    are escaped: they are shown, not read as markdown)."""
    return "\n\n".join(f"**{escape(label(t, table, n))}**: {escape(about(t, table, n))}" for n in table
                       if about(t, table, n))


def takes(table: Names, name, option: str) -> bool:
    """Whether the declared choice `name` reads the EngineConfig field `option` (the paged layout's block size)."""
    return name in table.recorded and option in table.describe(name).options
