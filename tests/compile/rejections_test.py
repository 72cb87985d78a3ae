"""compile/rejections.py: jax's own error for a primitive without a CPU
lowering, named in words. The error is jax's, raised here by lowering
(no XLA compile) cuDNN attention for the CPU: jax registers
dot_product_attention_fwd for CUDA only
(jax/_src/cudnn/fused_attention_stablehlo.py). So is a host callback
lowered for a compile-only GPU (jax asks for an attached GPU backend)."""

from __future__ import annotations

import jax
import ml_dtypes
import numpy as np
from absl.testing import absltest
from jax.experimental import io_callback

from hloprobe import compile as hcompile
from hloprobe import errors
from hloprobe.compile import lowering, rejections


def _cudnn_attention_on_cpu() -> BaseException:
  q = np.zeros((1, 4, 2, 8), ml_dtypes.bfloat16)  # no XLA op to make it
  attention = lambda q: jax.nn.dot_product_attention(
    q, q, q, implementation="cudnn"
  )
  try:
    jax.jit(attention).lower(q)
  except Exception as e:  # noqa: BLE001 (whatever jax raises is the input)
    return e
  raise AssertionError("jax lowered cuDNN attention for the CPU")


class MissingLoweringTest(absltest.TestCase):
  def test_gpu_only_primitive_named(self):
    self.assertEqual(
      rejections.missing_lowering(_cudnn_attention_on_cpu()),
      "GPU-only primitive dot_product_attention_fwd has no CPU lowering",
    )

  def test_other_primitives_and_other_errors(self):
    other = NotImplementedError(
      "MLIR translation rule for primitive 'my_prim' not found for platform cpu"
    )
    self.assertEqual(
      rejections.missing_lowering(other),
      "primitive my_prim has no CPU lowering",
    )
    self.assertIsNone(rejections.missing_lowering(ValueError("shapes")))


def _lowered_for_a100(fn) -> BaseException | None:
  x = np.ones((2, 4), np.float32)
  case = hcompile.Case(
    name="callback", description="", fn=fn, make_inputs=lambda: (x,)
  )
  try:
    lowering.lower_case(case, (x,), "float32", hcompile.get_target("a100"))
  except Exception as e:  # noqa: BLE001 (whatever jax raises is the input)
    return e
  return None


def _printed(x):
  jax.debug.print("{}", x.sum())
  return x * 2


def _called(x):
  shape = jax.ShapeDtypeStruct(x.shape, x.dtype)
  return io_callback(lambda v: np.asarray(v) * 2, shape, x) + 1


class HostCallbackTest(absltest.TestCase):
  """What jax 0.10.2 and 0.12.0.1 do: the lowering of a host callback for
  a topology's device raises, and the rule that made it is named."""

  def test_debug_print_named(self):
    error = _lowered_for_a100(_printed)
    self.assertIsNotNone(error, "jax lowered a debug print for a topology")
    named = rejections.missing_lowering(error)
    self.assertIsNotNone(named, str(error))
    self.assertTrue(named.startswith("jax.debug.print"), named)
    self.assertIn("compile-only GPU", named)

  def test_io_callback_named(self):
    error = _lowered_for_a100(_called)
    self.assertIsNotNone(error, "jax lowered an io_callback for a topology")
    named = rejections.missing_lowering(error)
    self.assertIsNotNone(named, str(error))
    self.assertTrue(named.startswith("io_callback "), named)

  def test_the_same_words_elsewhere_are_not_a_callback(self):
    raised = RuntimeError("Unknown backend: 'gpu' requested")
    self.assertIsNone(rejections.missing_lowering(raised))

  def test_the_cpu_lowers_callbacks(self):
    x = np.ones((2, 4), np.float32)
    jax.jit(_printed).lower(x)
    jax.jit(_called).lower(x)


def _raises_in_trace(x):
  raise ValueError(f"no rule for shape {x.shape}")


class TraceErrorTest(absltest.TestCase):
  """What a function raises while jax traces it comes back as a
  `TraceError` whose cause is that error; a DotAlgorithmPreset the CPU
  lacks is rejected later, while lowering (jax 0.12.0.1 and 0.10.2), so
  it is no `TraceError`: a precision fix may change it."""

  def _lowered(self, fn, precision, target="cpu"):
    x = np.ones((2, 4), np.float32)
    case = hcompile.Case(
      name="t", description="", fn=fn, make_inputs=lambda: (x,)
    )
    return lowering.lower_case(
      case, (x,), precision, hcompile.get_target(target)
    )

  def test_the_functions_error_is_the_cause(self):
    for target in ("cpu", "a100"):
      with self.assertRaises(errors.TraceError) as got:
        self._lowered(_raises_in_trace, "float32", target)
      self.assertIsInstance(got.exception.__cause__, ValueError)
      self.assertEqual(
        str(got.exception), "ValueError: no rule for shape (2, 4)"
      )

  def test_an_algorithm_the_cpu_lacks_fails_in_lowering(self):
    with self.assertRaises(Exception) as got:
      self._lowered(lambda x: x @ x.T, "F16_F16_F32")
    self.assertNotIsInstance(got.exception, errors.TraceError)
    self.assertIn("F16_F16_F32", str(got.exception))


if __name__ == "__main__":
  absltest.main()
