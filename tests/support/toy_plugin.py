"""The toy extensions as an out-of-tree plugin: a fresh process that names this module in LLMVIZ_EXTENSIONS (and
has tests/support on its path) registers both when the app or the CLI starts (llmviz/trace/extensions.load_plugins).
Never imported by a test of this process: its registrations are for good."""

from toy_extensions import register_both

register_both()
