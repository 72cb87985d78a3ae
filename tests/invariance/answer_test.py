"""Issue 38's "what must be shown", end to end on the CPU and a compile-only
A100.

Expected values, none from hloprobe's output:
  * the CPU's classes and ULPs: the case's function jitted directly here,
    row 0 compared as numpy uint32 views, ULPs as the distance of the
    int32 views (same-signed floats are ordered as integers);
  * the A100's boundaries: read by regex from the optimized HLO that
    explain wrote (XLA's own text): split-K by s adds a dimension of size
    s after the gemm fusion's batch dimensions (as
    tests/compile/builtin_cases_test.py `_split_in_hlo` reads it); at
    n = 1 no gemm fusion (the dots strength-reduced);
  * the elementwise control: invariant by construction (numpy's float32
    bits, tests/invariance/runs_test.py).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re

import jax
import jsonschema
import numpy as np
import pytest
import testutil
import verify_findings
from absl.testing import absltest
from testutil import run_hloprobe_here

from hloprobe import engine, verify
from hloprobe.compile import CASES
from hloprobe.report import schema_document

pytestmark = [pytest.mark.compiles, pytest.mark.cpu_numerics]

_SIZES = (1, 2, 8, 64)
_GEMM_FUSION_RE = re.compile(
  r"%gemm_fusion\S* = (\w+\[[\d,]*\])\S* fusion\(.*__triton"
)


def _direct_row0(name: str, sizes) -> dict[int, np.ndarray]:
  case = CASES[name]
  full = case.full_inputs()
  fn = jax.jit(case.fn)
  return {
    n: np.asarray(fn(*case.inputs_for(full, n)))[0].ravel() for n in sizes
  }


def _classes(rows: dict[int, np.ndarray]) -> list[list[int]]:
  groups: dict[bytes, list[int]] = {}
  for n in sorted(rows):
    groups.setdefault(rows[n].view(np.uint32).tobytes(), []).append(n)
  return sorted(groups.values(), key=lambda g: (-len(g), g[0]))


def _ulps(a: np.ndarray, b: np.ndarray) -> int:
  return int(
    np.max(np.abs(a.view(np.int32).astype(np.int64) - b.view(np.int32)))
  )


_WORKERS = contextlib.ExitStack()


def setUpModule():
  # The module's in-process commands and sweeps share warm workers.
  _WORKERS.enter_context(testutil.shared_workers())


def tearDownModule():  # pytest calls it (not unittest's module cleanups)
  _WORKERS.close()


class IssueModelTest(absltest.TestCase):
  def test_explain_answers_the_bitwise_question_first(self):
    out = self.create_tempdir().full_path
    # The bitwise answer alone (--only=invariance): the same answer as
    # explain's default, which places it before its "Answer:" line
    # (tests/report/findings_test.py), without the accuracy numerics.
    proc = run_hloprobe_here(
      "explain",
      "--case=dense_ln_softmax",
      "--targets=cpu,a100",
      "--batch_sizes=1,2,8,64",
      "--precisions=float32",
      "--only=invariance",
      f"--output_dir={out}",
      timeout_s=600,
    )
    self.assertEqual(proc.returncode, 0, proc.stderr)
    lines = proc.stdout.splitlines()
    # The CPU: classes and ULPs from the direct run.
    rows = _direct_row0("dense_ln_softmax", _SIZES)
    classes = _classes(rows)
    # Split on this machine (n = 64 apart: YNNPACK's blocking); under
    # another ISA (make test-isa) the direct run decides what to expect.
    word = "is not" if len(classes) > 1 else "is"
    self.assertTrue(
      lines[0].startswith(
        f"row 0 {word} batch-invariant on cpu under float32 (bits compared): "
      ),
      lines[0],
    )
    ref = classes[0][0]
    for other in classes[1:]:
      ulps = _ulps(rows[other[0]], rows[ref])
      self.assertIn(f"differs by {ulps} ULP", lines[0])
    # The A100, second group: the boundaries read from the HLO.
    a100 = next(l for l in lines if "on a100 under float32" in l)
    self.assertTrue(a100.startswith("row 0 (every row alike) is not"), a100)
    hlo = {}
    for n in _SIZES:
      path = os.path.join(
        out, "a100", "dense_ln_softmax", f"n{n}-float32", "optimized.hlo"
      )
      with open(path) as f:
        hlo[n] = f.read()
    self.assertEqual(_GEMM_FUSION_RE.findall(hlo[1]), [])
    # No split at n = 8 (rank-2 gemm outputs); one split gemm at n = 64.
    self.assertTrue(
      all(t.count(",") == 1 for t in _GEMM_FUSION_RE.findall(hlo[8]))
    )
    split = [t for t in _GEMM_FUSION_RE.findall(hlo[64]) if t.count(",") == 2]
    self.assertLen(split, 1)
    s = int(split[0].split("[")[1].split(",")[0])
    self.assertIn(f"n = 64 differs (site 1 Triton gemm split-K {s}", a100)
    self.assertIn("n = 1 differs (sites 0-1 multiply+reduce", a100)
    self.assertIn("same per-row arithmetic for n = 2-8", a100)
    # The reductions, per n, before the pins.
    kernels = [l for l in lines if l.startswith("  dense_ln_softmax on a100")]
    self.assertNotEmpty(kernels)
    # n = 1's reductions are XLA row reductions of other kernels: the
    # sizes from 2 up are listed kernel by kernel.
    for n in _SIZES[1:]:
      self.assertIn(f"n = {n}: ", "\n".join(kernels))
    # Then the pins, listed untried: none printed as a fix (issue 38: the
    # four candidates fail here when tried), one command that tries them.
    pin = next(i for i, l in enumerate(lines) if l.startswith("Pin for "))
    self.assertLess(lines.index(kernels[0]), pin)
    self.assertEqual([l for l in lines if l.startswith("Do:")], [])
    self.assertNotIn("--fix=", proc.stdout)
    self.assertIn(
      "Pin for dense_ln_softmax on a100 under float32: not searched",
      proc.stdout,
    )
    self.assertIn(
      "hloprobe explain --case=dense_ln_softmax --targets=a100 "
      "--batch_sizes=1,2,8,64 --precisions=float32 --only=invariance "
      "--invariance=pin",
      proc.stdout,
    )
    # results.json carries it, and validates.
    with open(os.path.join(out, "results.json")) as f:
      doc = json.load(f)
    jsonschema.validate(doc, schema_document())
    groups = {g["target"]: g for g in doc["invariance"]["groups"]}
    self.assertIs(groups["cpu"]["invariant"], False)
    self.assertEqual(
      sorted(groups["cpu"]["rows"][0]["classes"]), sorted(classes)
    )
    self.assertEqual(groups["a100"]["basis"], "kernel identity")


class ControlTest(absltest.TestCase):
  def test_elementwise_control_passes_on_cpu_and_a100(self):
    proc = run_hloprobe_here(
      "verify",
      "--case=elementwise_only",
      "--targets=cpu,a100",
      "--batch_sizes=1,2,64",
      "--precisions=float32",
      "--fix=F32_F32_F32",
      "--require=invariant",
      timeout_s=600,
    )
    self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
    self.assertIn("invariant      PASS", proc.stdout)
    evidence = proc.stdout.split("\ninvariant:\n")[1].split("\n\n")[0]
    self.assertIn("is batch-invariant on cpu", evidence)
    self.assertIn("is batch-invariant on a100", evidence)

  def test_baseline_fails_naming_the_boundary(self):
    spec = engine.SweepSpec(
      ("tm_mm",), (1, 2, 8), ("float32",), ("cpu",), explain_passes=True
    )
    results = engine.run_sweep(spec)
    rows = _direct_row0("tm_mm", (1, 2, 8))
    want = _classes(rows)
    (req,) = verify.judge(results, ["invariant"])
    self.assertEqual(req.passed, len(want) == 1)
    if len(want) > 1:
      (bad, *_) = req.evidence
      self.assertEqual(sorted(map(list, bad.rows[0].classes)), sorted(want))
      self.assertTrue(bad.boundaries)


class LeversTest(absltest.TestCase):
  """What the boundaries name, from hand-built records (no compile): the
  fields each lever reads, and the pin's candidates they give."""

  def _group(self, target, *boundaries):
    return verify_findings.group(
      (), boundaries, target=target, basis="run", invariant=None, sizes=(1, 2)
    )

  def test_each_lever_from_its_fields(self):
    from hloprobe.invariance.answer import (
      Boundary,
      Lever,
      SiteChange,
      SiteChanges,
      SiteMade,
      Unexplained,
      levers,
    )
    from hloprobe.invariance.kernel_identity import RowKernel
    from hloprobe.invariance.pin import candidates_for
    from hloprobe.sites import Fate

    gemm = SiteMade(Fate.TRITON_GEMM, algorithm="TF32_TF32_F32")
    ynn = Boundary(
      64,
      8,
      SiteChanges(64, 8),
      unexplained=Unexplained((("__ynn_fusion", (0,)),)),
    )
    cpu = self._group("cpu", ynn)
    self.assertEqual(levers(cpu), {Lever.YNN})
    self.assertEqual([c.name for c in candidates_for(cpu)], ["no_ynn_fusion"])
    dsr = SiteMade(Fate.MULTIPLY_REDUCE, pass_name="dot-strength-reduction")
    split = dataclasses.replace(gemm, split_k=2)
    sites = SiteChanges(
      1, 2, (SiteChange(0, dsr, gemm), SiteChange(1, split, gemm))
    )
    a100 = self._group("a100", Boundary(1, 2, sites))
    self.assertEqual(levers(a100), {Lever.STRENGTH_REDUCTION, Lever.SPLIT_K})
    # The multiply+reduce named as what the compared config made.
    back = SiteChanges(
      2, 1, (SiteChange(0, gemm, SiteMade(Fate.MULTIPLY_REDUCE)),)
    )
    self.assertEqual(
      levers(self._group("a100", Boundary(2, 1, back))),
      {Lever.STRENGTH_REDUCTION},
    )
    # An algorithm alone: nothing to turn off.
    bf16 = dataclasses.replace(gemm, algorithm="BF16_BF16_F32")
    alone = SiteChanges(2, 1, (SiteChange(0, bf16, gemm),))
    self.assertEqual(levers(self._group("a100", Boundary(2, 1, alone))), set())
    softmax = RowKernel("triton_softmax.4", "reduction", (), "s")
    by_kernel = Boundary(8, 2, SiteChanges(8, 2), (softmax,))
    self.assertEqual(
      levers(self._group("a100", by_kernel)), {Lever.TRITON_SOFTMAX}
    )
    d = verify_findings.kernel_change("fusion.1", "tile", "a", "b")
    self.assertEqual(
      levers(self._group("a100", Boundary(8, 2, SiteChanges(8, 2), (), (d,)))),
      set(),
    )
    self.assertEqual(
      [c.name for c in candidates_for(a100)],
      ["no_dot_strength_reduction", "no_split_k", "pin_all"],
    )


