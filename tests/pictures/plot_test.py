"""pictures/plot.py: the row-0 error plot's panels share one error axis
(or not, when asked) and coinciding precisions stay apart, on records made
by hand (tests/hand_results.py): the cpu within a 1e-4 floor, the a100's
TF32 at 0.61. Expected limits are a decade around the extremes, as the
module draws them. Moved from pictures/severity_test.py (PlotAxisTest)."""

from __future__ import annotations

import importlib.util

from absl.testing import absltest
from hand_results import config_result

_HAVE_PLOT = importlib.util.find_spec("matplotlib") is not None
_NO_PLOT = "matplotlib not installed (the `plot` extra; make installs it)"


@absltest.skipUnless(_HAVE_PLOT, _NO_PLOT)
class PlotAxisTest(absltest.TestCase):
  def _results(self):
    return [
      config_result("cpu", n, p, err=1e-4)
      for p in ("tensorfloat32", "float32")
      for n in (1, 2)
    ] + [
      config_result("a100", n, p, err=e, ran=False)
      for p, e in (("tensorfloat32", 0.61), ("float32", 1e-4))
      for n in (1, 2)
    ]

  def test_panels_share_one_error_axis_by_default(self):
    from hloprobe.pictures import plot

    cpu, a100 = plot.row0_figure(self._results()).axes
    self.assertEqual(cpu.get_ylim(), a100.get_ylim())
    low, high = cpu.get_ylim()
    self.assertAlmostEqual(high, 6.1)  # a decade above the a100's 0.61
    self.assertAlmostEqual(low, 1e-5)  # a decade below the floors' 1e-4

  def test_each_panel_its_own_axis_when_asked(self):
    from hloprobe.pictures import plot

    cpu, a100 = plot.row0_figure(self._results(), shared_y=False).axes
    self.assertAlmostEqual(cpu.get_ylim()[1], 1e-3)
    self.assertAlmostEqual(a100.get_ylim()[1], 6.1)

  def test_coinciding_precisions_differ_in_marker_and_dashes(self):
    from hloprobe.pictures import plot

    cpu, _ = plot.row0_figure(self._results()).axes
    lines = {line.get_gid(): line for line in cpu.get_lines()}
    tf32, f32 = lines["observed:tensorfloat32"], lines["observed:float32"]
    self.assertEqual(list(tf32.get_ydata()), list(f32.get_ydata()))
    self.assertNotEqual(tf32.get_marker(), f32.get_marker())
    self.assertGreater(tf32.get_linewidth(), f32.get_linewidth())
    p_tf32, p_f32 = lines["predicted:tensorfloat32"], lines["predicted:float32"]
    self.assertNotEqual(p_tf32.get_marker(), p_f32.get_marker())
    self.assertEqual(p_tf32.get_fillstyle(), "none")
    self.assertEqual(tf32.get_fillstyle(), "full")


if __name__ == "__main__":
  absltest.main()
