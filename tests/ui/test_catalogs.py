"""The message catalogs: the same keys in both languages, nothing empty, the same placeholders; and a page
rendered in Chinese shows no English catalog string (every page that app.py declares)."""

from __future__ import annotations

import functools
import json
import re
import string

import pytest
from catalog_scan import english_fragments, latin_words, leaks
from streamlit.testing.v1 import AppTest
from ui_helpers import APP, LANGUAGE_SWITCH, PROMPT, declared_pages, page_file, rendered_text

from llmviz.analysis.article import other_spellings
from llmviz.i18n.translator import LANGUAGES, LOCALES, catalog
from llmviz.ui.state import RUN_KEY

FILES = sorted({p.name for lang in LANGUAGES for p in (LOCALES / lang).glob("*.json")})
CJK = re.compile(r"[\u4e00-\u9fff]")


def read(lang: str, name: str) -> dict[str, str]:
    path = LOCALES / lang / name
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def placeholders(text: str) -> list[tuple[str, str]]:
    """The {name:spec} fields of a message, sorted (so order may differ between languages, as grammar does)."""
    return sorted((name, spec or "") for _, name, spec, _ in string.Formatter().parse(text) if name is not None)


@pytest.mark.parametrize("name", FILES)
def test_every_file_has_the_same_keys_in_both_languages(name):
    en, zh = read("en", name), read("zh", name)
    assert en, f"en/{name} is missing or empty"
    assert sorted(set(en) - set(zh)) == [], f"keys of en/{name} missing from zh/{name}"
    assert sorted(set(zh) - set(en)) == [], f"keys of zh/{name} missing from en/{name}"


def test_the_merged_catalogs_agree():
    assert set(catalog("en")) == set(catalog("zh"))
    assert len(catalog("en")) == sum(len(read("en", name)) for name in FILES)  # no key defined twice


@pytest.mark.parametrize("lang", list(LANGUAGES))
def test_no_empty_message(lang):
    empty = [key for key, value in catalog(lang).items() if not isinstance(value, str) or not value.strip()]
    assert empty == []


def test_placeholders_are_the_same_in_both_languages():
    en, zh = catalog("en"), catalog("zh")
    wrong = {key: (placeholders(en[key]), placeholders(zh[key])) for key in en
             if placeholders(en[key]) != placeholders(zh.get(key, ""))}
    assert wrong == {}


def test_chinese_messages_are_chinese():
    """Every Chinese message that differs from the English one holds Chinese characters (not a copy)."""
    en, zh = catalog("en"), catalog("zh")
    def literal(text: str) -> str:
        return "".join(piece for piece, *_ in string.Formatter().parse(text))

    untranslated = [key for key in en if zh[key] != en[key] and not CJK.search(zh[key])
                    and re.search(r"[A-Za-z]{4,}", literal(zh[key]))]
    assert untranslated == []


def test_one_spelling_per_term_in_chinese():
    """The article's words (analysis/article.ONE_SPELLING): 持续批处理, 推测解码, token; never 连续批处理, 投机解码,
    词元 (save in the gloss "token（词元）"), in any Chinese message."""
    found = {(name, key): spellings for name in FILES for key, text in read("zh", name).items()
             if (spellings := other_spellings(text))}
    assert found == {}


def test_the_glossary_uses_the_words_every_catalogue_uses():
    """The lesson's glossary: each term has its app word and its line in both languages; the article's
    word for a term with one spelling is that spelling, and the Chinese app word is it too (持续批处理, 推测解码)."""
    from llmviz.analysis.article import GLOSSARY, ONE_SPELLING

    en, zh = catalog("en"), catalog("zh")
    assert all(f"term.{g.id}" in en and f"glossary.{g.id}" in en and f"glossary.{g.id}" in zh for g in GLOSSARY)
    spelled = {g.article: zh[f"term.{g.id}"] for g in GLOSSARY if g.article in ONE_SPELLING}
    assert spelled == {"token": "token", "持续批处理": "持续批处理", "推测解码": "推测解码", "论断": "论断"}
    assert [g.article for g in GLOSSARY if other_spellings(g.article + zh[f"glossary.{g.id}"])] == []


def test_the_lesson_shows_the_glossary():
    from llmviz.analysis.article import GLOSSARY

    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params.update({"lang": "zh"})
    at.run()
    at.switch_page(page_file("lesson")).run()
    [table] = [x.value for x in at.table]
    assert len(table) == len(GLOSSARY) and any("持续批处理" in str(v) for v in table.iloc[:, 0])


