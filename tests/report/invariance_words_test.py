"""The answer in words and JSON, from hand-built records (no compile).

Expected strings are written here from the records' fields, as the issue
words the answer ("row 0 is not batch-invariant on a100 under float32:
identical for n = 2-8; n = 1 differs (...); n = 64 differs (...)").
"""

from __future__ import annotations

import dataclasses
import os

import jsonschema
import recorded
from absl.testing import absltest, parameterized
from verify_findings import group, kernel_change

from hloprobe.invariance import Invariance, invariance_of
from hloprobe.invariance.answer import (
  Boundary,
  Gap,
  SiteChange,
  SiteChanges,
  SiteMade,
  Unexplained,
  Why,
)
from hloprobe.invariance.kernel_identity import (
  KernelUnread,
  RowKernel,
  Unread,
)
from hloprobe.invariance.pin import (
  Pin,
  PinCandidate,
  PinOutcome,
  candidates_for,
)
from hloprobe.invariance.rows import ROW0, RowClasses
from hloprobe.kernels.records import RowCountRule, RowCountWhy
from hloprobe.records import Failure
from hloprobe.report import schema_document
from hloprobe.report.invariance_words import (
  answer_lines,
  apart_words,
  candidate_words,
  first_lines,
  folded_lines,
  invariance_json,
  kernel_lines,
  pin_cost,
  pin_lines,
  pin_reason,
)
from hloprobe.sites import Fate

_SIZES = (1, 2, 8, 64)
# A cuBLAS gemm, its kernel picked at run time (the fates' reading).
_CUBLAS_KERNEL = RowKernel(
  "cublas", "cuBLAS", (0,), "s", KernelUnread(Unread.LIBRARY)
)
_GEMM = SiteMade(Fate.TRITON_GEMM, algorithm="TF32_TF32_F32")
_SPLIT = dataclasses.replace(_GEMM, split_k=4)
_DSR = SiteMade(Fate.MULTIPLY_REDUCE, pass_name="dot-strength-reduction")
# The words of `_changed(1, 2, (0, 1), _DSR, _GEMM)`.
_DSR_WORDS = (
  "sites 0-1 multiply+reduce after dot strength reduction (Triton gemm at "
  "n = 2)"
)


def _changed(n, against, sites, now, was) -> SiteChanges:
  return SiteChanges(n, against, tuple(SiteChange(i, now, was) for i in sites))


def _changed_at(n: int) -> SiteChanges:
  """A pin's change at n: site 1 one K split where it had 4 (words:
  f"site 1 Triton gemm (split-K 4 at n = {n})")."""
  return _changed(n, n, (1,), _GEMM, _SPLIT)


def _unexplained(n: int, against: int, lib: str) -> Boundary:
  """A CPU boundary no fate explains: site 0 runs in library `lib`."""
  return Boundary(
    n, against, SiteChanges(n, against), unexplained=Unexplained(((lib, (0,)),))
  )


def _lib(lib: str) -> str:
  """`_unexplained`'s words."""
  return (
    f"no site changed fate; site 0 run in {lib}, a library kernel chosen by "
    "the whole shape (its order is not read)"
  )


# What a `kernel_change`'s kernel computes, in words.
_REDUCE = "(reduction reduce_sum at no source line)"


def _kernels(n: int, against: int, *names: str) -> Boundary:
  """A boundary of other kernels only: each of `names` a reduction whose
  tile is a at `against`, b at n (the kernels stage's differences)."""
  return Boundary(
    n,
    against,
    SiteChanges(n, against),
    differences=tuple(kernel_change(k, "tile", "a", "b") for k in names),
  )


def _pin(c: PinCandidate, passed, outcome, command: str, **fields) -> Pin:
  """A pin of m on a100 under float32 (the baseline)."""
  return Pin(
    "m", "a100", "float32", "baseline", c, passed, outcome, command, **fields
  )


