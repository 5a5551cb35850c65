"""No CSV the app writes holds a live formula: a student who named themselves
=cmd|'/C calc'!A0 reached the teacher's class summary as a formula a spreadsheet would run.

Every CSV goes through llmviz/ui/chrome.csv_text, which applies OWASP's CSV injection rule to each cell: text
beginning with =, +, -, @, a tab or a carriage return gets a leading '. Numbers stay numbers, and so does text that
is a plain decimal number (what a spreadsheet reads as that number). The cells are read back with Python's own csv
reader; the end-to-end case is the class summary the teacher downloads (classes.summary, then table_csv as the
class's End menu calls it), built in a real class store.
"""

from __future__ import annotations

import csv
import io

import pytest

from llmviz.classroom import classes
from llmviz.classroom.store import Limits
from llmviz.classroom.stores import open_store
from llmviz.ui.chrome import csv_cell, csv_text, table_csv

NAME = "=cmd|'/C calc'!A0"


def read_back(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


@pytest.mark.parametrize(("cell", "written"), [
    ("=1+1", "'=1+1"),
    ("+1+1", "'+1+1"),
    ("-x", "'-x"),
    ("@SUM(A1)", "'@SUM(A1)"),
    ("\t=1+1", "'\t=1+1"),
    ("\r=1+1", "'\r=1+1"),
    ("-1+2", "'-1+2"),  # a number then more: a formula to a spreadsheet
    ("-inf", "'-inf"),
    ("+39 pts", "'+39 pts"),  # the claims table's gain in points
    (NAME, "'" + NAME),
    ("-0.5", "-0.5"),  # text that is a plain decimal number stays as it is
    ("+3", "+3"),
    ("-1e-3", "-1e-3"),
    ("-12%", "-12%"),
    ("Lin", "Lin"),  # ordinary text, a formula's sign inside it, nothing
    ("a=b", "a=b"),
    ("", ""),
    ("'=quoted already", "'=quoted already"),
])
def test_a_text_cell(cell, written):
    assert csv_cell(cell) == written
    assert read_back(csv_text([["h"], [cell]]))[1] == [written]


@pytest.mark.parametrize("number", [-0.5, -3, 0.25, -1e-3, 2**40])
def test_a_number_stays_a_number(number):
    assert csv_cell(number) is number
    (cell,) = read_back(csv_text([[number]]))[0]
    assert cell == str(number) and float(cell) == number  # not quoted, not prefixed


def test_the_class_summary_holds_the_name_as_text(tmp_path):
    """A student renamed to a formula predicts -0.5: the summary's CSV holds the name prefixed, the value a number."""
    store = open_store(f"sqlite:///{tmp_path / 'class.db'}")
    code, key = classes.start(store, Limits(students=5, submissions=3), now=1000.0)
    student = classes.join(store, code, "10.0.0.1", now=1000.0)
    assert classes.rename(store, code, student.id, NAME, now=1000.0) == NAME  # a name the class accepts
    classes.predict(store, code, student.id, "K1", 1, -0.5, now=1000.0)
    out = classes.summary(store, code, key, now=1000.0)
    assert out["predictions"] == [{"name": NAME, "item": "K1", "round": 1, "value": -0.5}]
    rows = read_back(table_csv(out["predictions"]))
    assert rows == [["name", "item", "round", "value"], ["'" + NAME, "K1", "1", "-0.5"]]
