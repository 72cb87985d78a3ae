"""Pass attribution: on recorded pass dumps of jaxlib 0.10.2 and 0.12.0.1
(testdata/passes, see its README.md), and from real XLA pass dumps on the CPU
and on a100."""

from __future__ import annotations

import dataclasses
import os
import re
from unittest import mock

import program_cases
import pytest
from absl.testing import absltest, parameterized

from hloprobe.compile import cases, compat, lowering, targets
from hloprobe.engine.measure import run_config
from hloprobe.errors import HloprobeError
from hloprobe.ir.hlo import parse_hlo_module
from hloprobe.ir.stablehlo import parse_stablehlo_dots
from hloprobe.report.site_words import pass_fate_words
from hloprobe.sites import dot_sites, passes, site_fate
from hloprobe.sites.site_fate import Fate

_PASSES = os.path.join(os.path.dirname(__file__), "testdata", "passes")
_RELEASES = ("jaxlib0102", "jaxlib01201")


def _recorded(folder: str):
  """(sites, pass dumps, optimized module) of one recorded compile."""
  path = os.path.join(_PASSES, folder)
  texts = {}
  for name in sorted(os.listdir(path)):
    with open(os.path.join(path, name), encoding="utf-8") as f:
      texts[name] = f.read()
  sites = parse_stablehlo_dots(texts.pop("stablehlo.mlir"))
  module = parse_hlo_module(texts.pop("optimized.hlo"))
  return sites, list(texts.items()), module


def _renamed(text: str) -> str:
  """`text` with every instruction and computation name suffixed."""
  return re.sub(r"%([\w.\-]+)", r"%\1_r", text)


def _placed(sites, module) -> list:
  """Per site: whether plain, and what `attribute_passes` would say."""
  return [
    (passes._is_plain(f), passes._attribution(f, "p", "q"))
    for f in dot_sites.map_dot_sites(sites, module)
  ]


def _summary(found: dict) -> dict:
  return {
    i: (a.pass_name, a.pipeline, pass_fate_words(a)) for i, a in found.items()
  }


