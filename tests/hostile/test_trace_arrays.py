"""Issue 35, finding 3: a trace archive's arrays are bounded by what they inflate to, checked before any is read.

The finding: a 5.6 MB upload whose arrays.npz held a 2.1 GB array of deflated zeros passed the declared-size check
(2 GiB) and was read whole before the public bound applied: the server went from 1,061 to 3,088 MB and spent 9.8 s
of CPU, then said "damaged". Here the same kind of file (cases.zero_array: every CRC and header true) is refused
with a typed error, the process's RSS (psutil, sampled while it refuses) growing by no more than a few tens of MB;
the recorded demo still loads under the public bound, its arrays what numpy's own reader finds.
"""

from __future__ import annotations

import io
import threading
import time
from pathlib import Path

import numpy as np
import psutil
import pytest
from cases import CHUNK, _members, zero_array
from hostile_helpers import check_typed, outcome

from llmviz.trace.budget import REPLAY_HELD_BUDGETS
from llmviz.trace.records import trace_from_zip
from llmviz.ui.public import Policy
from llmviz.ui.trace_file import replay_bound

ROOT = Path(__file__).resolve().parents[2]
DEMOS = sorted((ROOT / "assets" / "demo").glob("*.zip"))
DEMO = ROOT / "assets" / "demo" / "default-run.zip"
PUBLIC = Policy.from_env({"LLMVIZ_PUBLIC": "1"})
GROWTH = 40 * 2**20  # what refusing may add to the process's RSS: the upload's own bytes and a few headers


class PeakRss:
    """The process's largest RSS (psutil) while the block runs, sampled every millisecond in a thread."""

    def __init__(self):
        self.process, self.peak, self._stop = psutil.Process(), 0, threading.Event()

    def _sample(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, self.process.memory_info().rss)
            time.sleep(0.001)

    def __enter__(self):
        self.before = self.process.memory_info().rss
        self.cpu = time.process_time()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.cpu = time.process_time() - self.cpu
        self.growth = max(self.peak, self.process.memory_info().rss) - self.before


def _npz_of(data: bytes) -> io.BytesIO:
    return io.BytesIO(_members(data)["arrays.npz"])


def declared(data: bytes) -> int:
    """Bytes of every array in the archive's arrays.npz as numpy's own reader finds them (an independent count)."""
    with np.load(_npz_of(data), allow_pickle=False) as npz:
        return sum(npz[k].nbytes for k in npz.files)


def with_zeros(valid: bytes, size: int) -> str:
    """What zero_array(valid, size) declares, in the message's MB: the demo's arrays (numpy's count) with its s0.logits
    replaced by size bytes less the 128-byte header."""
    with np.load(_npz_of(valid), allow_pickle=False) as npz:
        logits = npz["s0.logits"].nbytes
    return f"{(declared(valid) - logits + size - 128) / 1e6:,.1f} MB"


def test_a_small_zip_of_zeros_is_refused_before_it_is_inflated():
    valid = DEMO.read_bytes()
    data = zero_array(valid, 256 * CHUNK)  # 256 MiB of zeros: the same file as the finding's, 8 times smaller
    assert len(data) < len(valid) + 2**20
    bound = replay_bound(PUBLIC)
    assert bound == REPLAY_HELD_BUDGETS * PUBLIC.trace_budget_bytes < 256 * CHUNK
    with PeakRss() as rss:
        exc = outcome(lambda: trace_from_zip(data, bound), "error", seconds=10)
    message = check_typed(exc, "NotAllowedError")
    assert exc.code == "trace_arrays_too_large" and exc.params["size"] == with_zeros(valid, 256 * CHUNK), message
    assert exc.params["limit"] == f"{bound / 1e6:,.1f} MB"
    assert rss.growth < GROWTH and rss.cpu < 1.0, (rss.growth, rss.cpu)


def test_the_bound_is_what_the_arrays_declare():
    """The demo's arrays (counted by numpy) load at a bound of exactly their bytes and are refused one byte below."""
    data = DEMO.read_bytes()
    total = declared(data)
    assert len(trace_from_zip(data, total).steps) == 25
    check_typed(outcome(lambda: trace_from_zip(data, total - 1), "error"), "NotAllowedError")


