"""How a user's search text becomes an FTS5 expression: words only, never syntax."""

from __future__ import annotations

import contextlib
import sqlite3

import pytest

from heron.runtime.memory._search import fts5_query


@pytest.mark.parametrize(
    ("text", "expression"),
    [
        ("heron", '("heron")'),
        ("grey heron", '("grey" AND "heron")'),
        ('"shallow water" fish', '("shallow water" AND "fish")'),
        ("heron -milk", '(("heron") NOT ("milk"))'),
        ('heron -"a b"', '(("heron") NOT ("a b"))'),
        ("sparrows or milk", '("sparrows") OR ("milk")'),
        ("AND NOT NEAR", '("AND" AND "NOT" AND "NEAR")'),
        ('foo-bar "unclosed', '("foo bar" AND "unclosed")'),
        ("heron* ^x col:umn", '("heron" AND "x" AND "col umn")'),
    ],
)
def test_words_become_quoted_terms(text: str, expression: str) -> None:
    assert fts5_query(text) == expression


@pytest.mark.parametrize("text", ['"', "*", "-", "()", "or", "-milk", "   ", "\x00"])
def test_no_word_is_nothing_to_search(text: str) -> None:
    assert fts5_query(text) is None


@pytest.mark.parametrize(
    "text",
    ['"', "*", "AND", "a AND", "NOT a", "NEAR(a b)", "a:b", "(", ")", "'", "a OR OR b", "💥 é"],
)
def test_every_expression_is_valid_fts5(text: str) -> None:
    expression = fts5_query(text)
    with contextlib.closing(sqlite3.connect(":memory:")) as db:
        db.execute("CREATE VIRTUAL TABLE t USING fts5(body)")
        db.execute("INSERT INTO t VALUES ('a and not near b col umn é')")
        if expression is not None:
            db.execute("SELECT * FROM t WHERE t MATCH ?", (expression,)).fetchall()
