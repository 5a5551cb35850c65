"""Each page's URL section (ui/url_fields.py): a typed dataclass nested in Settings, its fields with their
URL names, defaults and checks, read by one loop. Every field of every section survives the round trip (a value
other than its default -> the link -> the same settings, of the field's own type), and a hostile value of every
field is dropped and named as today, the rest of the link kept. The example values are written here by hand, one
per field: a field added without one fails the first test."""

import pytest

from llmviz.ui import memory_url
from llmviz.ui.batch import batch_url
from llmviz.ui.compare import compare_url
from llmviz.ui.layouts import layouts_url
from llmviz.ui.lesson import lesson_steps
from llmviz.ui.settings import NESTED, SECTIONS, SHARED, Settings
from llmviz.ui.url_fields import Field, Section, between, read

# field -> (a value other than the default the page takes, the text a link carries for a hostile one)
EXAMPLES = {
    "model": ("Qwen/Qwen2.5-0.5B", None), "device": ("cpu", "tpu"), "dtype": ("bf16", "fp64"),
    "attn": ("eager", "magic"), "prompt": ("济南的冬天 is", None), "temperature": (0.0, "2.5"),
    "top_k": (7, "-1"), "top_p": (0.5, "0"), "seed": (123, "-3"), "lang": ("zh", "fr"), "present": (True, "2"),
    "step": (5, "513"), "history": ("1-2:0,0,1", "1-2:x"), "reseed": ("3:912", "0:1"),
    "engine": ("kv-layout=paged,kv-dtype=fp16", "kv-layout=nope"),
    "cmp_model": ("gpt2-124m-random", "Qwen/Qwen2.5-0.5B"), "cmp_a": ("kv-dtype=int8", "warp=9"),
    "cmp_b": ("attn=eager", "attn"), "cmp_steps": (32, "0"), "cmp_repeats": (5, "11"), "cmp_run": (True, "yes"),
    "cmp_ppl": (True, "3"), "cmp_ctx": (2000, "0"),
    "kv_bs": (16, "5"), "kv_max": (512, "100"), "kv_prompts": ("one\ntwo", "a\nb\nc\nd"), "kv_step": (3, "-1"),
    "kv_model": ("home", "gpt2"), "kv_lengths": ("64, 512", "64,x"), "kv_repeats": (2, "0"),
    "batch": ("a\nbb\nccc", None), "padding": ("left", "middle"), "lesson": ("2.1.2", "9.9.9"),
    "from_lesson": (True, "2"), "room": ("ABC234", "ABC"), "teach": ("k3y-_x", "a key"), "me": ("0a1b2c", "XYZ"),
    "review": (True, "2"),
    "mem_source": ("llama-2-7b", "../etc"), "mem_batch": (8, "0"), "mem_max_seq": (8192, "-2"),
    "mem_tokens": (100, "-5"), "mem_dtype": ("int4", "int3"), "mem_kv_dtype": ("fp8", "fp4"),
    "mem_kv_heads": (2, "-1"), "mem_layout": ("paged", "ring"), "mem_block": (32, "0"),
}


def section_of(field: Field) -> str | None:
    """The Settings attribute of the section that holds `field` (None: a shared field, on Settings itself)."""
    return next((name for name, section in NESTED.items() if field in section.fields), None)


def value_of(settings: Settings, field: Field):
    name = section_of(field)
    return getattr(getattr(settings, name) if name else settings, field.attr)


def with_value(field: Field, value) -> Settings:
    name = section_of(field)
    return Settings().with_(**({name: {field.attr: value}} if name else {field.attr: value}))


def fields():
    return [f for section in SECTIONS for f in section.fields]


def test_every_section_is_declared_by_its_page_family_and_every_field_once():
    assert SECTIONS == (SHARED, compare_url.SECTION, layouts_url.SECTION, batch_url.SECTION, lesson_steps.SECTION,
                        memory_url.SECTION)
    names = [f.name for f in fields()]
    assert len(names) == len(set(names)) and sorted(names) == sorted(EXAMPLES)  # an example for each field
    # the lesson's position is the lesson's, whether the page shown was opened from it (the way back), and a class
    assert [f.name for f in lesson_steps.SECTION.fields] == ["lesson", "from_lesson", "room", "teach", "me", "review"]


@pytest.mark.parametrize("field", fields(), ids=lambda f: f.name)
def test_a_value_other_than_the_default_survives_the_link(field):
    value, _ = EXAMPLES[field.name]
    assert value != field.default
    chosen = with_value(field, value)
    assert value_of(chosen, field) == value and type(value_of(chosen, field)) is type(field.default)  # typed
    link = chosen.to_query()
    assert field.name in link and all(isinstance(v, str) for v in link.values())
    back, problems = Settings.from_query(link)
    assert problems == [] and back == chosen


@pytest.mark.parametrize("field", [f for f in fields() if EXAMPLES[f.name][1] is not None], ids=lambda f: f.name)
def test_a_hostile_value_is_dropped_and_named_and_the_rest_kept(field):
    hostile = EXAMPLES[field.name][1]
    back, problems = Settings.from_query({field.name: hostile, "seed": "7", "lang": "zh"} if field.name not in
                                         ("seed", "lang") else {field.name: hostile, "top_k": "9"})
    assert len(problems) == 1 and problems[0].startswith(f"{field.name}=")
    assert value_of(back, field) == field.default  # the link opens with the default
    assert (back.seed, back.lang) == (7, "zh") if field.name not in ("seed", "lang") else back.top_k == 9


def test_the_loop_names_a_parsed_value_as_parsed_and_raw_text_as_text():
    section = Section("toy", (Field("n", 4, between(1, 8)), Field("word", "a")))
    values, problems = read([section], {"n": "9", "word": "b", "other": "x"})
    assert values == {"word": "b"} and problems == ["n=9"]  # the refused value as the page read it
    assert read([section], {"n": "four"})[1] == ["n='four'"]  # what did not parse, as the link wrote it
    with pytest.raises(Exception, match="fails its check"):
        Section("toy", (Field("n", 0, between(1, 8)),))  # a default the page would refuse from a link