class RecordedDumpsTest(parameterized.TestCase):
  """Facts read by hand from the recorded dumps and optimized HLO."""

  @parameterized.product(release=_RELEASES)
  def test_scan_on_cpu_goes_to_the_dot_library(self, release):
    # Dump 0013 still has both dots in the while body (jaxlib 0.10.2: in
    # the `closed_call` it calls; 0.12.0.1: as `dot(%arg_tuple.1#1, ...)`);
    # 0014, after dot-library-rewriter, has them in __ynn_fusion fusions.
    sites, dumps, module = _recorded(f"{release}_euler_scan_cpu_n2")
    self.assertLen(sites, 2)
    expected = ("dot-library-rewriter", "dot-library-passes")
    self.assertEqual(
      _summary(passes.attribute_passes(dumps, sites)),
      {i: expected + ("dot in __ynn_fusion",) for i in (0, 1)},
    )
    fates = dot_sites.map_dot_sites(sites, module)
    self.assertEqual(
      [(f.fate, f.emitter) for f in fates],
      [(site_fate.Fate.DOT, "__ynn_fusion")] * 2,
    )

  @parameterized.product(release=_RELEASES)
  def test_scan_on_a100_is_triton_gemm_rewriter(self, release):
    sites, dumps, module = _recorded(f"{release}_euler_scan_a100_n2")
    expected = ("triton-gemm-rewriter", "hlo_normalization", "Triton gemm")
    self.assertEqual(
      _summary(passes.attribute_passes(dumps, sites)),
      {0: expected, 1: expected},
    )
    fates = dot_sites.map_dot_sites(sites, module)
    self.assertEqual(
      [(f.fate, f.emitter, f.split_k) for f in fates],
      [(site_fate.Fate.TRITON_GEMM, "__triton_nested_gemm_fusion", None)] * 2,
    )

  @parameterized.product(release=_RELEASES)
  def test_forced_split_k_is_the_splitk_rewriter(self, release):
    # xla_gpu_experimental_force_split_k=4 on f32[8,8192] @ f32[8192,8]:
    # dump 0016 (after splitk-rewriter) has a top-level
    # f32[4,8,8] dot(f32[8,4,2048], f32[4,2048,8]) with lhs_batch_dims={1}
    # and a reduce over dimension 0; 0017 wraps that dot in a gemm fusion.
    sites, dumps, module = _recorded(f"{release}_long_k_a100_n8_split4")
    self.assertEqual(
      _summary(passes.attribute_passes(dumps, sites)),
      {0: ("splitk-rewriter", "hlo_normalization", "dot split-K 4")},
    )
    (fate,) = dot_sites.map_dot_sites(sites, module)
    self.assertEqual(
      (fate.fate, fate.emitter, fate.split_k),
      (site_fate.Fate.TRITON_GEMM, "__triton_nested_gemm_fusion", 4),
    )
    (dot,) = [
      i for _, i in module.all_instructions() if i.name == fate.carriers[-1]
    ]
    self.assertEqual(str(dot.shape), "f32[4,8,8]")
    # The nested gemm fusion's config states tiles, not the split factor.
    self.assertIn("block_level_fusion_config", fate.gemm_config)
    self.assertNotIn("split_k", str(fate.gemm_config))

  @parameterized.product(release=_RELEASES)
  def test_without_the_splitk_dump_the_next_pass_is_named(self, release):
    """Test the tester: the split-K answer comes from dump 0016 alone."""
    sites, dumps, _ = _recorded(f"{release}_long_k_a100_n8_split4")
    dumps = [(n, t) for n, t in dumps if ".0016." not in n]
    self.assertEqual(
      _summary(passes.attribute_passes(dumps, sites)),
      {
        0: (
          "triton-gemm-rewriter",
          "hlo_normalization",
          "Triton gemm split-K 4",
        )
      },
    )

  def _one_line_changed(self):
    """(sites, dump before, dump after) where only the site's line changes:
    its plain dot (dump 0015, jaxlib 0.12.0.1) becomes a cuBLAS call."""
    sites, dumps, _ = _recorded("jaxlib01201_long_k_a100_n8_split4")
    (before,) = [t for n, t in dumps if ".0015." in n]
    dot = "dot(%a.1, %b.1), lhs_contracting_dims={1}, rhs_contracting_dims={0}"
    self.assertIn(dot, before)
    after = before.replace(
      dot, 'custom-call(%a.1, %b.1), custom_call_target="__cublas$gemm"'
    )
    self.assertLen(set(before.splitlines()) ^ set(after.splitlines()), 2)
    return sites, before, after

  def test_a_dump_that_changes_only_the_site_line_is_read(self):
    # A dump is read again unless its text is one read before: neither the
    # dumps' sameness elsewhere nor the lines the reader keeps hide it.
    sites, before, after = self._one_line_changed()
    name = "module_0014.jit_matmul.{:04d}.p.after_{}.txt"
    for order, expected in (
      ((before, before, after, before), 2),
      ((before, after, after, before), 1),
      ((after, before), 0),
    ):
      dumps = [(name.format(i, f"x{i}"), t) for i, t in enumerate(order)]
      with self.subTest(expected=expected):
        self.assertEqual(
          _summary(passes.attribute_passes(dumps, sites)),
          {0: (f"x{expected}", "p", "cuBLAS")},
        )
    dumps = [(name.format(i, f"x{i}"), before) for i in range(3)]
    self.assertEqual(passes.attribute_passes(dumps, sites), {})

  def test_a_dump_that_changes_only_a_carrier_attribute_is_mapped(self):
    # Its carriers differ from the dump's before in the dot's batch
    # dimensions alone: the split-K dot of dump 0016 (jaxlib 0.12.0.1)
    # without them is a plain dot (`_split_k` finds no split).
    sites, dumps, _ = _recorded("jaxlib01201_long_k_a100_n8_split4")
    (split,) = [t for n, t in dumps if ".0016." in n]
    batch = ", lhs_batch_dims={1}", ", rhs_batch_dims={0}"
    unsplit = split.replace(batch[0], "").replace(batch[1], "")
    self.assertLen(set(split.splitlines()) ^ set(unsplit.splitlines()), 2)
    name = "module_0014.jit_matmul.{:04d}.p.after_{}.txt"
    for order, expected in (((unsplit, split), {0: "x1"}), ((unsplit,), {})):
      dumps = [(name.format(i, f"x{i}"), t) for i, t in enumerate(order)]
      found = passes.attribute_passes(dumps, sites)
      self.assertEqual({i: a.pass_name for i, a in found.items()}, expected)

  @parameterized.product(
    folder=[
      f"{r}_{f}"
      for r in _RELEASES
      for f in (
        "euler_scan_cpu_n2",
        "euler_scan_a100_n2",
        "long_k_a100_n8_split4",
      )
    ]
  )
  def test_names_do_not_change_what_a_site_became(self, folder):
    """`passes._carriers_key` leaves names out: map_dot_sites must not read
    them (every name of a dump renamed: the same plain sites, the same
    attributions), and renamed dumps are not mapped again."""
    sites, dumps, _ = _recorded(folder)
    renamed = [(n, _renamed(t)) for n, t in dumps]
    for (n, text), (_, other) in zip(dumps, renamed):
      with self.subTest(n):
        self.assertNotEqual(text, other)
        self.assertEqual(
          _placed(sites, parse_hlo_module(other)),
          _placed(sites, parse_hlo_module(text)),
        )
    expected = _summary(passes.attribute_passes(dumps, sites))
    self.assertNotEqual(expected, {})
    self.assertEqual(
      _summary(passes.attribute_passes(renamed, sites)), expected
    )
    both = [
      (f"{n[:-4]}{k}.txt", t)
      for pair in zip(dumps, renamed)
      for k, (n, t) in enumerate(pair)
    ]
    calls, parses = [], []
    for given in (dumps, both):
      with (
        mock.patch.object(
          passes.dot_sites, "map_dot_sites", wraps=dot_sites.map_dot_sites
        ) as mapped,
        mock.patch.object(
          passes, "parse_hlo_module", wraps=passes.parse_hlo_module
        ) as parsed,
      ):
        self.assertEqual(
          _summary(passes.attribute_passes(given, sites)), expected
        )
      calls.append(mapped.call_count)
      parses.append(parsed.call_count)
    self.assertEqual(calls[1], calls[0])  # no renamed copy mapped
    self.assertEqual(parses[1], parses[0])  # nor parsed (`_unnamed`)

  def test_unnamed_is_one_for_a_one_to_one_renaming_only(self):
    text = "%a = f32[2] add(%b, %c)\n%t#1 = f32[2] negate(%a)\nROOT %d = %a"
    renamed = text.replace("%a", "%x").replace("%b", "%c.2")
    self.assertEqual(passes._unnamed(renamed), passes._unnamed(text))
    for other in (
      text.replace("%b", "%c"),  # two names made one
      text.replace("%t#1", "%t#2"),  # another tuple element
      text.replace("f32[2] add", "f32[3] add"),
    ):
      with self.subTest(other):
        self.assertNotEqual(passes._unnamed(other), passes._unnamed(text))

  def test_a_partitioned_module_is_always_mapped(self):
    # Its collectives are read too (`dot_sites._collective`): no key.
    _, dumps, module = _recorded("jaxlib01201_long_k_a100_n8_split4")
    carriers, key = passes._carriers_key(module)
    self.assertLen(carriers, 1)
    self.assertIsNotNone(key)
    partitioned = dataclasses.replace(
      module, header_attrs=module.header_attrs + ", num_partitions=2"
    )
    self.assertEqual(partitioned.partition_count, 2)
    self.assertEqual(passes._carriers_key(partitioned), (None, None))

  def test_an_unreadable_dump_names_the_release(self):
    sites, dumps, _ = _recorded("jaxlib01201_euler_scan_cpu_n2")
    broken = [
      (n, t.replace("%arg_tuple.1#1,", "%arg_tuple.1#9,")) for n, t in dumps
    ]
    with self.assertRaisesRegex(
      HloprobeError,
      rf"\.0000\..* not read .*jaxlib {compat.installed_jaxlib()} "
      r"\(pass dumps read on 0\.12\.0\.1 and 0\.10\.2\)",
    ):
      passes.attribute_passes(broken, sites)

  def test_dumps_named_otherwise_name_the_release(self):
    with self.assertRaisesRegex(
      HloprobeError, rf"none named .*jaxlib {compat.installed_jaxlib()}"
    ):
      passes.attribute_passes([("after_x.txt", "HloModule m")], [])