def _gpu() -> Invariance:
  classes = ((2, 8), (1,), (64,))
  softmax = RowKernel("triton_softmax.1", "reduction", (), "s")
  return group(
    classes,
    (
      Boundary(1, 2, _changed(1, 2, (0, 1), _DSR, _GEMM)),
      Boundary(
        64,
        2,
        _changed(64, 2, (1,), dataclasses.replace(_GEMM, split_k=2), _GEMM),
      ),
    ),
    kernels={n: (softmax,) for n in _SIZES},
  )


def _unknown(why: Why, sizes=_SIZES) -> Invariance:
  """m on t4 under float32, unknown: `why`."""
  return group(
    (), target="t4", basis="unknown", invariant=None, why=why, sizes=sizes
  )


class WordsTest(absltest.TestCase):
  def test_gpu_answer_first_line(self):
    (line,) = answer_lines([_gpu()])
    self.assertEqual(
      line,
      "row 0 (every row alike) is not batch-invariant on a100 under float32 "
      "(by kernel identity): same per-row arithmetic for n = 2-8; n = 1 "
      "differs (sites 0-1 multiply+reduce after dot strength reduction "
      "(Triton gemm at n = 2)); n = 64 differs (site 1 Triton gemm split-K 2 "
      "(split-K 1 at n = 2))",
    )

  def test_cpu_answer_with_ulps_and_invariant_anchor(self):
    a = group(
      rows=(
        RowClasses(ROW0, ((2, 8), (1,), (64,)), (0, 31, 9)),
        RowClasses("anchor row", (_SIZES,), (0,)),
      ),
      boundaries=(_unexplained(1, 2, "lib1"), _unexplained(64, 2, "lib64")),
      target="cpu",
      basis="run",
    )
    row0, anchor = answer_lines([a])
    self.assertEqual(
      row0,
      "row 0 is not batch-invariant on cpu under float32 (bits compared): "
      f"identical for n = 2-8; n = 1 differs by 31 ULP ({_lib('lib1')}); "
      f"n = 64 differs by 9 ULP ({_lib('lib64')})",
    )
    self.assertTrue(anchor.startswith("the anchor row (at the first, middle"))
    self.assertIn("is batch-invariant on cpu", anchor)

  def test_unknown_says_why(self):
    a = _unknown(Why(Gap.KERNEL, kernel=_CUBLAS_KERNEL))
    self.assertEqual(
      answer_lines([a]),
      [
        "whether row 0 is batch-invariant on t4 under float32 is unknown: "
        "chosen by the library's per-shape heuristic at run time: unknown "
        "without a device"
      ],
    )

  def test_each_gap_has_words(self):
    failed = Failure("compile", "XlaRuntimeError: x")
    cases = [
      (Why(Gap.NONE_RAN), "no batched output leaf"),
      (
        Why(Gap.NONE_RAN, missing=(2, failed)),
        "no config ran (n = 2: failed at compile: XlaRuntimeError: x)",
      ),
      (Why(Gap.SOME_RAN, (1,)), "only n = 1 ran"),
      (
        Why(Gap.SOME_RAN, (1, 2, 8), (64, None)),
        "only n = 1-8 ran; not run: 64: not run",
      ),
      (Why(Gap.ONE_SIZE), "one size compiled"),
      (
        Why(Gap.UNBATCHED, shapes=((), (2, 3))),
        "no output leaf carries the batch (each has the same shape, [], "
        "[2,3], at every n: reduced over the batch, e.g. a mean): it is not "
        "a per-row output, and its bits may change with n by design; no "
        "kernel is blamed",
      ),
      (
        Why(Gap.KERNEL, kernel=_CUBLAS_KERNEL),
        "chosen by the library's per-shape heuristic at run time: unknown "
        "without a device",
      ),
      (Why(Gap.ROWS_FAILED, message="E: y"), "E: y"),
    ]
    self.assertEqual({w.gap for w, _ in cases}, set(Gap))
    for why, words in cases:
      a = _unknown(why)
      self.assertEqual(
        answer_lines([a]),
        [
          f"whether row 0 is batch-invariant on t4 under float32 is unknown: {words}"
        ],
      )
      self.assertEqual(invariance_json([a], ())["groups"][0]["why"], words)

  def test_pin_lines_passing_first(self):
    c = PinCandidate("no_split_k", ("--xla_gpu_experimental_force_split_k=1",))
    bad = PinCandidate("float32", precision="float32")
    pins = (
      _pin(bad, False, PinOutcome.STILL_SPLIT, "cmd0", after=_gpu()),
      _pin(
        c,
        True,
        PinOutcome.ONE_CLASS,
        "cmd1",
        changed=(_changed_at(64),),
        row0_abs=(3e-7, 1.5e-7),
      ),
    )
    lines = pin_lines(pins)
    self.assertEqual(
      lines[0],
      "Do: pin m on a100 under float32 with "
      "XLA_FLAGS='--xla_gpu_experimental_force_split_k=1' (in JAX: "
      "jax.jit(f).lower(*args).compile(compiler_options="
      "{'xla_gpu_experimental_force_split_k': '1'})) (every Triton gemm "
      "in one K split; cost: site 1 Triton gemm (split-K 4 at n = 64) "
      "(n = 64); row 0 |err| vs f64 3.00e-07 -> 1.50e-07): cmd1",
    )
    # _gpu()'s classes, in its order.
    self.assertEqual(
      lines[1:], ["  fails: float32: still split: 2, 8 | 1 | 64"]
    )

  def test_reasons_and_costs_of_each_outcome(self):
    c = PinCandidate("no_split_k", ("--x=1",))
    O = PinOutcome
    one = dataclasses.replace(_gpu(), invariant=True, sizes=(2, 8))
    one_size = Why(Gap.ONE_SIZE)
    unknown = dataclasses.replace(_gpu(), invariant=None, why=one_size)
    cases = [
      (
        _pin(c, None, O.NOT_TRIED, "v"),
        "not tried (explain --invariance=pin tries it)",
        "not known untried",
      ),
      (
        _pin(c, None, O.NOT_MADE, "", why="CaseError: x"),
        "not made: CaseError: x",
        "",
      ),
      (_pin(c, None, O.NOT_SWEPT, "v", why="E: y"), "not swept: E: y", ""),
      (
        _pin(c, None, O.NOT_JUDGED, "v"),
        "not judged: no config of it came back",
        "no contraction site changed fate",
      ),
      (
        _pin(c, None, O.UNKNOWN, "v", after=unknown),
        "unknown: one size compiled",
        "no contraction site changed fate",
      ),
      (
        _pin(c, True, O.ONE_CLASS, "v", after=one),
        "one class for n = 2, 8",
        "no contraction site changed fate",
      ),
      (
        _pin(c, True, O.ONE_CLASS_BUT_N1, "v", after=_gpu(), sizes=(2, 8)),
        "one class for n = 2, 8; n = 1 stays apart",
        "no contraction site changed fate",
      ),
      (
        _pin(
          c,
          False,
          O.STILL_SPLIT,
          "v",
          after=_gpu(),
          changed=(
            SiteChanges(1, 1),
            _changed_at(2),
            _changed(64, 64, (0, 1), _DSR, _GEMM),
          ),
        ),
        "still split: 2, 8 | 1 | 64",
        "site 1 Triton gemm (split-K 4 at n = 2) (n = 2); sites 0-1 "
        "multiply+reduce after dot strength reduction (Triton gemm at n = "
        "64) (n = 64)",
      ),
    ]
    for pin, reason, cost in cases:
      with self.subTest(pin.outcome.name):
        self.assertEqual(pin_reason(pin), reason)
        self.assertEqual(pin_cost(pin), cost)

  def test_every_candidate_has_words(self):
    # A boundary naming every lever: YNNPACK, strength reduction, split-K
    # and a Triton softmax fusion.
    cause = Boundary(
      1,
      2,
      _changed(1, 2, (0,), _DSR, _SPLIT),
      (RowKernel("triton_softmax.4", "reduction", (), "s"),),
      unexplained=Unexplained((("__ynn_fusion", (1,)),)),
    )
    for target, precision in (("cpu", "float32"), ("a100", "bfloat16")):
      a = dataclasses.replace(
        _gpu(), target=target, precision=precision, boundaries=(cause,)
      )
      for c in candidates_for(a, "/f.textproto"):
        with self.subTest(f"{target} {c.name}"):
          self.assertNotEqual(candidate_words(c), c.name)

  def test_union_words_are_its_parts(self):
    c = PinCandidate(
      "pin_all", ("--a", "--b"), parts=("no_split_k", "no_triton_softmax")
    )
    self.assertEqual(
      candidate_words(c),
      "every Triton gemm in one K split and layernorm and softmax as XLA "
      "row reductions, not Triton fusions",
    )

  def test_a_pin_for_n_above_1_says_what_its_command_leaves_out(self):
    # issue 38: the printed command narrows --batch_sizes to 2,8,64; n = 1
    # stays apart (a vector-matrix product there: XLA's
    # DotStrengthReduction, xla/service/gpu/transforms/
    # dot_strength_reduction.cc, makes it multiply+reduce), so the words
    # say so and why.
    dsr = Boundary(1, 2, _changed(1, 2, (0, 1), _DSR, _GEMM))
    c = PinCandidate(
      "pinned_gemms",
      ("--xla_gpu_load_autotune_results_from=/c/pins/p.textproto",),
      file="/c/pins/p.textproto",
    )
    other = PinCandidate("no_split_k", ("--x=1",))
    pins = [
      _pin(
        p,
        True,
        PinOutcome.ONE_CLASS_BUT_N1,
        f"cmd{i}",
        changed=(_changed_at(1),),
        after=_gpu(),
        left_out=(dsr,),
        sizes=(2, 8, 64),
      )
      for i, p in enumerate((c, other))
    ]
    lines = pin_lines(pins)
    self.assertTrue(lines[0].startswith("Do: pin m on a100"), lines[0])
    apart = (
      "the command leaves out n = 1, which stays apart under this pin (at "
      f"n = 1: {_DSR_WORDS}); with n = 1 it FAILs"
    )
    self.assertEqual(
      lines[1:],
      [
        f"  ({apart})",
        "  passes: no_split_k: one class for n = 2, 8, 64; n = 1 stays apart "
        f"({apart})",
        "  pinned_gemms's autotune file (its command reads it; kept): "
        "/c/pins/p.textproto",
      ],
    )
    (_, line) = folded_lines([_gpu()], pins[:1])
    self.assertIn(
      "pinned by XLA_FLAGS='--xla_gpu_load_autotune_results_from="
      f"/c/pins/p.textproto' ({apart}; site 1 Triton gemm (split-K 4 at n = "
      "1) (n = 1); its `verify`: --verbose)",
      line,
    )
    pin = invariance_json([_gpu()], pins[:1])["pins"][0]
    self.assertEqual(pin["autotune_file"], "/c/pins/p.textproto")
    self.assertEqual(
      pin["left_out"],
      [
        {
          "n": 1,
          "against": 2,
          "causes": [_DSR_WORDS],
          "unexplained": None,
        }
      ],
    )

  def test_left_out_kernels_named_in_full_counted_when_folded(self):
    # Under a pin that keeps every site's fate, n = 1 may differ in other
    # kernels only (named 0): each is named in the pin's lines, counted
    # in the folded one.
    b = _kernels(1, 2, "fusion.1", "fusion.2")
    c = PinCandidate("no_split_k", ("--x=1",))
    pin = _pin(
      c,
      True,
      PinOutcome.ONE_CLASS_BUT_N1,
      "cmd",
      changed=(_changed_at(1),),
      after=_gpu(),
      left_out=(b,),
      sizes=(2, 8, 64),
    )
    self.assertEqual(
      pin_lines([pin])[1],
      "  (the command leaves out n = 1, which stays apart under this pin "
      f"(at n = 1: fusion.1 {_REDUCE}: tile a -> b; fusion.2 {_REDUCE}: tile "
      "a -> b); with n = 1 it FAILs)",
    )
    (_, line) = folded_lines([_gpu()], [pin])
    self.assertIn(
      "(the command leaves out n = 1, which stays apart under this pin (at "
      "n = 1: 2 other kernels differ (--verbose)); with n = 1 it FAILs; "
      "site 1 Triton gemm (split-K 4 at n = 1) (n = 1); its `verify`: "
      "--verbose)",
      line,
    )

  def test_untried_pins_are_not_advice(self):
    # Issue 38's model: plain explain lists four candidates for the a100,
    # each of which fails when tried; none is printed as a fix.
    names = ("no_dot_strength_reduction", "no_split_k", "pin_all")
    pins = [
      Pin(
        "m",
        target,
        "float32",
        "baseline",
        PinCandidate(name, ("--x=1",)),
        None,
        PinOutcome.NOT_TRIED,
        f"hloprobe verify --fix={name}",
        search=f"hloprobe explain --targets={target} --invariance=pin",
      )
      for target in ("cpu", "a100")
      for name in names
    ]
    self.assertEqual(
      pin_lines(pins),
      [
        f"Pin for m on {target} under float32: not searched (no setting was "
        "tried, so none is known to pin it); to try each candidate and "
        f"verify it: hloprobe explain --targets={target} --invariance=pin"
        for target in ("cpu", "a100")
      ],
    )

  def test_apart_words(self):
    gpu = _gpu()
    self.assertEqual(
      apart_words([gpu]), "not batch-invariant on a100 under float32"
    )
    cpu = dataclasses.replace(gpu, target="cpu")
    bf16 = dataclasses.replace(gpu, precision="bfloat16")
    self.assertEqual(
      apart_words([cpu, gpu]),
      "not batch-invariant on cpu and a100 under float32",
    )
    self.assertEqual(
      apart_words([cpu, gpu, bf16]),
      "not batch-invariant on cpu under float32; on a100 under float32 and "
      "bfloat16",
    )
    same = dataclasses.replace(gpu, invariant=True)
    unknown = dataclasses.replace(gpu, invariant=None)
    self.assertEqual(apart_words([same, unknown]), "")
    self.assertEqual(apart_words([]), "")

  def test_first_lines_empty_when_not_asked(self):
    self.assertEqual(first_lines(()), [])

  def test_json_validates_in_results_schema(self):
    c = PinCandidate("no_split_k", ("--x=1",))
    pin = _pin(c, None, PinOutcome.NOT_TRIED, "cmd")
    doc = {
      "schema": "hloprobe.results",
      "schema_version": 3,
      "created": "2026-12-05T09:00:00",
      "jax": "0.12.0",
      "jaxlib": "0.12.0.1",
      "host": None,
      "configs": [],
      "invariance": invariance_json([_gpu()], [pin]),
    }
    jsonschema.validate(doc, schema_document())
    group = doc["invariance"]["groups"][0]
    self.assertIs(group["invariant"], False)
    self.assertEqual(group["rows"][0]["classes"], [[2, 8], [1], [64]])
    doc["invariance"]["groups"][0]["basis"] = "guess"
    with self.assertRaises(jsonschema.ValidationError):
      jsonschema.validate(doc, schema_document())


