"""`python -m llmviz.training [--preset main|draft] [--minutes M] [--smoke] [--out DIR]`.

Trains the embedded default model (assets/llmviz-tiny) or its speculative-decoding draft
(assets/llmviz-tiny-draft). A thin entry point: torch is imported by the trainer, not here. An error is one line on
stderr and exit status 2, as the `llmviz` CLI's (llmviz/training/command.py).
"""

from __future__ import annotations


def main() -> int:
    from llmviz.training.command import run
    from llmviz.training.train import main as train_main

    return run(train_main)


if __name__ == "__main__":
    raise SystemExit(main())
