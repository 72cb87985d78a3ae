"""How far a config strays beyond its band, and the colour that says it.

One number per config, m, dimensionless: how many allowed f32 noise
bands its worst deviation is, the largest of

  row 0     |row 0 - float64 row 0| / (NOISE_FACTOR x the f32 noise floor
            of row 0): `numerics.accuracy.noise_multiple`'s ratio, of the
            observed error where the target ran, else of the prediction
            (a compile-only target's);
  rows      every row judged (`Prediction.rows`, `numerics.rows`): the
            worst row's own m;
  made      where "XLA changed the math" (`numerics.made`): the executed
            module's deviation / its F32 band.

m <= 1 is within the band (no colour); the pictures colour m > 1 on a log
scale, 1x pale to 1000x and more dark (`shade`), whatever the verdict's
words: the seed's 0.61 error on the A100 (about 3000 bands of 2 x 1.0e-4)
is darker than an unexplained 3e-4 over the same floor (1.5 bands). Used by
the HTML report (row colour, the "beyond band" column) and Model Explorer
(which config it opens on).

Private in intent: use the package, `hloprobe.pictures`.
"""

from __future__ import annotations

import math

from hloprobe.numerics import NOISE_FACTOR

__all__ = ["DARK_AT", "beyond_band", "beyond_words", "darkness", "shade"]

DARK_AT = 1000.0  # m at and above which the colour is darkest


def _ratio(err: float | None, band: float | None) -> float | None:
  """err / band (0 for an exact 0; inf for an error over a zero band)."""
  if err is None or band is None:
    return None
  if err == 0:
    return 0.0
  return math.inf if band == 0 else err / band


def beyond_band(r) -> float | None:
  """m of a `records.ConfigResult` (see the module), or None where nothing
  was compared (no prediction: failed, or no float64 reference)."""
  p = r.prediction
  if p is None:
    return None
  seen = r.execution and r.execution.stats
  err = seen.row0_abs if seen else p.stats.row0_abs
  found = [_ratio(err, NOISE_FACTOR * p.noise.row0_abs)]
  found += [w.multiple for w in p.rows if w is not None]
  made = r.made
  if made is not None and made.changed:
    found.append(_ratio(made.deviation_abs, made.bound_abs))
  known = [m for m in found if m is not None and not math.isnan(m)]
  return max(known) if known else None


def beyond_words(m: float | None) -> str:
  """m in a table cell: "3050x", "1.5x" (one decimal below 10), "within"
  (m <= 1), "inf" (over a zero floor) or "n/a"."""
  if m is None:
    return "n/a"
  if m <= 1:
    return "within"
  if math.isinf(m):
    return "inf"
  return f"{m:.1f}x" if m < 10 else f"{m:.0f}x"


def darkness(m: float | None) -> float:
  """0 (m <= 1 or unknown) to 1 (m >= DARK_AT): log10(m) / log10(DARK_AT),
  clipped."""
  if m is None or m <= 1:
    return 0.0
  if math.isinf(m):
    return 1.0
  return min(math.log10(m) / math.log10(DARK_AT), 1.0)


def shade(m: float | None) -> tuple[str, str] | None:
  """(background, text) CSS colours for m, or None within the band.

  The background runs from a pale orange, hsl(35 95% 90%), just beyond the
  band to a dark red, hsl(0 70% 32%), at DARK_AT and beyond, its lightness
  linear in log10(m); the text turns white where the background is dark.
  """
  if m is None or m <= 1:
    return None
  t = darkness(m)
  hue, sat, light = 35 * (1 - t), 95 - 25 * t, 90 - 58 * t
  text = "#ffffff" if light < 55 else "#1b1b1b"
  return f"hsl({hue:.0f} {sat:.0f}% {light:.0f}%)", text
