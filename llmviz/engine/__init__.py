"""The engine: the only package that imports torch (see shared/design.md).

This __init__ imports nothing, so `llmviz.trace.records` and `llmviz.trace.hooks` load
without torch.
"""