if __name__ == "__main__":
  absltest.main()


# Row 0's bits per n under XLA_FLAGS, by plain jax in a fresh process (no
# hloprobe code runs the model), and the anchor row's at the offsets the
# README names (first, middle, last; the anchor is the last input row, the
# others the first n - 1 of a seed-38 permutation of the rest, as
# `runs.anchor_inputs` documents): one
# line "row0-n hex" per size and "anchor-n-offset hex" per offset. Which
# a pin must make one class (on an AMD EPYC, jaxlib 0.12.0.1, the flag
# makes row 0 one class and not the anchor, 2026-12-06).
_DIRECT = """
import sys, numpy as np, jax
sys.path.insert(0, {root!r})
from hloprobe.compile import CASES
case = CASES["dense_ln_softmax"]
full = case.full_inputs()
x = full[0]  # the one batched argument (in_axes 0, then None)
f = jax.jit(case.fn)
rest = np.random.default_rng(38).permutation(len(x) - 1)
for n in {sizes!r}:
  print(f"row0-{{n}}", np.asarray(f(*case.inputs_for(full, n)))[0].tobytes().hex())
  for o in sorted({{0, n // 2, n - 1}}):
    index = np.array(list(rest[:o]) + [len(x) - 1] + list(rest[o:n - 1]))
    out = np.asarray(f(x[index], *full[1:]))
    print(f"anchor-{{n}}-{{o}}", out[o].tobytes().hex())
"""


