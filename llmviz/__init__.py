"""llmviz: watch a large language model run, prefill then decode, on a real engine."""

__version__ = "0.1.0"
