"""English counts read right: "1 token", "1 radian", never "1 tokens"; other counts unchanged."""

import re
import string

from llmviz.i18n.translator import catalog, translate

NOUNS = r"\{(\w+)(?::[^}]*)?\} (tokens|steps|positions|radians|layers|heads|rounds|blocks)\b"


def fields(text: str) -> list[str]:
    return [f for _, f, _, _ in string.Formatter().parse(text) if f]


def test_every_counted_message_says_one_in_the_singular():
    checked = 0
    for key, text in catalog("en").items():
        counted = re.findall(NOUNS, text)
        if not counted:
            continue
        for name, noun in counted:
            values = {f.split(":")[0].split(".")[0]: 1 for f in fields(text)}
            values.update({f.split(":")[0]: 2 for f in fields(text) if f.split(":")[0] != name})
            try:
                one = translate("en", key, **values)
            except (ValueError, TypeError, KeyError, IndexError):  # a field formatted as text or a float
                continue
            assert f"1 {noun}" not in one and f"1 {noun[:-1]}" in one, (key, one)
            checked += 1
    assert checked >= 20, checked
    assert translate("en", "home.prompt_tokens", n=21, prompt="x").count("21 tokens") == 1
    assert "1 个" in translate("zh", "home.prompt_tokens", n=1, prompt="x")
