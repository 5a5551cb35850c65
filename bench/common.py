"""What the benchmarks share: the machine's name and the random GPT-2-124M-shaped model they build."""

from __future__ import annotations

import platform
import shutil
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
ASSETS = ROOT / "assets"


def gpt2_124m_folder(tmp: Path, context: int = 1024) -> Path:
    """Random weights in GPT-2-124M's shape, with the embedded model's tokenizer (its ids < 4096 < 50257)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    folder = tmp / f"gpt2-124m-random-{context}"
    torch.manual_seed(0)
    GPT2LMHeadModel(GPT2Config(n_positions=context)).save_pretrained(str(folder))
    for f in (ASSETS / "llmviz-tiny").glob("tokenizer*"):
        shutil.copy(f, folder / f.name)
    return folder


def percentile(values: list[float], q: float) -> float | None:
    """The q-th percentile (numpy's linear interpolation), None for no values: every benchmark's p50/p95."""
    import numpy as np

    return float(np.percentile(values, q)) if values else None


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine(device: str) -> dict:
    out = {"cpu": cpu_name(), "torch": torch.__version__, "threads": torch.get_num_threads(), "device": device}
    if device.startswith("cuda") and torch.cuda.is_available():
        out["gpu"] = torch.cuda.get_device_name(0)
    return out


def student_address(i: int, host: str) -> str | None:
    """The address emulated student i connects from: its own of 127.0.0.0/8 when the server is on this machine (a
    class on a LAN: each phone its own address, as every limit counts them), else the machine's own (None)."""
    return f"127.0.{10 + i // 200}.{10 + i % 200}" if host.startswith("127.") or host == "localhost" else None


def family_total(pids: list[int], read) -> float:
    """`read(process)` summed over each of `pids` and its children (a server and what it started), skipping any that
    ended meanwhile: e.g. CPU seconds (user + system) or resident bytes."""
    import contextlib

    import psutil

    total = 0.0
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            proc = psutil.Process(pid)
            for p in (proc, *proc.children(recursive=True)):
                with contextlib.suppress(psutil.Error):
                    total += read(p)
    return total


def cpu_seconds(process) -> float:
    t = process.cpu_times()
    return t.user + t.system
