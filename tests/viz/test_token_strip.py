"""C1: the token chips (llmviz.viz.tokens): one chip per token with its id on its own line, one box per character
group under that group's chips, every text escaped. Read back with the standard library's HTML parser."""

from html.parser import HTMLParser

from llmviz.analysis.tokens import alone, group_by_character
from llmviz.viz.tokens import CHIPS_CLASS, token_chips

JINAN = "济南的冬天"


def jinan_pieces() -> list[bytes]:
    return [bytes([b]) for b in JINAN.encode("utf-8")] + [b" of", b" values"]  # 15 byte tokens + 2 words


class Chips(HTMLParser):
    """The groups in order: each a dict of its chips [(text, id, is a byte chip)], its character text, split or not."""

    def __init__(self):
        super().__init__()
        self.groups, self.stack, self.text = [], [], None

    def handle_starttag(self, tag, attrs):
        cls = (dict(attrs).get("class") or "").split()
        self.stack.append(cls)
        if "grp" in cls:
            self.groups.append({"chips": [], "char": "", "split": "split" in cls})
        elif "tok" in cls:
            self.groups[-1]["chips"].append(["", "", "byte" in cls])

    def handle_endtag(self, tag):
        self.stack.pop()

    def handle_data(self, data):
        if not self.stack or "style" in self.stack[-1]:
            return
        top = self.stack[-1]
        if "tok" in top:
            self.groups[-1]["chips"][-1][0] += data
        elif "id" in top:
            self.groups[-1]["chips"][-1][1] += data
        elif "chr" in top:
            self.groups[-1]["char"] += data


def parsed(html: str) -> list[dict]:
    p = Chips()
    p.feed(html.split("</style>", 1)[1])
    return p.groups


def test_every_token_and_group_is_a_chip_with_its_id_on_its_own_line():
    pieces = jinan_pieces()
    groups = group_by_character(pieces)
    html = token_chips([alone(p) for p in pieces], list(range(100, 117)), [p.hex(" ") for p in pieces], groups,
                       "title")
    assert f'class="{CHIPS_CLASS}"' in html and ".id { display: block;" in html  # the id on a line of its own
    got = parsed(html)
    assert [g["char"] for g in got] == [*JINAN, "␣of", "␣values"]
    assert [g["split"] for g in got] == [True] * 5 + [False, False]  # a character cut into bytes is highlighted
    first = got[0]["chips"]
    assert [c[0] for c in first] == ["e6", "b5", "8e"] and [c[1] for c in first] == ["100", "101", "102"]
    assert all(c[2] for c in first)  # byte chips
    assert got[5]["chips"] == [["␣of", "115", False]] and got[6]["chips"] == [["␣values", "116", False]]
    assert sum(len(g["chips"]) for g in got) == 17


def test_token_text_is_escaped():
    pieces = [b"<b>", b"&", b'"x"']
    html = token_chips([alone(p) for p in pieces], [1, 2, 3], [p.hex(" ") for p in pieces],
                       group_by_character(pieces), "a <title>")
    assert "&lt;b&gt;" in html and "&amp;" in html and "a &lt;title&gt;" in html
    assert [c[0] for g in parsed(html) for c in g["chips"]] == ["<b>", "&", '"x"']
