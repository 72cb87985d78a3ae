"""Batch invariance: which batch sizes give a row the same bits, what
breaks it at each class boundary, and the settings that pin it (issue 38).

The package's face. Its modules, in data-flow order:

  rows             the compared rows (row 0; an anchor row at the first,
                   a middle and the last offset) and their classes of
                   identical bits (`classes_of`)
  runs             a config's rows run in a worker on one compiled
                   executable (`RowsRequest`, `anchor_inputs`)
  kernel_identity  the per-row arithmetic of a compile-only config's
                   kernels (`RowKernel`), the `KernelReader` protocol
                   that `hloprobe.kernels` fills, and the fallback from
                   the dot sites' fates (`site_kernels`)
  answer           each group's `Invariance`: classes, basis (bits run,
                   kernel identity, unknown), boundaries and their causes
  in_workers       every runnable config's rows on a sweep's workers, and
                   a sweep's answer (`invariance_of_sweep`)
  pin_file         the kernels stage's pinned-gemm autotune-results file,
                   made from compiles in a worker of its own
  pin              the settings that pin a group, searched cheapest first
                   and each verified by a sweep (`search_pins`)
  words            the answer in words, bitwise question first, and JSON
"""

from __future__ import annotations

from hloprobe.invariance.answer import Boundary as Boundary
from hloprobe.invariance.answer import Invariance as Invariance
from hloprobe.invariance.answer import config_key as config_key
from hloprobe.invariance.answer import group_key as group_key
from hloprobe.invariance.answer import invariance_of as invariance_of
from hloprobe.invariance.answer import rows_from_records as rows_from_records
from hloprobe.invariance.in_workers import (
  invariance_of_sweep as invariance_of_sweep,
)
from hloprobe.invariance.in_workers import rows_kind as rows_kind
from hloprobe.invariance.in_workers import sweep_kernels as sweep_kernels
from hloprobe.invariance.in_workers import sweep_rows as sweep_rows
from hloprobe.invariance.kernel_identity import KernelReader as KernelReader
from hloprobe.invariance.kernel_identity import RowKernel as RowKernel
from hloprobe.invariance.kernel_identity import kernel_reader as kernel_reader
from hloprobe.invariance.kernel_identity import site_kernels as site_kernels
from hloprobe.invariance.pin import Pin as Pin
from hloprobe.invariance.pin import PinCandidate as PinCandidate
from hloprobe.invariance.pin import candidates_for as candidates_for
from hloprobe.invariance.pin import search_pins as search_pins
from hloprobe.invariance.pin import untried_pins as untried_pins
from hloprobe.invariance.rows import ANCHOR as ANCHOR
from hloprobe.invariance.rows import ANCHOR_OFFSETS as ANCHOR_OFFSETS
from hloprobe.invariance.rows import ROW0 as ROW0
from hloprobe.invariance.rows import ConfigRows as ConfigRows
from hloprobe.invariance.rows import RowClasses as RowClasses
from hloprobe.invariance.rows import anchor_offsets as anchor_offsets
from hloprobe.invariance.rows import classes_of as classes_of
from hloprobe.invariance.runs import RowsRequest as RowsRequest
from hloprobe.invariance.runs import anchor_inputs as anchor_inputs
from hloprobe.invariance.runs import rows_here as rows_here
from hloprobe.invariance.words import answer_lines as answer_lines
from hloprobe.invariance.words import first_lines as first_lines
from hloprobe.invariance.words import invariance_json as invariance_json
from hloprobe.invariance.words import kernel_lines as kernel_lines
from hloprobe.invariance.words import pin_lines as pin_lines

__all__ = [
  "ANCHOR",
  "ANCHOR_OFFSETS",
  "Boundary",
  "ConfigRows",
  "Invariance",
  "KernelReader",
  "Pin",
  "PinCandidate",
  "ROW0",
  "RowClasses",
  "RowKernel",
  "RowsRequest",
  "anchor_inputs",
  "anchor_offsets",
  "answer_lines",
  "candidates_for",
  "classes_of",
  "config_key",
  "first_lines",
  "group_key",
  "invariance_json",
  "invariance_of",
  "invariance_of_sweep",
  "kernel_lines",
  "kernel_reader",
  "pin_lines",
  "rows_from_records",
  "rows_here",
  "rows_kind",
  "search_pins",
  "site_kernels",
  "sweep_kernels",
  "sweep_rows",
  "untried_pins",
]