def test_the_spelling_check_catches_the_other_words():
    assert other_spellings("连续批处理比静态批处理快；投机解码") == [("连续批处理", "持续批处理"),
                                                                  ("投机解码", "推测解码")]
    assert other_spellings("先被切分成**token（词元）**，每个词元一行") == [("词元", "token")]
    assert other_spellings("持续批处理与推测解码，每个 token 一行") == []


def test_the_leak_check_catches_english():
    fragments = english_fragments()
    en, zh = catalog("en"), catalog("zh")
    assert leaks([en["trace.png_help"]], fragments)
    assert leaks([zh[key] for key in zh], fragments) == {}


@pytest.fixture(scope="module")
def chinese_pages(app_model):
    """{page: rendered texts} of every declared page, rendered in Chinese on one live run."""
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update(model=app_model, prompt=PROMPT, lang="zh", step="2")
    at.run()
    assert not at.exception, at.exception
    pages = {}
    for page in declared_pages():
        at.switch_page(page).run()
        assert not at.exception, (page, at.exception)
        pages[page] = (rendered_text(at), [e.value for e in at.title], [r.label for r in at.radio])
    run = at.session_state[RUN_KEY]
    pages["generated"] = b"".join(bytes.fromhex(run.trace.tokens[i]["bytes"]) for i in run.trace.row_output_ids(0)
                                  ).decode("utf-8", errors="replace")
    return pages


def test_every_page_is_declared():
    pages = declared_pages()
    assert page_file("home") == pages[0] and page_file("trace") in pages and len(pages) == len(set(pages))


@pytest.mark.parametrize("page", declared_pages())
def test_every_page_runs_inside_app_py(chinese_pages, page):
    """A page reached by switch_page (or a shared link) still gets app.py's sidebar and language switch."""
    assert LANGUAGE_SWITCH in chinese_pages[page][2], f"{page} ran without app.py (no language switch)"


@pytest.mark.parametrize("page", declared_pages())
def test_a_page_in_chinese_shows_no_english_catalog_string(chinese_pages, page):
    texts, titles, _ = chinese_pages[page]
    zh_values = set(catalog("zh").values())
    assert titles and all(title in zh_values and CJK.search(title) for title in titles), titles
    assert sum(bool(CJK.search(text)) for text in texts) >= 3, texts
    found = leaks(texts, english_fragments())
    assert found == {}, f"English catalog text on {page} in Chinese: {found}"


def test_the_same_pages_in_english_do_show_catalog_strings(app_model):
    """The collection sees what a person reads: in English the check finds the catalog's own text."""
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update(model=app_model, prompt=PROMPT)
    at.run()
    at.switch_page(page_file("trace")).run()
    found = set(leaks(rendered_text(at), english_fragments()).values())
    assert {"trace.title", "trace.png_help", "trace.steps", "trace.upload_label", "trace.engine_line",
            "trace.config_json", "trace.download_button", "trace.steps_help"} <= found


# Latin words a Chinese page may show: code, switch values, model, unit and method names. Anything
# else in a run of three or more Latin words is English prose that bypassed the catalogues.
LATIN_RUN = re.compile(r"[A-Za-z][A-Za-z0-9_.+/-]*(?:[ \t,;:()'-]+[A-Za-z][A-Za-z0-9_.+/-]*){2,}")
ALLOWED_WORDS = {
    "q", "k", "v", "kv", "qkv", "gqa", "mha", "mlp", "rope", "rms", "rmsnorm", "swiglu", "silu", "gelu", "bos", "eos",
    "pad", "eager", "sdpa", "flash", "attention", "fp32", "fp16", "bf16", "fp8", "int8", "int4", "auto", "cpu", "cuda",
    "mps", "gpu", "a100", "h100", "prefill", "decode", "paged", "contiguous", "dynamic", "ring", "llmviz-tiny",
    "llama", "gpt-2", "gpt2", "qwen2", "mistral", "bert", "ms", "µs", "tok/s", "mib", "gib", "kb", "mb", "gb", "tokens",
    "token", "softmax", "id", "ids", "top-k", "top-p", "off", "on", "meta", "full", "json", "csv", "html", "png", "npz",
    "zip", "url", "utf-8", "cls", "sep", "transformers", "torch", "pytorch", "streamlit", "plotly", "vllm",
    "pagedattention", "llm.int8", "gptq", "keras", "x86", "prefetch", "mm_prefetch", "flash_attn", "import", "from",
    "config", "model", "num_key_value_heads", "kv_cache_dtype", "float16", "pad_sequences", "maxlen", "head_dim",
    "hidden_size", "max_seq_len", "left", "right", "fused-qkv", "kv-dtype", "kv-layout", "attn", "the", "list", "of",
    "return", "this", "module", "provides", "static", "continuous", "mixed", "poisson", "shared-prompt", "random",
    "gpt2-124m-random", "tinyllama", "qwen", "x", "b", "n", "d", "a", "c", "ln", "norm", "layers", "heads",
    "llmviz-tiny-draft", "llmviz-tiny-gqa4", "llmviz-tiny-gqa2", "min", "max", "p", "w", "f", "down", "act", "gate",
    "up", "bert-base-chinese",
}


