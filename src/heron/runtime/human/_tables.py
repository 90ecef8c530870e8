"""Human requests' table: questions put to a person, and the inbox."""

from __future__ import annotations

import sqlalchemy as sa

from ..db import Schema, Text, metadata

__all__ = ["HUMAN_SCHEMA", "human_requests"]

human_requests = sa.Table(
    "heron_human_requests",
    metadata,
    sa.Column("request_id", sa.String(128), primary_key=True),
    # The node the answer wakes; NULL for a request an application filed for nobody.
    sa.Column("node_id", sa.String(128), index=True),
    sa.Column("profile", sa.String(128), nullable=False),
    # open, answered, dismissed or cancelled
    sa.Column("status", sa.String(16), nullable=False, index=True),
    sa.Column("title", Text, nullable=False),
    # [{question, context, choices, multiple, free_text}]
    sa.Column("questions", sa.JSON, nullable=False),
    sa.Column("body", Text),
    # {answers, text, responded_by, responded_at}
    sa.Column("response", sa.JSON),
    # [{note, percent, by, at}]
    sa.Column("progress", sa.JSON, nullable=False),
    # Why it was dismissed or cancelled.
    sa.Column("reason", Text),
    sa.Column("revision", sa.Integer, nullable=False),
    # The ask-questions call that filed it (run, DBOS step, call id, hashed): a call
    # DBOS runs again after a crash finds its request instead of filing a second one.
    sa.Column("call_key", sa.String(128)),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("updated_at", sa.Float, nullable=False),
    sa.Column("resolved_at", sa.Float),
    sa.Index("ix_heron_human_requests_call_key", "node_id", "call_key", unique=True),
)


def _v1(conn: sa.Connection) -> None:
    """Human requests and the inbox."""
    metadata.create_all(conn, tables=[human_requests])


HUMAN_SCHEMA = Schema("human", steps=(_v1,), per_node=(human_requests,), legacy=(9,))
"""Human requests' tables; a node's requests are deleted with it."""
