"""Hub ids -> local snapshot folders, without ever waiting on a network that is not there.

Order: the local cache first (`local_files_only=True`); then, only when HF_HUB_OFFLINE is unset and
the hub (HF_ENDPOINT, or huggingface.co) answers HTTP within a few seconds, a download of the config, tokenizer
and safetensors files (never pickles, never code), each of the download's requests bound to receive its first bytes
within FIRST_BYTES_S seconds (hub_client.py: a hub that answers the probe and then drips), the transfer
after them unbounded (a large download, slow but progressing, goes on).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import urlparse

from llmviz.errors import ModelNotCachedError, ModelNotFoundError

HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,95}(/[A-Za-z0-9][A-Za-z0-9_.\-]{0,95})?$")
FILES = ["config.json", "generation_config.json", "tokenizer*", "special_tokens_map.json", "vocab.json",
         "merges.txt", "*.safetensors", "model.safetensors.index.json"]
CONFIG_ONLY = ["config.json"]  # what reading a model's shape needs (the memory calculator): no weights
CONNECT_TIMEOUT_S = 3.0


def offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def endpoint() -> str:
    """The hub this process reads: HF_ENDPOINT (a mirror, e.g. https://hf-mirror.com) when set, as huggingface_hub
    does."""
    return os.environ.get("HF_ENDPOINT", "").strip() or "https://huggingface.co"


def hub_reachable(timeout: float = CONNECT_TIMEOUT_S) -> bool:
    """Whether the hub answers HTTP within `timeout` seconds per step (connect, then the first bytes). A TCP
    connect alone is not enough: a network that accepts the connection and then never answers (seen behind a
    firewall, and with a silent server on 127.0.0.1) kept a download waiting for minutes. Any HTTP answer counts,
    an error status too: the hub is there."""
    import urllib.error
    import urllib.request

    url = endpoint().rstrip("/") + "/api/models?limit=1"
    if urlparse(url).scheme not in ("http", "https"):
        return False
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=timeout):
            return True
    except urllib.error.HTTPError:
        return True
    except (OSError, ValueError):  # refused, timed out, no route, a malformed endpoint
        return False


def snapshot(repo_id: str, files: list[str] = FILES) -> Path:
    """The folder of a cached or freshly downloaded hub model (only `files` fetched); typed errors otherwise."""
    if not HUB_ID.match(repo_id) or ".." in repo_id:
        raise ModelNotFoundError(f"{repo_id!r} is neither an existing folder nor a valid hub id (owner/name)",
                                 code="model_bad_name", name=repo_id)
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import (
        GatedRepoError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    try:
        return Path(snapshot_download(repo_id, allow_patterns=files, local_files_only=True))
    except LocalEntryNotFoundError:
        pass
    if offline() or not hub_reachable():
        if offline():
            raise ModelNotCachedError(f"{repo_id} is not in the local Hugging Face cache and HF_HUB_OFFLINE is set: "
                                      "connect once to download it, or pass a local folder", code="model_not_cached",
                                      name=repo_id)
        raise unreachable(repo_id, CONNECT_TIMEOUT_S, "did not answer")
    import httpx2

    from llmviz.engine.loading import hub_client

    hub_client.install()
    try:
        return Path(snapshot_download(repo_id, allow_patterns=files, etag_timeout=CONNECT_TIMEOUT_S))
    except (RepositoryNotFoundError, RevisionNotFoundError, GatedRepoError) as exc:
        raise ModelNotFoundError(f"{repo_id} was not found on the hub (or needs a login): {exc}") from exc
    except (OSError, httpx2.HTTPError) as exc:
        if timed_out(exc):  # a request's first bytes did not come in time (huggingface_hub wraps the timeout)
            raise unreachable(repo_id, hub_client.FIRST_BYTES_S, "answered the probe but did not send a request's "
                              f"first {hub_client.FIRST_BYTES // 1024} KiB") from exc
        raise ModelNotCachedError(f"downloading {repo_id} failed: {exc}") from exc


def timed_out(exc: BaseException) -> bool:
    """Whether a timeout is the error or what caused it (huggingface_hub raises its own errors from httpx's)."""
    import httpx2

    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, httpx2.TimeoutException | TimeoutError):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def unreachable(repo_id: str, seconds: float, what: str) -> ModelNotCachedError:
    """The hub gave nothing to download from within `seconds`: the typed error that names both other ways in."""
    return ModelNotCachedError(
        f"{repo_id} is not in the local Hugging Face cache and {endpoint()} {what} within {seconds:g} s. Two other "
        f"ways: set HF_ENDPOINT to a mirror of the hub you can reach (e.g. HF_ENDPOINT=https://hf-mirror.com), or "
        f"download the model with ModelScope's command-line tool (modelscope download --model {repo_id} --local_dir "
        f"./{repo_id.split('/')[-1]}) and open that folder", code="model_hub_unreachable", name=repo_id,
        endpoint=endpoint(), seconds=f"{seconds:g}", folder=repo_id.split("/")[-1])
