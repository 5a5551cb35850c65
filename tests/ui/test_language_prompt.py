"""The prompt a session starts with follows the interface language: 济南的冬天 in Chinese, on first
load and on Reset demo; switching language changes the prompt only while it is still the other language's
default; a link round-trips whichever prompt it carries; a browser's locale names the language it asks for."""

import pytest
from ui_helpers import open_app, page_file

from llmviz.i18n.translator import LANGUAGES, translate
from llmviz.ui.settings import DEFAULT_PROMPTS, Settings, language_of
from llmviz.ui.state import SETTINGS_KEY


def test_each_interface_language_has_a_default_prompt():
    assert set(DEFAULT_PROMPTS) == set(LANGUAGES)
    assert DEFAULT_PROMPTS["zh"] == "济南的冬天"  # the article's own example, five characters


@pytest.mark.parametrize("query, prompt", [
    ({}, "The list of"),
    ({"lang": "zh"}, "济南的冬天"),
    ({"lang": "zh", "prompt": "The list of"}, "The list of"),  # an English prompt in the Chinese interface stays
    ({"lang": "en", "prompt": "济南的冬天"}, "济南的冬天"),
])
def test_a_link_opens_the_prompt_it_names_or_its_language_default(query, prompt):
    s, problems = Settings.from_query(query)
    assert problems == [] and s.prompt == prompt
    assert Settings.from_query(s.to_query())[0] == s  # the link written back reopens the same settings


def test_switching_language_moves_only_a_default_prompt():
    en = Settings.fresh("en")
    assert en.with_language("zh").prompt == "济南的冬天"
    assert en.with_language("zh").with_language("en").prompt == "The list of"
    typed = en.with_(prompt="Return the")
    assert typed.with_language("zh").prompt == "Return the"
    assert Settings.fresh("zh").with_(prompt="济南").with_language("en").prompt == "济南"


def test_the_language_switch_and_reset_demo_in_the_app(model_dirs):
    at = open_app(page_file("decode"), lang="zh")
    assert at.session_state[SETTINGS_KEY].prompt == "济南的冬天"
    at.sidebar.radio(key="lang_switch").set_value("en").run()
    assert not at.exception
    assert at.session_state[SETTINGS_KEY].prompt == "The list of"
    at.sidebar.radio(key="lang_switch").set_value("zh").run()
    assert at.session_state[SETTINGS_KEY].prompt == "济南的冬天"


def test_reset_demo_puts_back_the_chinese_default(model_dirs):
    at = open_app(page_file("decode"), lang="zh", present=1, prompt="Return the", seed=7)
    assert at.session_state[SETTINGS_KEY].prompt == "Return the"
    reset = at.button(key="present_reset")
    assert reset.label == translate("zh", "present.reset_demo")
    reset.click().run()
    assert not at.exception
    s = at.session_state[SETTINGS_KEY]
    assert (s.prompt, s.seed, s.lang) == ("济南的冬天", 0, "zh")


@pytest.mark.parametrize(("locale", "lang"), [
    ("zh-CN", "zh"), ("zh", "zh"), ("zh-Hant-TW", "zh"), ("ZH_cn", "zh"), ("en-US", "en"), ("en", "en"),
    ("fr-FR", None), ("", None), (None, None), ("zhx", None), ("english", None),
])
def test_a_locale_names_the_language_it_asks_for(locale, lang):
    assert language_of(locale) == lang
