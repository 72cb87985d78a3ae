"""Rendering for people and machines; the only package that formats tables.

render (tables and results.json), stream (results.jsonl as configs finish),
listings (the targets, cases and experiments lists), explain (explanation
records), explain_text (their text and JSON), timings (--timings).
"""

from __future__ import annotations

__all__: list[str] = []
