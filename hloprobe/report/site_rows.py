"""The site table's rows: one per contraction site per config.

Split out of `tables` (which renders them with its one layout, `table`),
with the two cell formats both tables use. Formats what the records
already say; computes nothing new.

Private in intent: use the package, `hloprobe.report`.
"""

from __future__ import annotations

import os

from hloprobe.compile import selection_note
from hloprobe.ir import is_attention_target
from hloprobe.numerics import site_model
from hloprobe.records import ConfigResult
from hloprobe.report.site_words import collective_words
from hloprobe.sites import Fate

__all__ = ["SITE_HEADERS", "effective_cell", "num", "site_rows"]


def num(value, fmt: str) -> str:
  """`value` formatted by `fmt` (e.g. ".1e"), or "n/a" for None.

  Raises:
    ValueError, TypeError: `fmt` does not apply to `value` (as `format`).
  """
  return "n/a" if value is None else format(value, fmt)


def effective_cell(f) -> str:
  """A site's effective algorithm; "unknown" where its arithmetic is not
  settled, "n/a" where nothing computes it (gone)."""
  if f.effective_algorithm:
    return f.effective_algorithm
  return "n/a" if f.fate == Fate.GONE else "unknown"


SITE_HEADERS = (
  "experiment",
  "target",
  "case",
  "n",
  "precision",
  "site",
  "source",
  "lhs x rhs -> result",
  "K",
  "precision config",
  "algorithm",
  "fate",
  "emitter",
  "split-K",
  "rewritten by",
  "effective algorithm",
  "band worst / expected",
  "kernel model",
)


def _band_cell(prediction, site: int) -> str:
  """A site's analytic band: worst-case bound / expected size, output units."""
  band = prediction.bands[site] if prediction is not None else None
  if band is None:
    return "n/a"
  return f"{band.worst_abs:.1e} / {band.expected_abs:.1e}"


def _unrewritten(site) -> str:
  """The pass cell of a site no pass rewrote: a fused attention site is
  the cuDNN call jax itself wrote (`hloprobe.ir.fused_attention`), a
  convolution stays a convolution (XLA:CPU's, fate `conv`)."""
  if is_attention_target(site.op):
    return "(jax's cuDNN call)"
  return "(stays a convolution)" if site.is_convolution else "(stays a dot)"


def site_rows(r: ConfigResult) -> list[list[str]]:
  """The site table's rows of one config: one row of `SITE_HEADERS`'
  cells (str) per dot site, in site order; [] for a config whose compile
  failed (no `Compilation`)."""
  rows = []
  c, comp = r.config, r.compilation
  passes = comp.passes if comp else None
  for f in comp.fates if comp else ():
    s = f.site
    by = (passes or {}).get(s.index)
    rewritten = (
      ("unknown" if comp.passes_error else "n/a")
      if passes is None
      else (f"{by.pass_name} ({by.pipeline})" if by else _unrewritten(s))
    )
    rows.append(
      [
        c.experiment,
        c.target.name,
        c.case,
        str(c.n),
        c.precision,
        str(s.index),
        os.path.basename(s.location) if s.location else "n/a",
        f"{s.lhs} x {s.rhs} -> {s.result}",
        str(s.contracting_size),
        f.precision_config + (" (conflict)" if f.conflict else ""),
        f.algorithm or "n/a",
        f.fate.value
        + (f" ({merged})" if (merged := f.merge_words()) else "")
        + (f", then {collective_words(f.collective)}" if f.collective else "")
        + (f" ({n.words})" if (n := selection_note(f.selection)) else ""),
        f.emitter or "n/a",
        num(f.split_k, "d"),
        rewritten,
        effective_cell(f),
        _band_cell(r.prediction, s.index),
        site_model(
          f.fate,
          f.mma_opcodes,
          c.target.compute_capability,
          f.split_k,
          f.effective_algorithm,
          f.ptx_tf32_rounding,
        ).kind,
      ]
    )
  return rows
