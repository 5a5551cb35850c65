"""The torch-free declaration of an extension (llmviz/trace/extensions.py): validated on construction,
its words with the fallback to English, the tables that hold the stock declarations, and the plugin loader's
one-line problems (a module that is not there or fails is named; the others still load)."""

import sys

import pytest

from llmviz.errors import ConfigError, UnknownNameError
from llmviz.i18n.translator import LANGUAGES
from llmviz.trace.config import ATTN_BACKENDS, KV_LAYOUTS, EngineConfig
from llmviz.trace.extensions import OPTIONS, Extension, Names, load_plugins


def test_a_declaration_falls_back_to_english_and_to_its_name():
    ext = Extension("toy", {"en": "Toy", "zh": "玩具"}, about="a line")
    assert (ext.label_in("zh"), ext.label_in("fr"), ext.about_in("zh"), ext.about_in("en")) == \
        ("玩具", "Toy", "a line", "a line")
    bare = Extension("bare")
    assert bare.label_in("zh") == "bare" and bare.about_in("zh") == ""
    with pytest.raises(TypeError):
        ext.label["en"] = "changed"  # read-only: one declaration, shared by every session


@pytest.mark.parametrize("bad", [
    {"name": "Toy"}, {"name": "a,b"}, {"name": ""}, {"name": "x" * 41}, {"name": 3},
    {"name": "toy", "label": {"zh": "玩具"}},  # no English to fall back to
    {"name": "toy", "label": {"en": "  "}}, {"name": "toy", "about": {"en": 3}},
    {"name": "toy", "options": ("block_size",)}, {"name": "toy", "options": ["kv_block_size"]},
    {"name": "toy", "exact": "yes"}, {"name": "toy", "slots": 16},
])
def test_a_bad_declaration_is_a_config_error(bad):
    with pytest.raises(ConfigError):
        Extension(**bad)


def test_the_options_an_extension_may_read_are_engine_settings():
    assert set(OPTIONS) <= set(EngineConfig.__dataclass_fields__)


def test_every_stock_choice_has_its_words_in_every_language():
    for table in (KV_LAYOUTS, ATTN_BACKENDS):
        for name in table.recorded:
            ext = table.describe(name)
            assert set(ext.about) == set(LANGUAGES), (name, ext)
            assert set(ext.label) == set(LANGUAGES) or dict(ext.label) == {"en": name}, (name, ext)  # or a name
    assert KV_LAYOUTS.describe("paged").options == ("kv_block_size", "kv_pool_blocks")
    assert KV_LAYOUTS.describe("ring").derived and "ring" not in KV_LAYOUTS  # recorded, never chosen


def test_a_table_refuses_twice_and_describes_only_what_it_holds():
    table = Names("toy_kind", ["a", Extension("b", "Bee")])
    assert list(table) == ["a", "b"] and table.describe("b").label_in("en") == "Bee"
    with pytest.raises(ConfigError, match="declared twice"):
        table.add(Extension("a"))
    with pytest.raises(ConfigError, match="cannot be removed"):
        table.remove("a")
    with pytest.raises(UnknownNameError, match="'c' is not declared"):
        table.describe("c")
    table.add("c")
    table.remove("c")
    assert "c" not in table


def test_the_plugin_loader_names_what_failed_and_loads_the_rest(tmp_path, monkeypatch):
    (tmp_path / "llmviz_good_plugin.py").write_text("LOADED = True\n")
    (tmp_path / "llmviz_bad_plugin.py").write_text("raise RuntimeError('broken on purpose')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    problems = load_plugins({"LLMVIZ_EXTENSIONS": " llmviz_missing_plugin, llmviz_bad_plugin ,llmviz_good_plugin,"})
    assert problems == ["LLMVIZ_EXTENSIONS: llmviz_missing_plugin: ModuleNotFoundError: No module named "
                        "'llmviz_missing_plugin'",
                        "LLMVIZ_EXTENSIONS: llmviz_bad_plugin: RuntimeError: broken on purpose"]
    assert sys.modules["llmviz_good_plugin"].LOADED
    assert load_plugins({}) == []
