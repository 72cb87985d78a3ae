"""The pictures' colour by distance beyond the band and the HTML tables
from their template, on records made by hand (tests/hand_results.py; the
plot's shared error axis: pictures/plot_test.py). No XLA:
`tests/pictures/html_report_test.py` checks a real sweep's page in
Chromium.

Expected values come from the definitions, computed here by hand: the
band is NOISE_FACTOR (2) x the f32 noise floor, so the seed's 0.61 at a
floor of 1.0e-4 is 0.61 / 2e-4 = 3050 bands, log10(3050) / 3 > 1 (the
darkest); an unexplained 3e-4 over the same floor is 1.5 bands,
log10(1.5) / 3 = 0.0587.
"""

from __future__ import annotations

import dataclasses
import html.parser
import math

import numpy as np
from absl.testing import absltest, parameterized
from hand_results import config_result

from hloprobe.numerics import Verdict, VerdictKind, accuracy, rows
from hloprobe.pictures import html_report, html_table, severity
from hloprobe.records import ConfigResult

# "explained by TF32_TF32_F32 at sites [0, 1, 2]"
_TF32_SITES = (("TF32_TF32_F32", (0, 1, 2)),)


def _seed_a100() -> ConfigResult:
  return config_result(
    "a100",
    precision="tensorfloat32",
    err=0.61,
    ran=False,
    verdict=Verdict(VerdictKind.EXPLAINED, algorithms=_TF32_SITES),
  )


def _unexplained_small() -> ConfigResult:
  return config_result(
    precision="bfloat16", err=3e-4, verdict=Verdict(VerdictKind.UNEXPLAINED)
  )


class SeverityTest(parameterized.TestCase):
  @parameterized.named_parameters(
    ("within", 1e-4, 1e-4, 0.5),
    ("at_the_band", 2e-4, 1e-4, 1.0),
    ("unexplained_small", 3e-4, 1e-4, 1.5),
    ("seed_a100", 0.61, 1e-4, 3050.0),
    ("exact", 0.0, 1e-4, 0.0),
    ("zero_floor", 1e-9, 0.0, math.inf),
  )
  def test_row0_multiple_of_the_band(self, err, floor, want):
    r = config_result(err=err, floor=floor, ran=False)
    self.assertAlmostEqual(severity.beyond_band(r), want, places=9)

  def test_observed_error_counts_where_the_target_ran(self):
    r = config_result(err=3e-4)
    r = dataclasses.replace(
      r,
      prediction=dataclasses.replace(
        r.prediction,
        stats=dataclasses.replace(r.prediction.stats, row0_abs=1e-5),
      ),
    )
    self.assertAlmostEqual(severity.beyond_band(r), 1.5)

  def test_worst_row_counts_where_larger(self):
    errors = np.array([1e-4, 1e-4, 5e-2])
    stats = accuracy.ErrorStats(
      row0=0.5,
      row0_ref=0.5,
      row0_abs=1e-4,
      max_abs=5e-2,
      max_rel=5e-2,
      row_abs=errors,
    )
    floor = accuracy.NoiseFloor(1e-4, 1e-4, 0.0, row_abs=np.full(3, 1e-4))
    worst = rows.worst_row(stats, floor)
    self.assertEqual(worst.row, 2)
    r = config_result(worst=worst)
    self.assertAlmostEqual(severity.beyond_band(r), 5e-2 / 2e-4)

  def test_no_prediction_is_unknown(self):
    r = dataclasses.replace(config_result(), prediction=None)
    self.assertIsNone(severity.beyond_band(r))
    self.assertEqual(severity.beyond_words(None), "n/a")
    self.assertIsNone(severity.shade(None))

  def test_log_scale_pale_to_dark(self):
    self.assertIsNone(severity.shade(1.0))  # within the band: no colour
    self.assertAlmostEqual(severity.darkness(1.5), math.log10(1.5) / 3)
    self.assertAlmostEqual(severity.darkness(10.0), 1 / 3)
    self.assertEqual(severity.darkness(1000.0), 1.0)
    self.assertEqual(severity.darkness(3050.0), 1.0)
    self.assertEqual(severity.darkness(math.inf), 1.0)
    lightness = [
      float(severity.shade(m)[0].split()[2].rstrip("%)"))
      for m in (1.01, 1.5, 10, 100, 999, 1000, 6000)
    ]
    self.assertEqual(lightness, sorted(lightness, reverse=True))
    self.assertEqual(lightness[-1], lightness[-2])  # 1000x and more: darkest
    self.assertEqual(severity.shade(6000)[1], "#ffffff")
    self.assertEqual(severity.shade(1.5)[1], "#1b1b1b")

  @parameterized.named_parameters(
    ("within", 0.5, "within"),
    ("beyond", 3050.2, "3050x"),
    ("a decimal below 10", 1.5, "1.5x"),
    ("inf", math.inf, "inf"),
  )
  def test_words(self, m, want):
    self.assertEqual(severity.beyond_words(m), want)