def latin_runs(texts: list[str]) -> list[str]:
    """Runs of three or more Latin words with a word outside ALLOWED_WORDS; text in backticks is code."""
    found = []
    for text in texts:
        for run in LATIN_RUN.findall(re.sub(r"`[^`]*`", " ", text)):
            words = [w.lower().strip(".,;:()'-") for w in re.split(r"[ \t,;:()]+", run) if w.strip(".,;:()'-")]
            if any(w not in ALLOWED_WORDS and not re.fullmatch(r"[a-z]?\d[\w.]*", w) for w in words):
                found.append(run)
    return found


@pytest.mark.parametrize("page", declared_pages())
def test_a_page_in_chinese_shows_no_english_prose(chinese_pages, page):
    """Issue 22: English that never was in a catalogue (a lab's sentence, a table cell) shows up here too."""
    texts, _, _ = chinese_pages[page]
    own = (PROMPT, chinese_pages["generated"].strip())  # the prompt and what the model wrote are no catalogue's
    texts = [functools.reduce(lambda text, x: text.replace(x, " "), own, text) for text in texts]
    assert latin_runs(texts) == [], f"English prose on {page} in Chinese"


def test_the_latin_check_catches_a_planted_english_sentence():
    assert latin_runs(["每 token 约 25 ms", "`from flash_attn import flash_attention`", "llmviz-tiny on cpu"]) == []
    assert latin_runs(["结果：the engine's timed region of each step"]) == ["the engine's timed region of each step"]


def test_bold_closes_where_markdown_can_close_it():
    """CommonMark closes ** only where it is right-flanking: after punctuation it must be followed by a space or
    punctuation. 「**全班就是工作负载：**目前」 showed its asterisks (the class guide's first draft): the colon goes
    outside."""
    import unicodedata

    def punct(c: str) -> bool:
        return unicodedata.category(c).startswith("P") or unicodedata.category(c).startswith("S")

    found = []
    for lang in LANGUAGES:
        for key, text in catalog(lang).items():
            for m in re.finditer(r"\*\*([^*\n]+)\*\*", text):
                inner, after = m.group(1), text[m.end():m.end() + 1]
                if inner[-1] == "}" or after == "{":  # a placeholder: its value decides
                    continue
                if punct(inner[-1]) and after and not after.isspace() and not punct(after):
                    found.append((lang, key))
    assert found == []


# Names a Chinese sentence may hold besides ALLOWED_WORDS: people, papers, companies, chips, formats, method and
# layer names, units (a word with "_", "." or "/" is code, a path or a unit, and passes as such).
NAMES = {
    "ascii", "ada", "ampere", "apple", "bert-base", "dettmers", "devlin", "esc", "flops", "fp64", "hugging", "face",
    "fastertransformer", "frantar", "gpt-2-124m", "hbm2e", "hessian", "hopper", "iclr", "kwon", "layernorm",
    "llama-2-7b", "llama-3-8b", "logit", "lens", "modelscope", "nvidia", "nan", "oom", "python", "qk", "redis",
    "sosp", "sxm", "sxm4", "sentencepiece", "tf32", "transformer", "u+fffd", "dtype", "eps", "fc", "proj",
    "flash-attn", "gptq-int4", "llm-int8", "kv-heads", "llmviz", "log-sum-exp", "logits", "mixed-poisson", "pickle",
    "sparse-block", "sparse-global", "sparse-local", "e-6", "bitsandbytes", "kib", "triton",
}
# Words ALLOWED_WORDS lets through as the embedded model's example prompts or code, English prose in a sentence
ENGLISH_PROSE = {"the", "of", "this", "list", "return", "from", "import", "module", "provides", "left", "right"}
TERMS_AND_NAMES = (ALLOWED_WORDS - ENGLISH_PROSE) | NAMES  # what a Chinese sentence may hold in Latin letters
DEVICES_LOWER = {"cpu", "cuda", "mps"}  # torch's names, for code: a sentence says CPU, CUDA, MPS
# The pages' English names: a Chinese sentence names a page by its Chinese title (“文章的论断”页面, not Claims 页面)
PAGE_WORDS = {"Home", "Lesson", "Tokens", "Layer", "Compare", "Layouts", "Batch", "Batching", "Serving", "Memory",
              "Claims", "Trace"}