def _attribution(target: str, n: int, precision: str = "float32"):
  case = cases.get_case("seed_mlp")
  r = run_config(
    case,
    case.make_inputs(),
    None,
    targets.get_target(target),
    precision,
    n,
    explain_passes=True,
  )
  self_check = r.compilation.passes_error
  assert r.ok and self_check is None, (r.failure, self_check)
  return r.compilation.passes


@pytest.mark.compiles
class CpuPassesTest(absltest.TestCase):
  def test_batch_1_last_site_strength_reduced_by_algsimp(self):
    found = _attribution("cpu", 1)
    # On the CPU, AlgebraicSimplifier (algsimp) does dot strength reduction.
    self.assertEqual(set(found), {3})
    self.assertEqual(
      (found[3].pass_name, found[3].pipeline, found[3].fate),
      ("algsimp", "simplification", Fate.MULTIPLY_REDUCE),
    )

  def test_batch_2_dots_go_to_the_dot_library(self):
    found = _attribution("cpu", 2)
    self.assertEqual(set(found), {0, 1, 2})
    self.assertEqual(
      {a.pass_name for a in found.values()}, {"dot-library-rewriter"}
    )
    self.assertEqual(
      {(a.fate, a.emitter) for a in found.values()},
      {(Fate.DOT, "__ynn_fusion")},
    )
    self.assertEqual(
      {pass_fate_words(a) for a in found.values()}, {"dot in __ynn_fusion"}
    )

  def test_no_dumps(self):
    with self.assertRaisesRegex(HloprobeError, "no pass dumps"):
      passes.attribute_passes([("unrelated.txt", "")], [])