class CpuPinTest(absltest.TestCase):
  def test_pin_found_and_verified(self):
    import subprocess
    import sys

    import testutil

    flag = "--xla_cpu_experimental_ynn_fusion_type="
    sizes = (1, 8, 64)
    proc = subprocess.run(
      [sys.executable, "-c", _DIRECT.format(root=testutil.ROOT, sizes=sizes)],
      capture_output=True,
      text=True,
      env=dict(os.environ, XLA_FLAGS=flag, JAX_PLATFORMS="cpu"),
      timeout=300,
    )
    self.assertEqual(proc.returncode, 0, proc.stderr)
    bits = dict(line.split() for line in proc.stdout.splitlines())
    pinned = all(
      len({v for k, v in bits.items() if k.startswith(kind)}) == 1
      for kind in ("row0-", "anchor-")
    )
    out = run_hloprobe_here(
      "explain",
      "--case=dense_ln_softmax",
      "--targets=cpu",
      "--batch_sizes=1,8,64",
      "--precisions=float32",
      "--only=invariance",
      "--invariance=pin",
      timeout_s=600,
    )
    self.assertEqual(out.returncode, 0, out.stderr)
    do = [l for l in out.stdout.splitlines() if l.startswith("Do: ")][0]
    if pinned:
      self.assertTrue(
        do.startswith(
          "Do: pin dense_ln_softmax on cpu under float32 with "
          f"XLA_FLAGS='{flag}'"
        ),
        do,
      )
      self.assertIn("--require=invariant", do)
    else:
      self.assertTrue(do.startswith("Do: no setting tried pins"), do)
