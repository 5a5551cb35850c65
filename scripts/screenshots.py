"""Full-page screenshots of every page in English and Chinese, for people to look at.

    python scripts/screenshots.py [--out /tmp/llmviz-shots] [--model llmviz-tiny] [--prompt "The list of"]
                                  [--step 3] [--width 1400]

Starts the app (offline) on a free port, opens each page that app.py declares in headless Chromium in a
fresh browser session (the Decode page at --step), waits until the script is idle and saves
<lang>-<nn>-<page>.png. On the Trace page it also downloads the run, loads it back (replay) and loads a
damaged file, and saves those views. Prints the files written and any exception box it saw.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from browser_kit import AppServer, chromium, declared_pages, exceptions, full_height, wait_idle

UPLOAD = '[data-testid="stFileUploaderDropzoneInput"]'


def shoot(page, out: Path, name: str, width: int, report: list) -> None:
    wait_idle(page)
    full_height(page, width)
    path = out / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    report.append({"file": str(path), "url": page.url, "exceptions": exceptions(page)})


def trace_round_trip(page, out: Path, lang: str, nn: int, width: int, report: list) -> None:
    """Download the run, load it back, then load a damaged file: the Trace page's three states."""
    page.set_viewport_size({"width": width, "height": 900})
    if page.locator('[data-testid="stDownloadButton"] button').count() == 0:
        report.append({"file": None, "note": f"{lang}: no run to download (did the model load?)"})
        return
    with page.expect_download() as info:
        page.locator('[data-testid="stDownloadButton"] button').click()
    saved = out / info.value.suggested_filename
    info.value.save_as(saved)
    wait_idle(page)
    page.set_input_files(UPLOAD, str(saved))
    page.wait_for_timeout(500)
    shoot(page, out, f"{lang}-{nn:02d}-trace-replayed", width, report)
    page.set_viewport_size({"width": width, "height": 900})
    page.set_input_files(UPLOAD, files=[{"name": "damaged.zip", "mimeType": "application/zip",
                                         "buffer": b"PK\x03\x04 this archive is damaged"}])
    page.wait_for_timeout(500)
    shoot(page, out, f"{lang}-{nn:02d}-trace-damaged", width, report)
    report[-1]["download"] = {"file": str(saved), "bytes": saved.stat().st_size}


def opens_inside_app(browser, server, query: dict) -> bool:
    """Open a deep link first on the fresh server (as a shared link would), then the root page.

    Returns whether the deep link ran inside app.py (its sidebar has the language switch): while a folder
    named `pages` sits next to app.py and no session has run app.py yet, Streamlit runs that folder's files on
    their own (multipage v1), without app.py. Opening the root once makes later screenshots show the app as
    designed either way.
    """
    page = browser.new_page()
    _, first_url = declared_pages()[-1]
    page.goto(server.url(first_url, **query))
    wait_idle(page)
    ok = "简体中文" in page.locator('[data-testid="stSidebar"]').inner_text()
    page.goto(server.url("", **query))
    wait_idle(page)
    page.close()
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="/tmp/llmviz-shots")
    parser.add_argument("--model", default=None, help="default: the app's (the embedded llmviz-tiny)")
    parser.add_argument("--prompt", default=None)
    parser.add_argument("--step", type=int, default=3, help="the Decode page's step")
    parser.add_argument("--width", type=int, default=1400)
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    base = {k: v for k, v in (("model", args.model), ("prompt", args.prompt)) if v}
    report: list = []
    with AppServer(timeout=120) as server, chromium() as browser:
        deep_link_ok = opens_inside_app(browser, server, base)
        for lang in ("en", "zh"):
            for nn, (file, url_path) in enumerate(declared_pages(), start=1):
                query = dict(base, lang=lang) if lang != "en" else dict(base)
                if file.endswith("decode.py"):
                    query["step"] = str(args.step)
                context = browser.new_context(viewport={"width": args.width, "height": 900}, accept_downloads=True)
                page = context.new_page()
                page.goto(server.url(url_path, **query))
                shoot(page, out, f"{lang}-{nn:02d}-{Path(file).stem}", args.width, report)
                if file.endswith("trace.py"):
                    trace_round_trip(page, out, lang, nn, args.width, report)
                context.close()
    print(json.dumps({"deep_link_runs_app_py": deep_link_ok, "shots": report}, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
