"""Rendering for people and machines; the only package that formats tables.

tables (the sweep and site tables; frame: the sweep table as values, for
a DataFrame), results_json (results.json), files
(written whole: --output_dir, results.jsonl), stream (results.jsonl as
configs finish), verification (`verify`'s outcome and evidence in words),
listings (the targets, cases and experiments lists), explain and
explain_records (explanation records; explain_rows: rows beyond row 0;
explain_made: what XLA made), explain_text (their text and JSON),
explain_answer (the answer first: the worst cause and what to do;
findings: the findings grouped by cause, each fix as a code change;
answer_page: the answer as the HTML page draws it, in words),
timings (--timings), sweep_shown (what `sweep` prints once done, by
stream), verdict_words (verdicts, rows and findings in words: the one
place their sentences are made; site_words: failures, rejected compiles
and the site notes; kernel_words: the kernel model's
remainder; invariance_words: the batch-invariance answer and its pins;
invariance_causes: a class boundary's causes, a row kernel's arithmetic,
why the kernel model does not class a size). Nothing here prints: the
command layer does.
"""

from __future__ import annotations

from hloprobe.report.answer_page import page_words as page_words
from hloprobe.report.explain import explain_results as explain_results
from hloprobe.report.explain_answer import Answer as Answer
from hloprobe.report.explain_answer import render_answered as render_answered
from hloprobe.report.files import atomic_write as atomic_write
from hloprobe.report.files import write_outputs as write_outputs
from hloprobe.report.frame import table_values as table_values
from hloprobe.report.listings import listing as listing
from hloprobe.report.results_schema import dumps_json as dumps_json
from hloprobe.report.results_schema import results_json as results_json
from hloprobe.report.results_schema import (
  schema_document as schema_document,
)
from hloprobe.report.stream import stream_results as stream_results
from hloprobe.report.sweep_shown import sweep_text as sweep_text
from hloprobe.report.tables import OUTPUT_FORMS as OUTPUT_FORMS
from hloprobe.report.tables import render as render
from hloprobe.report.tables import table as table
from hloprobe.report.verdict_words import rows_cell as rows_cell
from hloprobe.report.verification import (
  render_verification as render_verification,
)
from hloprobe.report.verification import requirement_lines as requirement_lines

__all__ = [
  "Answer",
  "OUTPUT_FORMS",
  "atomic_write",
  "dumps_json",
  "explain_results",
  "listing",
  "page_words",
  "render",
  "render_answered",
  "render_verification",
  "requirement_lines",
  "results_json",
  "rows_cell",
  "schema_document",
  "stream_results",
  "sweep_text",
  "table",
  "table_values",
  "write_outputs",
]