def english_in_chinese(text: str) -> list[str]:
    """The Latin words of a Chinese message that are neither code, nor a unit, nor an allowed term or name: English
    inside a Chinese sentence (对 Reveal 将要计时的…, Claims 页面, lower-case cpu)."""
    found = []
    for w in latin_words(text):
        low = w.lower()
        allowed = (low in TERMS_AND_NAMES or len(w) == 1 or re.search(r"[_./]", w)
                   or re.fullmatch(r"[a-z]?\d[\w.]*|[kc]\d+(-[kc]\d+)?", low))
        if w in DEVICES_LOWER or w in PAGE_WORDS or not allowed:
            found.append(w)
    return found


def test_no_english_word_in_a_chinese_sentence():
    """Issue 50: code, model, unit and method names only; pages by their Chinese names; devices in capitals."""
    zh = catalog("zh")
    found = {key: words for key, text in zh.items() if (words := english_in_chinese(text))}
    assert found == {}


# What the Chinese docs may name besides a page's words: tools, protocols and systems a reader looks up by that name
DOC_NAMES = {
    "english", "readme", "hub", "haproxy", "chromium", "websocket", "safetensors", "ttft", "itl", "nat", "ipv4", "ipv6",
    "http", "cookie", "pypi", "fifo", "pip", "wheel", "numpy", "markdown", "glibc", "arena", "chroot", "root", "ping",
    "linux", "cpython", "pydoc", "bpe", "gil", "sqlite", "redis-py", "epyc", "ctrl-c", "smollm", "ci", "ai", "px",
    "inf", "serve-class",
}


def doc_paragraphs(text: str) -> list[str]:
    """A markdown file's paragraphs (lines joined, so code in backticks that wraps a line stays code), fenced code
    left out."""
    text = re.sub(r"```.*?```", " ", text, flags=re.S)
    return [" ".join(p.split("\n")) for p in re.split(r"\n\s*\n", text)]


def test_the_chinese_docs_have_no_english_word_in_a_sentence():
    """Issue 50's docs pass: docs/zh names pages by their Chinese titles, writes code as code and each term one way
    (the catalogues' spellings)."""
    from pathlib import Path

    found = {}
    for path in sorted((Path(__file__).resolve().parents[2] / "docs" / "zh").glob("*.md")):
        text = path.read_text(encoding="utf-8")
        if spellings := other_spellings(text):
            found[f"{path.name}: other spellings"] = spellings
        for para in doc_paragraphs(text):
            if re.search(r"[\u4e00-\u9fff]", para):
                words = [w for w in english_in_chinese(para) if w.lower() not in DOC_NAMES or w in PAGE_WORDS]
                if words:
                    found.setdefault(path.name, []).extend(words)
    assert found == {}


def test_the_english_word_check_catches_them():
    assert english_in_chinese("测量之前：对 Reveal 将要计时的这次运行") == ["Reveal"]
    assert english_in_chinese("在 Compare 页面打开；请选择 auto 或 cpu") == ["Compare", "cpu"]
    assert english_in_chinese("模型续写 Return the list") == ["Return", "the", "list"]
    assert english_in_chinese("二值（binary）运算；`cpu` 与 {device}；CPU 上的 SDPA 相对 eager；kv_heads") == []


def test_a_device_is_named_in_capitals_in_every_sentence():
    """torch's cpu/cuda/mps are code; a sentence (any message's `device` value) says CPU, CUDA:1, MPS."""
    from llmviz.i18n.translator import shown_device, translate

    assert [shown_device(d) for d in ("cpu", "cuda", "cuda:1", "mps", "auto", "?", None)] == [
        "CPU", "CUDA", "CUDA:1", "MPS", "auto", "?", None]
    said = translate("zh", "common.capture_note_light", device="cpu", threads=2, capture="meta")
    assert "CPU" in said and "cpu" not in said
