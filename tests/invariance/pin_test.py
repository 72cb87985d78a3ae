"""invariance/pin.py and pin_file.py: the pin on a user's case file, the
sizes its `verify` command leaves out, and where its autotune file goes
(issue 38, found by a new user's check).

Expected values come from the case's construction and XLA's rules, not
from hloprobe's output:
- the user case (testutil.EXACT_MM_CASE) is exact in float32, so its CPU
  rows have the same bits at every n: one class;
- on a compile-only a100, n = 1 is a vector-matrix product, which XLA's
  DotStrengthReduction (xla/service/gpu/transforms/dot_strength_reduction.cc,
  "dot-strength-reduction"; jaxlib 0.10.2 and 0.12.0.1) rewrites as a
  multiply and a reduce: another kernel than at n = 2 and 8, so the a100
  is not invariant and the pin search runs, the pinned-gemm file among its
  candidates;
- the pinned-gemm file is XLA's AutotuneResults text (xla/autotuning.proto,
  `AutotuneResults`: `entries { key ... value { optimal_config ... } }`),
  one Triton config per gemm fusion with split-K 1 (the proto leaves a
  default 1 out).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex

import pytest
import testutil
from absl.testing import absltest
from testutil import run_hloprobe_here
from verify_findings import group

from hloprobe import api
from hloprobe.cli._main import command_flags
from hloprobe.compile import get_case, get_target
from hloprobe.invariance.answer import (
  Boundary,
  Invariance,
  SiteChange,
  SiteChanges,
  SiteMade,
)
from hloprobe.invariance.kernel_identity import RowKernel
from hloprobe.invariance.pin import (
  PinOutcome,
  _all_but_one,
  _boundary_at,
  untried_pins,
)
from hloprobe.invariance.pin_file import _file_key, pin_file_name
from hloprobe.ir import Precision
from hloprobe.records import Config
from hloprobe.sites import Fate

_NAME = re.compile(r"pin-exact_mm-a100-float32-[0-9a-f]{16}\.textproto")


@pytest.mark.compiles
class PinOnUserCaseTest(absltest.TestCase):
  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    # explain and the printed verify share warm workers (the verify's
    # baseline and pinned flag sets are explain's) and one loader worker
    # for the case file: no Python started twice for one flag set.
    cls.enterClassContext(testutil.shared_workers())
    cls.enterClassContext(testutil.shared_case_loader())

  def test_pinned_gemms_made_and_written_under_the_cache_folder(self):
    folder = self.create_tempdir().full_path
    path = os.path.join(folder, "exact_case.py")
    with open(path, "w") as f:
      f.write(testutil.EXACT_MM_CASE)
    cache = os.path.join(folder, "cache")
    with _cwd(folder):  # the case by a relative path, as a user gives it
      proc = run_hloprobe_here(
        "explain",
        "--case=exact_case.py:make_case",
        "--targets=cpu,a100",
        "--batch_sizes=1,2,8",
        "--precisions=float32",
        "--invariance=pin",
        "--only=invariance",
        "--format=json",
        "--nocache",  # its folder still holds pins/
        f"--cache_dir={cache}",
        "--jobs=1",  # one baseline worker, not two (the verify's too)
        timeout_s=300,
      )
    self.assertEqual(proc.returncode, 0, proc.stderr)
    self.assertNotIn("worker processes only", proc.stdout + proc.stderr)
    pins = json.loads(proc.stdout)["answer"]["invariance"]["pins"]
    # The gemm pin was made in the case's workers and judged.
    (pin,) = [p for p in pins if p["candidate"] == "pinned_gemms"]
    self.assertIsNotNone(pin["passed"], pin["reason"])
    # Its file: under the record cache's folder, a stable name, named
    # in the pin (its text prints it: invariance_words_test).
    files = os.listdir(os.path.join(cache, "pins"))
    self.assertLen(files, 1)
    self.assertRegex(files[0], _NAME)
    written = os.path.join(cache, "pins", files[0])
    self.assertEqual(pin["autotune_file"], written)
    with open(written) as f:
      text = f.read()
    configs = re.findall(r"optimal_config \{ backend: (\w+)", text)
    self.assertNotEmpty(configs, text)
    self.assertEqual(set(configs), {"TRITON"}, text)
    self.assertNotIn("split_k", text)
    # The printed `verify` command reads it there, from another folder:
    # its case file by the absolute path.
    words = shlex.split(pin["command"])
    self.assertEqual(words[:2], ["hloprobe", "verify"])
    self.assertIn(f"--case={path}:make_case", words)
    self.assertIn(
      f"--xla_gpu_load_autotune_results_from={written}", pin["command"]
    )
    with _cwd(self.create_tempdir().full_path):
      ran = run_hloprobe_here(
        *words[1:], "--nocache", "--jobs=1", timeout_s=300
      )
    self.assertIn(ran.returncode, (0, 1), ran.stderr)  # PASS or FAIL
    self.assertIn("on a100 under float32 (pinned_gemms)", ran.stdout)


@contextlib.contextmanager
def _cwd(folder: str):
  old = os.getcwd()
  os.chdir(folder)
  try:
    yield
  finally:
    os.chdir(old)


class FileNameTest(absltest.TestCase):
  """The pin file's name: stable for a group, another for another."""

  def _configs(self, precision: str, sizes) -> tuple[Config, ...]:
    target = get_target("a100")
    p = Precision[precision]
    return tuple(Config("seed_mlp", target, n, p) for n in sizes)

  @pytest.mark.compiles  # seed_mlp's inputs are drawn by jax.random
  def test_same_group_same_key_another_group_another(self):
    case = get_case("seed_mlp")
    full = case.full_inputs()
    key = _file_key(case, full, self._configs("float32", (1, 2, 8)))
    self.assertRegex(key, r"^[0-9a-f]{16}$")
    again = _file_key(case, full, self._configs("float32", (8, 1, 2)))
    self.assertEqual(again, key)
    self.assertNotEqual(
      _file_key(case, full, self._configs("bfloat16", (1, 2, 8))), key
    )
    self.assertNotEqual(
      _file_key(case, full, self._configs("float32", (1, 2))), key
    )

  def test_name_keeps_only_safe_characters(self):
    self.assertEqual(
      pin_file_name("m", "cfg/my gpu.json", "float32", "0" * 16),
      "pin-m-cfg_my_gpu.json-float32-0000000000000000.textproto",
    )


