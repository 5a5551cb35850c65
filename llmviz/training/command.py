"""The training commands' errors as the `llmviz` CLI gives them (llmviz/cli/main.py): one line
on stderr starting `error:` and exit status 2, never a traceback, for a usage error and for every typed error (a
missing or empty folder, a binary or malformed `.po` file, a FIFO, a corpus left empty). `python -m
llmviz.training` and `python -m llmviz.training.corpus_zh` run through `run`. No torch here: the trainer imports
it, not this module.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

from llmviz.errors import LlmvizError

RAISE_ENV = "LLMVIZ_RAISE_UNEXPECTED"  # set: an unexpected exception is raised (its traceback), as in the CLI


def one_line(text: str) -> str:
    return " ".join(str(text).split())


def fail(message: str) -> int:
    print(f"error: {one_line(message)}", file=sys.stderr)
    return 2


class Parser(argparse.ArgumentParser):
    """argparse whose usage errors are one line on stderr and exit status 2 (argparse's own: the usage, then the
    error, on two lines)."""

    def error(self, message: str):
        self.exit(2, f"error: {self.prog}: {one_line(message)} (see {self.prog} --help)\n")


def run(main: Callable, argv: list[str] | None = None) -> int:
    """main(argv), and the exit status: 0, or 2 with one line on stderr for a typed error, an OSError (a full disk,
    a folder that cannot be read) or a bug (LLMVIZ_RAISE_UNEXPECTED=1: its traceback)."""
    try:
        main(argv)
    except SystemExit as exc:  # --help (0), or a usage error whose one line Parser.error printed (2)
        return exc.code if isinstance(exc.code, int) else 2
    except LlmvizError as exc:
        return fail(str(exc) or type(exc).__name__)
    except OSError as exc:
        return fail(str(exc))
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        if os.environ.get(RAISE_ENV):
            raise
        return fail(f"internal error ({type(exc).__name__}: {exc}); set {RAISE_ENV}=1 for the traceback")
    return 0
