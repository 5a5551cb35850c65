"""Command line: `python -m llmviz <command> ...` (see README): the parser, assembled from one module per command,
and the dispatch. Every error is one line on stderr and exit status 2."""

from __future__ import annotations

import argparse
import os
import sys

from llmviz.cli import app, claims, compare, generate, lesson_class, record, serve, speculative
from llmviz.errors import LlmvizError
from llmviz.trace.extensions import load_plugins

# command -> its module (add_parser(sub), run(args) -> int), in the order `--help` lists them
COMMANDS = {"generate": generate, "trace": record, "compare": compare, "serve-sim": serve,
            "speculative": speculative, "claims": claims, "class": lesson_class, "app": app}
RAISE_ENV = "LLMVIZ_RAISE_UNEXPECTED"  # set: an unexpected exception is raised (traceback), as in the app


class Parser(argparse.ArgumentParser):
    """argparse whose usage errors are one line on stderr and exit 2, like every other error of the CLI
    (its subcommands' parsers are of this class too)."""

    def error(self, message: str):
        self.exit(2, f"error: {self.prog}: {one_line(message)} (see {self.prog} --help)\n")


def parser() -> argparse.ArgumentParser:
    top = Parser(prog="python -m llmviz", description="Run a language model step by step "
                 "on llmviz's own engine and report what happened.")
    sub = top.add_subparsers(dest="command")
    for module in COMMANDS.values():
        module.add_parser(sub)
    return top


def one_line(text: str) -> str:
    """A message as one line (a library's message may hold newlines)."""
    return " ".join(str(text).split())


def fail(message: str) -> int:
    print(f"error: {one_line(message)}", file=sys.stderr)
    return 2


def main(argv=None) -> int:
    """Run one command; every error is one line on stderr starting `error:` and exit status 2."""
    argv = sys.argv[1:] if argv is None else list(argv)
    problems = load_plugins()  # the extensions named in LLMVIZ_EXTENSIONS: choices of every flag from here on
    if problems:
        return fail("; ".join(problems))
    if argv[:1] == ["app"]:  # everything after it is streamlit's (llmviz/cli/app.py)
        try:
            return app.run(argv[1:])
        except (LlmvizError, OSError) as exc:
            return fail(str(exc))
    try:
        args = parser().parse_args(argv)
    except SystemExit as exc:  # --help (0), or a usage error whose one line Parser.error printed (2)
        return exc.code if isinstance(exc.code, int) else 2
    if args.command is None:
        parser().print_help()
        return 0
    try:
        return COMMANDS[args.command].run(args)
    except LlmvizError as exc:
        return fail(str(exc) or type(exc).__name__)
    except OSError as exc:  # e.g. --out under a file, a full disk
        return fail(str(exc))
    except MemoryError as exc:
        return fail(f"out of memory ({exc}); try a shorter --max-seq-len or --dtype bf16")
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a bug, not a bad input: still one line (LLMVIZ_RAISE_UNEXPECTED=1: the traceback)
        if os.environ.get(RAISE_ENV):
            raise
        return fail(f"internal error ({type(exc).__name__}: {exc}); please report it with the command that caused "
                    f"it (set {RAISE_ENV}=1 for the traceback)")