def _a100(precision: str) -> Invariance:
  """The user model's a100 group (issue 39): n = 2 differs from n = 1 by
  the sites' fate and three other kernels' arithmetic."""
  return group(
    ((1,), (2,)),
    (
      dataclasses.replace(
        _kernels(2, 1, "fusion.1", "fusion.2", "fusion.3"),
        sites=_changed(2, 1, (0, 1), _GEMM, SiteMade(Fate.MULTIPLY_REDUCE)),
      ),
    ),
    case="my_model",
    precision=precision,
  )


# The command that tries a (case, target)'s pins (`pin.search_command`).
_SEARCH = "hloprobe explain --case=my_model --targets=a100 --invariance=pin"


def _untried(precision: str, name: str) -> Pin:
  c = PinCandidate(name, precision="float32" if name == "float32" else None)
  return Pin(
    "my_model",
    "a100",
    precision,
    "baseline",
    c,
    None,
    PinOutcome.NOT_TRIED,
    "cmd",
    search=_SEARCH,
  )


class FoldedTest(absltest.TestCase):
  """explain's one screen with a finding: the bitwise answer one line
  per cause (issue 39's 40 lines with issue 38's answer on)."""

  _PRECISIONS = ("bfloat16", "tensorfloat32", "float32")

  def test_precisions_of_one_cause_are_one_line(self):
    groups = [_a100(p) for p in self._PRECISIONS]
    pins = [
      _untried(p, name)
      for p in self._PRECISIONS
      for name in ("float32", "no_dot_strength_reduction")
      if not (p == "float32" and name == "float32")
    ]
    self.assertEqual(
      first_lines(groups, pins, folded=True),
      [
        "Batch invariance, by cause (each precision and kernel: --verbose):",
        "  my_model on a100 under bfloat16, tensorfloat32 and float32: not "
        "batch-invariant (by kernel identity): every row: same per-row "
        "arithmetic for n = 1, n = 2 differs; at n = 2: sites 0-1 Triton "
        "gemm (multiply+reduce at n = 1); 3 other kernels differ "
        "(--verbose); pin not searched (no "
        "setting was tried, so none is known to pin it); to try each "
        f"candidate and verify it: {_SEARCH}",
      ],
    )
    # Unfolded (--verbose): a line per precision; no untried candidate
    # is printed as a fix, the search command once.
    lines = first_lines(groups, pins)
    self.assertLen([l for l in lines if l.startswith("row 0")], 3)
    self.assertNotIn("  no_dot_strength_reduction: cmd", lines)
    self.assertEqual([l for l in lines if l.startswith("Do:")], [])
    self.assertEqual(sum(_SEARCH in l for l in lines), 1)

  def test_other_classes_are_another_line(self):
    other = dataclasses.replace(
      _a100("float32"), rows=(RowClasses(ROW0, ((1, 2),)),), boundaries=()
    )
    other = dataclasses.replace(other, invariant=True)
    lines = folded_lines([_a100("bfloat16"), other])
    self.assertLen(lines, 3)
    self.assertEqual(
      lines[2],
      "  my_model on a100 under float32: batch-invariant (by kernel "
      "identity): every row: same per-row arithmetic for n = 1-2",
    )

  def test_run_rows_ulps_anchor_and_passed_pin(self):
    a = group(
      rows=(
        RowClasses(ROW0, ((2, 8), (1,)), (0, 31)),
        RowClasses("anchor row", ((2, 8), (1,)), (0, 4)),
      ),
      boundaries=(_unexplained(1, 2, "lib1"),),
      target="cpu",
      basis="run",
    )
    c = PinCandidate("no_ynn_fusion", ("--x=",))
    pin = Pin(
      "m",
      "cpu",
      "float32",
      "baseline",
      c,
      True,
      PinOutcome.ONE_CLASS,
      "v",
      changed=(_changed_at(1),),
    )
    (_, line) = folded_lines([a], [pin])
    self.assertEqual(
      line,
      "  m on cpu under float32: not batch-invariant (bits compared): row 0: "
      "identical for n = 2-8, n = 1 differs by 31 ULP; the anchor row: "
      f"identical for n = 2-8, n = 1 differs by 4 ULP; at n = 1: "
      f"{_lib('lib1')}; pinned by XLA_FLAGS='--x=' (site 1 Triton gemm "
      "(split-K 4 at n = 1) (n = 1); its `verify`: --verbose)",
    )

  def test_a_pin_that_passed_under_one_precision_only_splits_the_line(self):
    c = PinCandidate("no_dot_strength_reduction", ("--x=",))
    pins = [
      Pin("my_model", "a100", p, "baseline", c, ok, o, "v")
      for p, ok, o in (
        ("bfloat16", True, PinOutcome.ONE_CLASS),
        ("float32", False, PinOutcome.STILL_SPLIT),
      )
    ]
    lines = folded_lines([_a100("bfloat16"), _a100("float32")], pins)
    self.assertLen(lines, 3)
    self.assertIn("under bfloat16: not", lines[1])
    self.assertIn("pinned by XLA_FLAGS='--x='", lines[1])
    self.assertIn("under float32: not", lines[2])
    self.assertIn("no setting tried pins it (1 tried: --verbose)", lines[2])

  def test_anchor_not_run_and_unknown_say_why(self):
    ran = group(
      rows=(RowClasses(ROW0, ((1, 2),), (0,)),),
      target="cpu",
      basis="run",
      invariant=True,
      why=Why(Gap.ROWS_FAILED, message="workers only"),
    )
    unknown = _unknown(Why(Gap.ONE_SIZE), sizes=(1, 2))
    self.assertEqual(
      folded_lines([ran, unknown])[1:],
      [
        "  m on cpu under float32: batch-invariant (bits compared): row 0: "
        "identical for n = 1-2; the anchor row was not run: workers only",
        "  m on t4 under float32: unknown (one size compiled)",
      ],
    )


