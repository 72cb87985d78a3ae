"""Without cuDNN's library, cuDNN attention fails with one line naming the
wheel (issue 24, item 2). Tested on the message function itself, with the
errors jax raises (jax/_src/cudnn/fused_attention_stablehlo.py
`check_cudnn_version`, jax 0.10.2 and 0.12.0.1: the CUDA plugin's
"cuDNN not found." and, with no plugin, "cuDNN is not detected.").
"""

from __future__ import annotations

import os
import re

from absl.testing import absltest, parameterized

from hloprobe.compile.cudnn import CUDNN_WHEEL, missing_cudnn_message

_PYPROJECT = os.path.join(
  os.path.dirname(os.path.dirname(__file__)), os.pardir, "pyproject.toml"
)


class MessageTest(parameterized.TestCase):
  @parameterized.named_parameters(
    ("plugin", "cuDNN not found."),
    ("no_plugin", "cuDNN is not detected."),
  )
  def test_one_line_naming_the_wheel(self, jax_says):
    message = missing_cudnn_message(RuntimeError(jax_says))
    self.assertNotIn("\n", message)
    self.assertIn("pip install 'nvidia-cudnn-cu12==9.10.2.21'", message)
    self.assertIn(jax_says.rstrip("."), message)
    self.assertTrue(message.startswith("cuDNN attention"), message)
    self.assertIn("`make full` installs it", message)

  @parameterized.named_parameters(
    ("other_runtime_error", RuntimeError("INTERNAL: ptxas exited")),
    ("other_type", ValueError("cuDNN not found.")),
  )
  def test_other_errors_are_left_alone(self, error):
    self.assertIsNone(missing_cudnn_message(error))

  def test_the_pin_is_pyprojects(self):
    with open(_PYPROJECT, encoding="utf-8") as f:
      pins = re.findall(r'"(nvidia-cudnn-cu12==[\d.]+); sys_platform', f.read())
    self.assertEqual(pins, [CUDNN_WHEEL])

  def test_cudnn_is_an_extra_of_make_full_not_the_core(self):
    import tomllib

    with open(_PYPROJECT, "rb") as f:
      project = tomllib.load(f)["project"]
    self.assertFalse(
      [d for d in project["dependencies"] if d.startswith("nvidia-cudnn")]
    )
    extras = project["optional-dependencies"]
    self.assertEqual(
      extras["cudnn"], [f"{CUDNN_WHEEL}; sys_platform == 'linux'"]
    )
    self.assertEqual(extras["full"], ["hloprobe[cudnn,explorer,ray]"])


class StopsBeforeCompilingTest(absltest.TestCase):
  def test_a_case_jax_finds_no_cudnn_for_is_one_line(self):
    """Issue 39 item 9: without the extra `cudnn`, the sweep stops on the
    case's first trace (its cache fingerprint) with the line naming `make
    full`, instead of failing each config."""
    import numpy as np

    from hloprobe.compile import Case
    from hloprobe.engine.measure import _fingerprint
    from hloprobe.errors import ToolchainError

    def fn(x):
      raise RuntimeError("cuDNN not found.")  # what jax raises (see above)

    case = Case(
      "t_attn", "cuDNN attention", fn, lambda: (np.ones((2, 3), np.float32),)
    )
    warned = []
    with self.assertRaises(ToolchainError) as e:
      _fingerprint(case, case.full_inputs(), warned.append)
    self.assertNotIn("\n", str(e.exception))
    self.assertIn("`make full` installs it", str(e.exception))
    self.assertEqual(warned, [])


if __name__ == "__main__":
  absltest.main()
