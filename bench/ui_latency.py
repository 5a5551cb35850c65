"""UI latency in a real browser (Performance): prints one JSON object. Not part of pytest.

    python bench/ui_latency.py [--clicks 10] [--model llmviz-tiny] [--prompt "The list of"] [--present]

1. Cold start: headless Chromium is launched first (not timed); then the clock starts, `streamlit run app.py`
   starts, and the root URL is opened as soon as /_stcore/health answers. Stops when the Home page shows the
   model card (the "Parameters" metric) with the script idle. Target: 15 s.
2. Next: on the Decode page of the same (now warm) server, --clicks presses of "Next ▶". Each is timed in the
   browser, from the click event (a capture listener) to the first animation frame where the KV cache length
   metric shows the new value and the app's script state is "notRunning". Target: 0.5 s, median and max.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "scripts")]

from browser_kit import (  # noqa: E402
    CLICK_CLOCK,
    IDLE,
    METRIC_JS,
    SHOWN,
    AppServer,
    chromium,
    declared_pages,
    exceptions,
    metric,
    stepper_button,
    wait_idle,
)

from llmviz.i18n.translator import translate  # noqa: E402

TARGET_CLICK_S, TARGET_COLD_S = 0.5, 15.0

def url_of(stem: str) -> str:
    return next(url for file, url in declared_pages() if Path(file).stem == stem)


def cold_start(browser, query: dict) -> dict:
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    server = AppServer(timeout=120, wait=False).start()
    try:
        health_s = server.wait_healthy()
        page.goto(server.url(url_of("home"), **query))
        label = translate("en", "card.parameters")
        page.wait_for_function(
            "([label]) => { const metricOf = " + METRIC_JS + ";\n"
            f"  return metricOf(label) !== null && document.querySelector('{IDLE}') !== null; }}",
            arg=[label], polling="raf", timeout=120_000)
        first_render_s = time.perf_counter() - server.started
        return {"server": server, "health_s": round(health_s, 2), "first_render_s": round(first_render_s, 2),
                "parameters_shown": metric(page, label), "exceptions": exceptions(page)}
    except BaseException:
        server.stop()
        raise
    finally:
        page.close()


def click_latency(browser, server, query: dict, clicks: int, viewport: dict) -> dict:
    page = browser.new_page(viewport=viewport)
    page.goto(server.url(url_of("decode"), **query))
    wait_idle(page)
    kv_label = translate("en", "decode.kv_len")
    button = stepper_button(page, "next")
    kv = [metric(page, kv_label)]
    seconds = []
    for _ in range(clicks):
        page.evaluate(CLICK_CLOCK)
        button.click()
        page.wait_for_function(SHOWN, arg=[kv_label, kv[-1]], polling="raf", timeout=60_000)
        seconds.append(page.evaluate("() => (window.__llmvizShown - window.__llmvizClick) / 1000"))
        kv.append(metric(page, kv_label))
        wait_idle(page, settle_s=0.2)  # no click lands while a rerun is still finishing
    boxes = exceptions(page)
    page.close()
    return {"seconds": [round(s, 3) for s in seconds], "kv": kv, "exceptions": boxes}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clicks", type=int, default=10)
    parser.add_argument("--model", default=None, help="default: the app's own default (the embedded llmviz-tiny)")
    parser.add_argument("--prompt", default=None)
    parser.add_argument("--present", action="store_true",
                        help="the presenter view (?present=1) at 1280x720, as on a projector")
    args = parser.parse_args()
    query = {k: v for k, v in (("model", args.model), ("prompt", args.prompt)) if v}
    if args.present:
        query["present"] = "1"
    viewport = {"width": 1280, "height": 720} if args.present else {"width": 1400, "height": 900}
    with chromium() as browser:
        cold = cold_start(browser, query)
        server = cold.pop("server")
        try:
            clicks = click_latency(browser, server, query, args.clicks, viewport)
        finally:
            server.stop()
    s = clicks["seconds"]
    kv = [int(v) for v in clicks["kv"]]
    print(json.dumps({
        "model": args.model or "llmviz-tiny (embedded default)", "query": query,
        "view": "presenter" if args.present else "default", "viewport": viewport,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "cold_start": {**{k: v for k, v in cold.items() if k != "exceptions"}, "target_s": TARGET_COLD_S,
                       "meets_target": cold["first_render_s"] <= TARGET_COLD_S},
        "next_click_to_idle_s": {"clicks": len(s), "median": round(statistics.median(s), 3), "max": max(s),
                                 "min": min(s), "all": s, "target_s": TARGET_CLICK_S,
                                 "median_meets_target": statistics.median(s) <= TARGET_CLICK_S,
                                 "max_meets_target": max(s) <= TARGET_CLICK_S},
        "kv_cache_length": {"first": kv[0], "last": kv[-1],
                            "grew_by_one_per_click": kv == list(range(kv[0], kv[0] + len(kv)))},
        "exception_boxes": clicks["exceptions"] + cold["exceptions"],
    }, indent=1))


if __name__ == "__main__":
    main()