@pytest.mark.parametrize("path", DEMOS, ids=lambda p: p.name)
def test_the_recorded_demo_loads_under_the_public_bound(path):
    """Every array read lazily is the one numpy's own reader (np.load) finds in the same member."""
    data = path.read_bytes()
    trace = trace_from_zip(data, replay_bound(PUBLIC))
    with np.load(_npz_of(data), allow_pickle=False) as npz:
        for step in trace.steps:
            for key in ("input_ids", "positions", "sampled", "logits", "topk_ids", "topk_logits", "logsumexp"):
                expected = npz[f"s{step.index}.{key}"]
                assert getattr(step, key).dtype == expected.dtype and (getattr(step, key) == expected).all()
            for record in step.hooks:
                if record.array is not None:
                    assert np.array_equal(record.array, npz[f"s{step.index}.hook.{record.name}"])


def test_a_document_naming_one_array_for_every_step_reads_it_once():
    """200 steps that are all step 0, whose logits are 8 MiB of zeros (the card's vocabulary made their width, so the
    header is the shape the document gives them): a loader reading each step's arrays as named would hold 1.6 GB;
    this one refuses the second read."""
    import json

    from cases import _with_json

    bulky = zero_array(DEMO.read_bytes(), 8 * CHUNK)
    width = (8 * CHUNK - 128) // 4  # zero_array's [1, width] float32 logits

    def edit(d):
        card = {**d["model_card"], "config": {**d["model_card"]["config"], "vocab_size": width}}
        hooks = [{**m, "shape": [1, width], "has_array": False} if m["name"] == "logits" else m
                 for m in d["steps"][0]["hooks"]]  # the logits hook as wide as the card now says
        return json.dumps({**d, "model_card": card, "steps": [{**d["steps"][0], "hooks": hooks}] * 200}).encode()

    data = _with_json(bulky, edit)
    with PeakRss() as rss:
        exc = outcome(lambda: trace_from_zip(data, replay_bound(PUBLIC)), "error", seconds=10)
    assert "named twice" in check_typed(exc, "TraceFormatError")
    assert rss.growth < GROWTH, rss.growth


def test_the_page_says_so_in_both_languages():
    """A public server's Trace page: the message under its headline, in English and in Chinese; nothing replayed."""
    from ui_helpers import open_app

    from llmviz.i18n.translator import translate
    from llmviz.ui.markdown import escape

    valid = DEMO.read_bytes()
    data = zero_array(valid, 256 * CHUNK)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LLMVIZ_PUBLIC", "1")
        for lang in ("en", "zh"):
            at = open_app("app_pages/trace.py", lang=lang)
            at.file_uploader(key="trace_upload").set_value(("zeros.zip", data, "application/zip")).run()
            assert not at.exception, [e.value for e in at.exception]
            errors = [e.value for e in at.error]
            detail = translate(lang, "errdetail.trace_arrays_too_large", size=escape(with_zeros(valid, 256 * CHUNK)),
                               limit=escape(f"{replay_bound(PUBLIC) / 1e6:,.1f} MB"))  # as the page shows a text
            assert any(translate(lang, "error.NotAllowedError") in e and detail in e for e in errors), errors
            assert "llmviz_run" not in at.session_state or at.session_state["llmviz_run"].key is not None


@pytest.mark.slow
def test_the_findings_file_twice_at_once():
    """The finding's own size (2.1 GB of zeros; ~2 MB on disk), uploaded by two sessions at once: both refused, the
    process's RSS growing by no more than a few tens of MB (it grew by 3.6 GB before)."""
    valid = DEMO.read_bytes()
    data = zero_array(valid, 2003 * CHUNK)  # 2.100 GB, under the 2 GiB the archive check lets through
    assert 2.1e9 <= 2003 * CHUNK < 2 * 2**30 and len(data) < len(valid) + 4 * 2**20
    results = []

    def upload():
        try:
            trace_from_zip(data, replay_bound(PUBLIC))
        except Exception as exc:  # the test checks what it is
            results.append(exc)

    with PeakRss() as rss:
        threads = [threading.Thread(target=upload) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
    assert len(results) == 2 and all(check_typed(r, "NotAllowedError") for r in results)
    assert rss.growth < 2 * GROWTH and rss.cpu < 2.0, (rss.growth, rss.cpu)
