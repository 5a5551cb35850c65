"""How the UI shows an error: a message the user can act on, never a traceback.

Below every other UI module that shows errors (state, chrome, demo, measure): it imports none of them, so they
all import it and none imports another to reach it (they used to, in a circle held by function-local
imports).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable

import streamlit as st

from llmviz.errors import LlmvizError
from llmviz.i18n.translator import Translator
from llmviz.ui.markdown import escape

_log = logging.getLogger("llmviz")


def explain(t: Translator, exc: BaseException) -> None:
    """Show an error the user can act on (a typed one, or the memory the process ran out of)."""
    if isinstance(exc, MemoryError) and not isinstance(exc, LlmvizError):
        st.error(t("error.oom", detail=escape(str(exc))))
        return
    kind = next((c.__name__ for c in type(exc).__mro__ if f"error.{c.__name__}" in t), "LlmvizError")
    code = getattr(exc, "code", None)
    if code and f"errdetail.{code}" in t:  # a common case, said in the session's language
        # a path or a name may hold markdown's characters: each text parameter shown as typed
        detail = t(f"errdetail.{code}", **{k: escape(v) if isinstance(v, str) else v for k, v in exc.params.items()})
    else:
        detail = escape(str(exc))  # as the engine wrote it (a path or a name may begin it, so its case is kept),
        # shown as typed: a name from a link or an uploaded file may hold markdown
        if t.lang != "en":
            detail += f" ({t('error.detail_note')})"
    st.error(t("error.detail", headline=t(f"error.{kind}"), detail=detail))


def report(t: Translator, exc: Exception) -> None:
    """Show any error as a message: a typed one explained in the session's language, anything else in one
    line (and logged with its traceback), or re-raised where LLMVIZ_RAISE_UNEXPECTED is set (the tests)."""
    if isinstance(exc, LlmvizError | MemoryError):
        explain(t, exc)
        return
    if os.environ.get("LLMVIZ_RAISE_UNEXPECTED"):
        raise exc
    _log.error("unexpected error on a page", exc_info=exc)
    first = escape(str(exc).splitlines()[0][:200]) if str(exc) else ""
    if "out of memory" in first.lower():  # torch's allocator errors are RuntimeErrors
        st.error(t("error.oom", detail=first))
    else:
        st.error(t("error.unexpected", kind=type(exc).__name__, detail=first))


def guarded(t: Translator, draw: Callable[[], None]) -> None:
    """Run a page (or a fragment of one) so that nothing it raises reaches the browser as a traceback: a typed
    error is explained, anything else becomes one message and a line in the server's log. Tests set
    LLMVIZ_RAISE_UNEXPECTED=1 to see such an error as the exception it is."""
    try:
        draw()
    except Exception as exc:
        report(t, exc)
