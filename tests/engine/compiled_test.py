"""Which autotune results file a config's compile is read against comes
from the flags the caller names, not from this process's environment
(review finding 20: a stale XLA_FLAGS of a notebook process must not
decide the sites' `selection`).

The file holds one entry, the seed's first gemm fusion keyed from the
recorded config-assigner input of tests/testdata/autotune (jaxlib
0.12.0.1's keys, the ones XLA hit there; tests/compile/
autotune_replay_test.py's sweep shows a worker started with the file
loading it). Here it is only named, not loaded by this process's XLA
(XLA reads XLA_FLAGS once, as it starts: xla/debug_options_flags.cc), so
only the words the named flags decide are checked: site 0's key is in
the file, so with the flags named it reads "autotuned on" the a100's
device; with the file only in the environment nothing reads it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from unittest import mock

import jax
import numpy as np
import pytest
import recorded
from absl.testing import absltest

from hloprobe.compile import CASES, Case, get_target
from hloprobe.compile.autotune import (
  CUBLAS_CONFIG,
)
from hloprobe.engine import compiled
from hloprobe.engine.compiled import compile_and_run_case
from hloprobe.records import Config, Precision

_A100 = "NVIDIA A100-SXM4-40GB"  # hloprobe's a100 device_description_str


@pytest.mark.compiles  # the seed compiled for the compile-only a100
class NamedFlagsTest(absltest.TestCase):
  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    jax.devices()  # XLA has read this process's flags before the patch
    cls.folder = tempfile.mkdtemp(prefix="compiled-flags-")
    flag = f"--xla_gpu_load_autotune_results_from={recorded.one_entry_autotune_file(cls.folder)}"
    case = CASES["seed_mlp"]
    full = case.make_inputs()
    config = Config("seed_mlp", get_target("a100"), 4096, Precision.bfloat16)
    cls.flag = flag
    with mock.patch.dict(os.environ, {"XLA_FLAGS": flag}):
      cls.stale = compile_and_run_case(case, full, config, False, None, "")
    cls.named = compile_and_run_case(case, full, config, False, None, flag)

  @classmethod
  def tearDownClass(cls):
    shutil.rmtree(cls.folder, ignore_errors=True)
    super().tearDownClass()

  def test_a_file_only_in_the_environment_is_not_read(self):
    r = self.stale.result
    self.assertTrue(r.ok, r.failure)
    self.assertLen(r.compilation.fates, 4)
    for f in r.compilation.fates:  # as with no results file at all
      self.assertEqual(
        f.selection, "XLA heuristic (compile-only: no autotuning)"
      )

  def test_the_named_flags_file_decides_the_words(self):
    r = self.named.result
    self.assertTrue(r.ok, r.failure)
    self.assertLen(r.compilation.fates, 4)
    self.assertEqual(
      r.compilation.fates[0].selection,
      f"autotuned on {_A100} (one.textproto: CUBLASLT_FISSION: "
      f"{CUBLAS_CONFIG})",
    )


class KeepTest(absltest.TestCase):
  def test_runs_outputs_take_no_executables_place(self):
    # A worker keeps at most _KEEP_AT_MOST executables (or GPU texts),
    # the oldest dropped, and as many runs' outputs apart: 70 configs
    # each with both leave the last 64 of each.
    at_most = compiled._KEEP_AT_MOST
    keep = {}
    for n in range(70):
      config = Config("seed_mlp", get_target("cpu"), n + 1, Precision.float32)
      compiled._keep(keep, config, f"executable {n}")
      compiled._keep(keep, (config, compiled.KEPT), f"outputs {n}")
    executables = [v for k, v in keep.items() if isinstance(k, Config)]
    outputs = [v for k, v in keep.items() if not isinstance(k, Config)]
    want = range(70 - at_most, 70)
    self.assertEqual(executables, [f"executable {n}" for n in want])
    self.assertEqual(outputs, [f"outputs {n}" for n in want])


def _vmapped_callback(x):
  # jax cannot vmap a pure_callback without a vmap_method: it raises while
  # tracing (jax 0.10.2 and 0.12.0.1), before any lowering or XLA pass.
  one = lambda row: jax.pure_callback(
    lambda r: r, jax.ShapeDtypeStruct(row.shape, row.dtype), row
  )
  return jax.vmap(one)(x)


class FailedBeforeXlaTest(absltest.TestCase):
  def test_a_program_jax_cannot_trace_fails_at_lower(self):
    # Stage "lower", the function's own error as it raised it, and no
    # rejection finding (that is for a compile XLA rejected).
    x = np.ones((2, 4), np.float32)
    case = Case(
      name="cb", description="", fn=_vmapped_callback, make_inputs=lambda: (x,)
    )
    for target in ("cpu", "a100"):
      config = Config("cb", get_target(target), 2, Precision.float32)
      failure = compile_and_run_case(case, (x,), config, True).result.failure
      self.assertEqual(failure.stage, "lower")
      self.assertTrue(
        failure.error.startswith(
          "NotImplementedError: vmap is only supported for the pure_callback"
        ),
        failure.error,
      )
      self.assertIsNone(failure.finding)


if __name__ == "__main__":
  absltest.main()
