"""versions/bisect.py: the end of a bisect, the XLA range and the
emitters and passes that moved, on runs made by hand
(tests/version_runs.py).
"""

from __future__ import annotations

from absl.testing import absltest, parameterized
from version_runs import config_row, version_run

from hloprobe.versions import (
  bisect,
)


class BisectSummaryTest(parameterized.TestCase):
  """The end of a bisect: XLA range and the emitters/passes that moved."""

  def _site(self, fate, algorithm, target=None, by=None) -> dict:
    return {
      "index": 0,
      "fate": fate,
      "effective_algorithm": algorithm,
      "custom_call_target": target,
      "backend_config_kind": None,
      "fusion_kind": None,
      "rewritten_by": by,
    }

  def _runs(self):
    def with_site(site):
      c = config_row(2, site["fate"])
      return c | {
        "target": "a100",
        "precision": "tensorfloat32",
        "dot_sites": [site],
        "passes_explained": True,
      }

    old = version_run(
      "0.10.1",
      with_site(self._site("cuBLAS gemm", "F32_F32_F32", "__cublas$gemm")),
      jax_commit="619764c15117fbefc4ba13ab941871cb514c23f6",
    )
    by = {"pass": "dot-algorithm-rewriter", "pipeline": "p", "fate_after": "x"}
    new = version_run(
      "0.10.2",
      with_site(
        self._site("cuBLAS gemm", "TF32_TF32_F32", "__cublas$gemm", by)
      ),
      jax_commit="990e6a0b84138346e6a38785412f36356e0e5dc3",
    )
    return old, new

  def test_fate_movers(self):
    old, new = self._runs()
    self.assertEqual(
      bisect.fate_movers(old, new),
      (
        "emitter __cublas$gemm -> __cublas$gemm, pass none -> "
        "dot-algorithm-rewriter: a100 seed_mlp tensorfloat32 n=2 site 0",
      ),
    )
    self.assertEqual(bisect.fate_movers(old, old), ())

  def test_rendered_answer_has_the_xla_range(self):
    old, new = self._runs()
    for run in (old, new):
      run.reply["requirements"] = [
        {"name": "accurate", "passed": run is old, "evidence": ["e"]}
      ]
    result = bisect._result(
      ("0.10.1", "0.10.2"),
      {"0.10.1": "PASS", "0.10.2": "FAIL"},
      {"0.10.1": old, "0.10.2": new},
      "0.10.1",
      "0.10.2",
      (),
    )
    text = bisect.render_bisect(result, ("accurate",))
    self.assertIn(
      "XLA from jaxlib 0.10.1 to 0.10.2 (9b635916ecc6 to 5a9e73cbd925): "
      "https://github.com/openxla/xla/compare/"
      "9b635916ecc6df6efee62d8e4b0c7ef87ef84d69..."
      "5a9e73cbd92530cac2ac36f4736a774b2412afe2",
      text,
    )
    self.assertIn("pass none -> dot-algorithm-rewriter", text)


if __name__ == "__main__":
  absltest.main()