@pytest.mark.compiles
class A100PassesTest(parameterized.TestCase):
  def test_batch_1_all_sites_dot_strength_reduction(self):
    found = _attribution("a100", 1, "bfloat16")
    self.assertEqual(set(found), {0, 1, 2, 3})
    self.assertEqual(
      {(a.pass_name, a.pipeline) for a in found.values()},
      {("dot-strength-reduction", "simplification")},
    )
    self.assertEqual({a.fate for a in found.values()}, {Fate.MULTIPLY_REDUCE})

  def test_batch_2_triton_gemm_rewriter(self):
    found = _attribution("a100", 2, "bfloat16")
    self.assertEqual(
      {i: pass_fate_words(found[i]) for i in found},
      {
        0: "Triton gemm",
        1: "Triton gemm",
        2: "Triton gemm",
        3: "multiply+reduce",
      },
    )
    self.assertEqual(
      {found[i].pass_name for i in (0, 1, 2)}, {"triton-gemm-rewriter"}
    )
    self.assertEqual(found[3].pass_name, "dot-strength-reduction")


def _run(case, target: str, n: int, **options):
  t = targets.get_target(target)
  if options:
    t = dataclasses.replace(
      t, compiler_options={**(t.compiler_options or {}), **options}
    )
  r = run_config(
    case, case.make_inputs(), None, t, "highest", n, explain_passes=True
  )
  assert r.ok and r.compilation.passes_error is None, (
    r.failure,
    r.compilation.passes_error,
  )
  return r


# What the first pass dump of a scan shows: a `closed_call` computation
# holding the body's dots (jaxlib 0.10.2) or the dots in the while body,
# reading tuple elements as `%arg_tuple.1#1` (jaxlib 0.12.0.1).
_SCAN_FIRST_DUMP = {"0.10.2": "%closed_call", "0.12.0.1": "%arg_tuple.1#1"}


@pytest.mark.compiles
@pytest.mark.release_rules
class ReleaseRulesTest(parameterized.TestCase):
  """The recorded facts again, compiled by the installed jaxlib."""

  @parameterized.named_parameters(
    ("cpu", "cpu", "dot-library-rewriter", "dot in __ynn_fusion"),
    ("a100", "a100", "triton-gemm-rewriter", "Triton gemm"),
  )
  def test_scan_body_dots(self, target, pass_name, fate):
    if compat.installed_jaxlib() not in _SCAN_FIRST_DUMP:
      self.skipTest(f"no expectation for jaxlib {compat.installed_jaxlib()}")
    r = _run(program_cases.euler_scan(), target, 2)
    self.assertEqual(
      {
        i: (a.pass_name, pass_fate_words(a))
        for i, a in r.compilation.passes.items()
      },
      {0: (pass_name, fate), 1: (pass_name, fate)},
    )

  def test_scan_first_dump_form(self):
    expected = _SCAN_FIRST_DUMP.get(compat.installed_jaxlib())
    if expected is None:
      self.skipTest(f"no expectation for jaxlib {compat.installed_jaxlib()}")
    case = program_cases.euler_scan()
    cc = lowering.compile_case(
      case,
      case.inputs_for(case.make_inputs(), 2),
      "highest",
      targets.get_target("cpu"),
      dump_passes=True,
    )
    first = min(n for n, _ in cc.pass_dumps if ".jit__euler.0000." in n)
    self.assertIn(expected, dict(cc.pass_dumps)[first])

  def test_forced_split_k(self):
    r = _run(
      program_cases.long_k_matmul(),
      "a100",
      8,
      xla_gpu_experimental_force_split_k="4",
    )
    (fate,) = r.compilation.fates
    self.assertEqual((fate.fate, fate.split_k), (site_fate.Fate.TRITON_GEMM, 4))
    a = r.compilation.passes[0]
    self.assertEqual(
      (a.pass_name, pass_fate_words(a)), ("splitk-rewriter", "dot split-K 4")
    )


if __name__ == "__main__":
  absltest.main()
