"""The engine: the only package that imports torch (see shared/design.md).

This __init__ imports nothing, so `llmviz.engine.trace` and `llmviz.engine.hook_points` load
without torch.
"""