def _group(classes, boundaries, sizes=(1, 2, 8, 64)) -> Invariance:
  return group(classes, boundaries, sizes=sizes)


# The baseline's boundary at n = 1 (the rule above) and at n = 64.
_GEMM = SiteMade(Fate.TRITON_GEMM)


def _sites(n: int, site: int, now: SiteMade) -> SiteChanges:
  """Site `site` made `now` at n, a Triton gemm at n = 2."""
  return SiteChanges(n, 2, (SiteChange(site, now, _GEMM),))


_DSR = Boundary(1, 2, _sites(1, 0, SiteMade(Fate.MULTIPLY_REDUCE)))
_BASE = _group(
  ((2, 8), (1,), (64,)),
  (_DSR, Boundary(64, 2, _sites(64, 1, SiteMade(Fate.TRITON_GEMM, 4)))),
)


class LeftOutTest(absltest.TestCase):
  """Which swept sizes a pin's command leaves out, and the boundary that
  says why."""

  def test_only_n1_apart_is_left_out(self):
    tile = RowKernel("fusion.3", "reduction", (), "tile 8")
    under = Boundary(1, 2, SiteChanges(1, 2), (tile,))
    after = _group(((2, 8, 64), (1,)), (under,))
    self.assertTrue(_all_but_one(after))
    self.assertEqual(_boundary_at(1, after, _BASE), under)

  def test_the_baselines_boundary_where_the_pin_read_none(self):
    after = _group(((2, 8, 64), (1,)), ())
    self.assertEqual(_boundary_at(1, after, _BASE), _DSR)

  def test_unread_says_so(self):
    after = _group(((2, 8, 64), (1,)), ())
    base = _group(((2, 8, 64), (1,)), ())
    got = _boundary_at(1, after, base)
    self.assertEqual((got.n, got.explained), (1, False))
    self.assertTrue(got.unexplained.no_boundary)

  def test_more_apart_is_not_a_pin(self):
    self.assertFalse(_all_but_one(_BASE))


# The pins listed untried (plain explain, `pin.untried_pins`): each
# carries the one command that tries and verifies its group's candidates
# (issue 38: plain explain printed four untried candidates as "Do:", all
# of which fail for dense_ln_softmax on the a100). The plan is made, not
# swept; the groups are hand-made with the causes explain reads there.
_UNTRIED_SIZES = (1, 2, 8, 64)


# The a100's boundaries (`_BASE`'s) and the cpu's: site 0 in XLA:CPU's
# YNNPACK fusion at n = 1, a plain dot at n = 2.
_A100_BOUNDARIES = _BASE.boundaries
_YNN = SiteMade(Fate.DOT, emitter="__ynn_fusion")
_CPU_BOUNDARIES = (
  Boundary(1, 2, SiteChanges(1, 2, (SiteChange(0, _YNN, SiteMade(Fate.DOT)),))),
)


def _untried_group(target: str, precision: str, boundaries, invariant=False):
  return group(
    ((2, 8), (1,), (64,)),
    boundaries,
    case="dense_ln_softmax",
    target=target,
    precision=precision,
    invariant=invariant,
    sizes=_UNTRIED_SIZES,
  )


class UntriedPinsTest(absltest.TestCase):
  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.plan = api.plan_case(
      "dense_ln_softmax",
      targets="cpu,a100",
      batch_sizes=list(_UNTRIED_SIZES),
      precisions="bfloat16,float32",
    )

  def test_one_search_command_per_case_and_target(self):
    groups = [
      _untried_group("a100", "bfloat16", _A100_BOUNDARIES),
      _untried_group("a100", "float32", _A100_BOUNDARIES),
      _untried_group("cpu", "float32", _CPU_BOUNDARIES),
      _untried_group("cpu", "bfloat16", (), invariant=True),
    ]
    pins = untried_pins(self.plan, groups)
    self.assertTrue(pins)
    self.assertTrue(
      all(p.not_tried and p.outcome is PinOutcome.NOT_TRIED for p in pins)
    )
    searches = {(p.target, p.search) for p in pins}
    self.assertEqual(
      searches,
      {
        (
          "a100",
          "hloprobe explain --case=dense_ln_softmax --targets=a100 "
          "--batch_sizes=1,2,8,64 --precisions=bfloat16,float32 "
          "--only=invariance --invariance=pin",
        ),
        (
          "cpu",
          "hloprobe explain --case=dense_ln_softmax --targets=cpu "
          "--batch_sizes=1,2,8,64 --precisions=float32 --only=invariance "
          "--invariance=pin",
        ),
      },
    )

  def test_its_flags_are_explains(self):
    (pin, *_) = untried_pins(
      self.plan, [_untried_group("a100", "float32", _A100_BOUNDARIES)]
    )
    words = shlex.split(pin.search)
    self.assertEqual(words[:2], ["hloprobe", "explain"])
    owners = command_flags()
    for word in words[2:]:
      name = word.removeprefix("--").partition("=")[0]
      self.assertIn(owners.get(name, ("explain",)), [("explain",)], word)


if __name__ == "__main__":
  absltest.main()
