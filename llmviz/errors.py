"""Typed errors shared by every layer (no torch here, so the UI can catch them without importing it).

Each error carries a one-line message meant for a person: what went wrong and what to do about it.
"""

from __future__ import annotations


class LlmvizError(Exception):
    """Base class: every error the library raises on purpose.

    `code` and `params` name the common cases, so a UI can say them in its own language; the message
    stays the English one-liner for the CLI and logs.
    """

    def __init__(self, message: str, *, code: str | None = None, **params):
        super().__init__(message)
        self.code, self.params = code, params


class ConfigError(LlmvizError, ValueError):
    """An impossible or unknown setting (dtype, device, heads that do not divide, ...)."""


class UnknownNameError(ConfigError):
    """A name no table declares (a KV layout, an attention backend, ...), or a KV layout registered without the
    slot rule that prices it."""


class ModelNotFoundError(LlmvizError, FileNotFoundError):
    """A local path that does not exist, or a string that is not a valid hub id."""


class ModelNotCachedError(LlmvizError):
    """A valid hub id that is not in the local cache while the machine is offline."""


class UnsupportedArchitectureError(LlmvizError):
    """A model whose architecture the engine does not implement."""


class ModelConfigError(LlmvizError, ValueError):
    """A model folder's config.json that does not describe a model: a missing field, a malformed rope_scaling."""


class WeightLoadError(LlmvizError):
    """A checkpoint whose tensors are missing, unexpected, of the wrong shape, or not safetensors."""


class DeviceUnavailableError(ConfigError):
    """A device that this machine does not have (e.g. cuda without a GPU)."""


class PromptError(LlmvizError, ValueError):
    """An empty prompt, or one longer than the context."""


class KVCacheTooLargeError(LlmvizError, MemoryError):
    """The KV cache would not fit in the free memory of the device."""


class KVCacheFullError(LlmvizError, MemoryError):
    """A sequence needs more KV slots than its cache has left (its max_seq_len, or the paged block pool)."""


class KVOverflowError(LlmvizError, ArithmeticError):
    """A value written to a half-precision KV cache does not fit its range (fp16: |x| > 65504)."""


class LogitsNotFiniteError(LlmvizError, ArithmeticError):
    """The model's next-token logits hold NaN or inf (fp16 overflow, or NaN in the weights or the config)."""


class CaptureTooLargeError(LlmvizError, MemoryError):
    """Recording every tensor of a run (capture full) would not fit in memory."""


class OutOfMemoryError(LlmvizError, MemoryError):
    """The device ran out of memory while loading or running (the torch error, with the figures and a fix)."""


class TraceFormatError(LlmvizError, ValueError):
    """A trace file that is damaged, or written by an incompatible schema version."""


class SessionFinishedError(LlmvizError):
    """A step was asked of a session that has reached EOS or its max_seq_len."""


class NotAllowedError(ConfigError):
    """Public mode: a model (or a path) outside the server's allow-list, or an upload over its size limit."""


class ServerBusyError(LlmvizError):
    """Public mode: the server's heavy measurements are all taken, or this session already runs one."""


class TimeLimitError(LlmvizError):
    """Public mode: a heavy measurement ran past the server's wall-clock limit (LLMVIZ_HEAVY_LIMIT_S) and stopped."""


class UnsafeStoreError(ConfigError):
    """A class store's folder or file that another local user could read, replace or redirect: a folder
    owned by someone else or open to others, a symbolic link, a file that is not this user's. The message names the
    place, its owner or mode, and what to do (`chmod 700 ...`, or a folder of one's own through LLMVIZ_CLASS_STORE)."""
