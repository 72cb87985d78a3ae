"""Rendering for people and machines; the only package that formats tables.

tables (the sweep and site tables), results_json (results.json), files
(written whole: --output_dir, results.jsonl), stream (results.jsonl as
configs finish), verification (`verify`'s outcome and evidence in words),
listings (the targets, cases and experiments lists), explain and
explain_records (explanation records), explain_text (their text and JSON),
timings (--timings). Nothing here prints: the command layer does.
"""

from __future__ import annotations

__all__: list[str] = []