class _Rows(html.parser.HTMLParser):
  """Each <tr> of the page: its attributes and its cells' (attrs, text)."""

  def __init__(self):
    super().__init__()
    self.rows, self.cell = [], None

  def handle_starttag(self, tag, attrs):
    if tag == "tr":
      self.rows.append((dict(attrs), []))
    elif tag in ("td", "th"):
      self.cell = [dict(attrs), ""]

  def handle_data(self, data):
    if self.cell is not None:
      self.cell[1] += data

  def handle_endtag(self, tag):
    if tag in ("td", "th") and self.cell is not None:
      self.rows[-1][1].append(tuple(self.cell))
      self.cell = None


def _parse(text: str) -> list:
  page = _Rows()
  page.feed(text)
  page.close()
  return page.rows


class TableTest(absltest.TestCase):
  def test_rows_coloured_by_distance_not_by_verdict(self):
    results = [config_result(), _seed_a100(), _unexplained_small()]
    header, *body = _parse(html_table(results))
    col = [text for _, text in header[1]].index("beyond band")
    self.assertEqual(
      [cells[col][1] for _, cells in body], ["within", "3050x", "1.5x"]
    )
    within, seed, small = (attrs for attrs, _ in body)
    self.assertNotIn("style", within)
    self.assertIn(severity.shade(3050)[0], seed["style"])
    self.assertIn(severity.shade(1.5)[0], small["style"])
    self.assertAlmostEqual(float(seed["data-beyond"]), 3050.0)

  def test_numbers_sort_as_numbers_text_as_text(self):
    (header, *body) = _parse(
      html_table([config_result(n=10), config_result(n=9)])
    )
    names = [text for _, text in header[1]]
    n, verdict = names.index("n"), names.index("verdict")
    self.assertEqual([c[n][0]["data-sort"] for _, c in body], ["10.0", "9.0"])
    self.assertNotIn("data-sort", body[0][1][verdict][0])

  def test_worst_row_beside_the_verdict(self):
    stats = accuracy.ErrorStats(
      row0=0.5,
      row0_ref=0.5,
      row0_abs=1e-4,
      max_abs=1.2e-2,
      max_rel=1e-2,
      row_abs=np.array([1e-4] * 5 + [1.2e-2] + [1e-4] * 2),
    )
    floor = accuracy.NoiseFloor(1e-4, 1e-4, 0.0, row_abs=np.full(8, 1e-4))
    r = config_result(n=8, worst=rows.worst_row(stats, floor))
    header, (_, cells) = _parse(html_table([r]))
    names = [text for _, text in header[1]]
    at = names.index("verdict")
    self.assertEqual(names[at + 1 : at + 3], ["beyond band", "worst row"])
    self.assertEqual(
      cells[at + 2][1], "row 5: 1.2e-02, 60x beyond f32 noise (1 of 8 rows)"
    )

  def test_text_is_escaped(self):
    text = html_table([config_result(case="<script>alert(1)</script>")])
    self.assertNotIn("<script>alert", text)
    self.assertIn("&lt;script&gt;alert(1)&lt;/script&gt;", text)

  def test_page_is_self_contained(self):
    page = html_report.render_html(
      [config_result(), _seed_a100()],
      [],
      {"jax": "0.12.0.1"},
      None,
      "no plot here",
    )
    self.assertNotRegex(page, r"(src|href)=\"(https?:)?//")
    self.assertIn("function sortBy", page)  # the table script, inline
    self.assertIn("No plot: no plot here", page)
    self.assertIn('id="configs"', page)
    self.assertIn('id="configs-filter"', page)
    self.assertIn('id="sites"', page)


if __name__ == "__main__":
  absltest.main()
