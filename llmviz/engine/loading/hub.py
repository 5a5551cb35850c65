"""Hub ids -> local snapshot folders, without ever waiting on a network that is not there.

Order: the local cache first (`local_files_only=True`); then, only when HF_HUB_OFFLINE is unset and
the hub's host accepts a TCP connection within a few seconds, a download of the config, tokenizer
and safetensors files (never pickles, never code).
"""

from __future__ import annotations

import os
import re
import socket
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


def hub_reachable(timeout: float = CONNECT_TIMEOUT_S) -> bool:
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
    parsed = urlparse(endpoint)
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        with socket.create_connection((parsed.hostname or "huggingface.co", port), timeout=timeout):
            return True
    except OSError:
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
        why = "HF_HUB_OFFLINE is set" if offline() else "the hub cannot be reached"
        raise ModelNotCachedError(f"{repo_id} is not in the local Hugging Face cache and {why}: "
                                  "connect once to download it, or pass a local folder", code="model_not_cached",
                                  name=repo_id)
    try:
        return Path(snapshot_download(repo_id, allow_patterns=files, etag_timeout=CONNECT_TIMEOUT_S))
    except (RepositoryNotFoundError, RevisionNotFoundError, GatedRepoError) as exc:
        raise ModelNotFoundError(f"{repo_id} was not found on the hub (or needs a login): {exc}") from exc
    except OSError as exc:
        raise ModelNotCachedError(f"downloading {repo_id} failed: {exc}") from exc
