"""The command line: `llmviz <command>` (`python -m llmviz`). One module per command; main.py parses and dispatches.

Every command reaches the engine through `llmviz.service`, as the pages do.
"""

from llmviz.cli.main import main

__all__ = ["main"]