_DATA = os.path.join(os.path.dirname(__file__), "..", "testdata", "kernels")


def _ln_model(release: str) -> Invariance:
  """Issue 38's model on a100, float32, n = 1, 2, 8, 64, from its
  recorded compiles (tests/testdata/kernels/record_fixtures.py), every
  kernel read by the kernels stage (no fates: the gemms are listed too)."""
  results, read = recorded.kernel_fixtures(
    release, "ln_model_a100_n", _SIZES, case="ln"
  )
  (a,) = invariance_of(results, reader=read)
  return a


class KernelLinesTest(parameterized.TestCase):
  """n = 1's reductions kernel by kernel beside the others' (issue 38
  item 2). Read off the fixtures by hand (both jaxlibs): the layernorm
  (record_fixtures.py:49-52) is one Triton block-level fusion at n = 2
  (`fusion.13`, reduce dims={1} of [N,512] twice: mean and variance) and
  two XLA row reductions at n = 1 (`input_reduce_fusion.1`, the mean, and
  `input_reduce_fusion`, the variance, each reduce dims={0} of [512]);
  the softmax (line 53) is `triton_softmax.2` at n = 1 (reduce dims={0}
  of [1000]) and `triton_softmax.4` at n = 2, 8, 64."""

  @parameterized.parameters("0.12.0.1", "0.10.2")
  def test_n1_reductions_beside_their_counterparts(self, release):
    lines = kernel_lines([_ln_model(release)])
    layernorm = [x for x in lines if "fusion.13" in x]
    self.assertLen(layernorm, 1)
    (line,) = layernorm
    self.assertIn(", reduction at record_fixtures.py:48-52: n = 1: ", line)
    n1 = line.split("; n = 2: ")[0]
    self.assertIn("input_reduce_fusion.1: XLA reduction emitter", n1)
    self.assertIn(" + input_reduce_fusion: XLA reduction emitter", n1)
    self.assertEqual(n1.count("reduce dims={0} of [512]"), 2)
    self.assertIn("n = 8: fusion.14: Triton", line)
    softmax = [x for x in lines if "triton_softmax.4" in x]
    self.assertLen(softmax, 1)
    self.assertIn(
      "reduction at record_fixtures.py:53: n = 1: triton_softmax.2: ",
      softmax[0],
    )
    # Each n = 1 reduction is listed once, under one counterpart.
    text = "\n".join(lines)
    for name in ("input_reduce_fusion.1:", "triton_softmax.2:"):
      self.assertEqual(text.count(name), 1, name)

  @parameterized.parameters("0.12.0.1", "0.10.2")
  def test_dense_ln_softmax_n1_whole_row_fusion_is_listed(self, release):
    # Read off the fixtures by hand (record_dense_ln.py, both jaxlibs):
    # at n = 1 the ENTRY holds one fusion, `triton_softmax.2` (kCustom,
    # "__triton" block_level_fusion_config num_warps 8, output tile [32])
    # with six reduces: the dots strength-reduced (dims={0} of [64,256]
    # and of [256,32]), the layernorm's mean and variance (dims={0} of
    # [256]), the softmax's max and sum (dims={0} of [32]). At n = 2 the
    # layernorm is `fusion.15` (num_warps 2) and the softmax
    # `triton_softmax.4` (num_warps 1); at n = 8 and 64 `fusion.13` and
    # `triton_softmax.4`. The case's layernorm is at
    # invariance_cases.py:182-184, its softmax and second dot at 185.
    results, read = recorded.kernel_fixtures(
      release, "dense_ln_a100_n", _SIZES, case="dense_ln_softmax"
    )
    (a,) = invariance_of(results, reader=read)
    lines = kernel_lines([a])
    (n1,) = [x for x in lines if "n = 1: triton_softmax.2: " in x]
    self.assertIn("reduction at invariance_cases.py:181-185: n = 1: ", n1)
    whole = n1.split("n = 1: triton_softmax.2: ")[1].split("; n = 2: ")[0]
    self.assertTrue(whole.startswith("Triton block-level (__triton)"), whole)
    self.assertIn("num_warps 8", whole)
    self.assertIn("reduce dims={0} of [64,256] (dot_general)", whole)
    self.assertIn("dims={0} of [256,32] (dot_general)", whole)
    self.assertEqual(whole.count("dims={0} of [256] (reduce_sum)"), 2)
    self.assertIn("dims={0} of [32] (reduce_max)", whole)
    self.assertIn("dims={0} of [32] (reduce_sum)", whole)
    self.assertIn("; n = 2: fusion.15: ", n1)
    self.assertIn("; n = 8: fusion.13: ", n1)
    self.assertIn("; n = 64: fusion.13: ", n1)
    self.assertNotIn("triton_softmax.4", n1)
    # The softmax: one line, triton_softmax.4 at every n > 1, and the
    # n = 1 fusion that also computes it named there.
    (softmax,) = [x for x in lines if "triton_softmax.4" in x]
    self.assertIn(
      "reduction at invariance_cases.py:185: n = 1: triton_softmax.2 "
      "(listed in full under reduction at invariance_cases.py:181-185); "
      "n = 2: triton_softmax.4: Triton block-level (__triton): num_warps 1",
      softmax,
    )
    for n in (8, 64):
      self.assertIn(f"; n = {n}: triton_softmax.4: ", softmax)

  def test_kernels_without_program_lines_pair_by_order(self):
    # The fates' reading (`site_kernels`) has no records: its "other
    # kernels" entries are paired across n in order, one line.
    def other(words):
      why = RowCountWhy(RowCountRule.NO_RULE, name=words)
      unread = KernelUnread(Unread.RECORD, why=why)
      return RowKernel("other kernels", "reduction", (), "?", unread)

    a = group(
      ((2,), (1,)),
      basis="unknown",
      invariant=None,
      kernels={1: (other("w1"),), 2: (other("w2"),)},
    )
    self.assertEqual(
      kernel_lines([a]),
      [
        "  m on a100 under float32, reduction: n = 1: other kernels: w1: no "
        "rule read; n = 2: other kernels: w2: no rule read"
      ],
    )


if __name__ == "__main__":
  absltest.main()
