"""`python -m llmviz.training [--preset main|draft] [--minutes M] [--smoke] [--out DIR]`.

Trains the embedded default model (assets/llmviz-tiny) or its speculative-decoding draft
(assets/llmviz-tiny-draft). A thin entry point: torch is imported by the trainer, not here.
"""

from __future__ import annotations


def main() -> None:
    from llmviz.training.train import main as train_main

    train_main()


if __name__ == "__main__":
    main()
