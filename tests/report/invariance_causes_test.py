"""The batch-invariance causes in words (`report/invariance_causes.py`),
from hand-built records (no compile).

Each expected sentence is written here from the record's fields: the
fates, split-K factors, passes, algorithms and emitters given, the sites
and batch sizes named.
"""

from __future__ import annotations

import dataclasses
import types

import numpy as np
import verify_findings
from absl.testing import absltest

from hloprobe.compile import get_target
from hloprobe.invariance import invariance_of
from hloprobe.invariance.answer import (
  Boundary,
  Lever,
  SiteChange,
  SiteChanges,
  SiteMade,
  Unexplained,
  levers,
)
from hloprobe.invariance.kernel_identity import (
  KernelUnread,
  RowKernel,
  Unread,
)
from hloprobe.invariance.model_bits import Inexact, NotModelled
from hloprobe.invariance.rows import ConfigRows
from hloprobe.ir import as_precision
from hloprobe.kernels.records import (
  KernelDifference,
  KernelRecord,
  Role,
  RowCountRule,
  RowCountWhy,
)
from hloprobe.numerics import site_model
from hloprobe.records import Compilation, Config, ConfigResult
from hloprobe.report import invariance_causes as ic
from hloprobe.report.invariance_words import answer_lines, invariance_json
from hloprobe.sites import Fate, SiteFate

_GEMM = SiteMade(Fate.TRITON_GEMM, algorithm="TF32_TF32_F32")
# A kernels-stage reason with short words: "tiles: no rule read".
_TILES = RowCountWhy(RowCountRule.NO_RULE, name="tiles")
_MMA = "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"


def _fate(fate: Fate, **kw) -> SiteFate:
  """A site's fate record with only what the words read set."""
  fields = dict(
    site=None,
    fate=fate,
    fusion_kind=None,
    backend_config_kind=None,
    custom_call_target=None,
    carriers=(),
    precision_config="",
    algorithm=None,
    split_k=None,
    gemm_config=None,
    effective_algorithm="TF32_TF32_F32",
    algorithm_source=None,
    algorithm_evidence=None,
    selection=None,
  )
  return SiteFate(**(fields | kw))


def _record(emitter: str, arithmetic, name: str = "fusion.3") -> KernelRecord:
  return verify_findings.kernel_record(name, arithmetic, emitter)


class SitePhrasesTest(absltest.TestCase):
  def test_sites_of_one_change_are_one_phrase(self):
    dsr = SiteMade(Fate.MULTIPLY_REDUCE, pass_name="dot-strength-reduction")
    changes = SiteChanges(
      1,
      2,
      (
        SiteChange(0, dsr, _GEMM),
        SiteChange(1, dsr, _GEMM),
        SiteChange(3, dsr, SiteMade(Fate.TRITON_GEMM, 4)),
      ),
    )
    self.assertEqual(
      ic.site_phrases(changes),
      [
        "sites 0-1 multiply+reduce after dot strength reduction (Triton gemm "
        "at n = 2)",
        "site 3 multiply+reduce after dot strength reduction (Triton gemm "
        "split-K 4 at n = 2)",
      ],
    )

  def test_split_k_algorithm_and_emitter_changes(self):
    split = SiteChange(1, dataclasses.replace(_GEMM, split_k=4), _GEMM)
    algorithm = SiteChange(
      0,
      SiteMade(Fate.TRITON_GEMM, algorithm="BF16_BF16_F32"),
      _GEMM,
    )
    ynn = SiteMade(Fate.DOT, emitter="__ynn_fusion")
    moved = SiteChange(2, SiteMade(Fate.DOT), ynn)
    back = SiteChange(5, ynn, SiteMade(Fate.DOT))
    words = ic.site_phrases(SiteChanges(64, 8, (split, algorithm, moved, back)))
    self.assertEqual(
      words,
      [
        "site 1 Triton gemm split-K 4 (split-K 1 at n = 8)",
        "site 0 Triton gemm BF16_BF16_F32 (TF32_TF32_F32 at n = 8)",
        "site 2 dot by XLA's own emitter (in __ynn_fusion at n = 8)",
        "site 5 dot in __ynn_fusion (XLA's own emitter at n = 8)",
      ],
    )

  def test_counts_and_nothing(self):
    self.assertEqual(
      ic.site_phrases(SiteChanges(1, 2, counts=(3, 4))),
      ["3 contraction sites at n = 1, 4 at n = 2"],
    )
    self.assertEqual(ic.site_phrases(SiteChanges(1, 2)), [])
    self.assertEqual(ic.site_list((0, 2, 3)), "sites 0, 2, 3")


class KernelWordsTest(absltest.TestCase):
  def test_a_triton_gemm_as_its_fate_says(self):
    f = _fate(Fate.TRITON_GEMM, split_k=2, mma_opcodes=(_MMA,), ptx_kernel="k")
    k = RowKernel("gemm_fusion", "gemm", (0,), "s", fate=f, block_k=32)
    self.assertEqual(
      ic.kernel_words(k),
      f"Triton gemm TF32_TF32_F32, {_MMA}, split-K 2, block_k 32",
    )
    no_ptx = RowKernel(
      "g",
      "gemm",
      (0,),
      "s",
      KernelUnread(Unread.BLOCK_K),
      fate=_fate(Fate.TRITON_GEMM, effective_algorithm=None),
    )
    self.assertEqual(
      ic.kernel_words(no_ptx),
      "Triton gemm algorithm unknown, instruction not read, split-K 1",
    )

  def test_library_reduction_and_other_kernels(self):
    library = KernelUnread(Unread.LIBRARY)
    cublas = RowKernel(
      "c", "cuBLAS", (0,), "s", library, fate=_fate(Fate.CUBLAS)
    )
    self.assertEqual(
      ic.kernel_words(cublas),
      "cuBLAS: chosen by the library's per-shape heuristic at run time: "
      "unknown without a device",
    )
    order = KernelUnread(Unread.ORDER)
    mr = RowKernel(
      "m", "reduction", (1,), "s", order, fate=_fate(Fate.MULTIPLY_REDUCE)
    )
    self.assertEqual(ic.kernel_words(mr), "multiply+reduce TF32_TF32_F32")
    ops = KernelUnread(Unread.OPS, ("reduce", "sort"))
    other = RowKernel("other kernels", "reduction", (), "?", ops)
    self.assertEqual(ic.kernel_words(other), f"reduce, sort {_NOT_READ}")

  def test_each_unread_kind_has_words(self):
    fate = _fate(Fate.MULTIPLY_REDUCE)
    cases = [
      (
        KernelUnread(Unread.LIBRARY),
        "chosen by the library's per-shape "
        "heuristic at run time: unknown without a device",
      ),
      (
        KernelUnread(Unread.BLOCK_K),
        "the gemm's K tile (block_k) not read from its config",
      ),
      (
        KernelUnread(Unread.ORDER),
        "a multiply+reduce's order on the GPU "
        "not read: reductions and other fusions not read (the kernels stage, "
        "hloprobe.kernels, reads their emitter and tiling)",
      ),
      (KernelUnread(Unread.OPS, ("reduce",)), f"reduce {_NOT_READ}"),
      (KernelUnread(Unread.RECORD, why=_TILES), "tiles: no rule read"),
      (KernelUnread(Unread.RECORD), "unknown"),
    ]
    self.assertEqual({u.kind for u, _ in cases}, set(Unread))
    for unread, words in cases:
      k = RowKernel("k", "reduction", (0,), "s", unread, fate=fate)
      self.assertEqual(ic.unread_words(k), words)
    complete = RowKernel("k", "reduction", (0,), "s", fate=fate)
    self.assertIsNone(ic.unread_words(complete))

  def test_a_kernels_stage_record(self):
    rec = _record(
      "Triton block-level (__triton)",
      (
        ("computation", "ab12"),
        ("num_warps", "2"),
        ("ptx", "cd34"),
        ("tile", "256"),
      ),
    )
    k = RowKernel("fusion.3", "reduction", (), "s", record=rec)
    self.assertEqual(
      ic.kernel_words(k), "Triton block-level (__triton): num_warps 2, tile 256"
    )
    bare = RowKernel(
      "l", "elementwise", (), "s", record=_record("XLA loop", ())
    )
    self.assertEqual(ic.kernel_words(bare), "XLA loop")


# The fates' words for the reducing ops they do not read.
_NOT_READ = (
  "in the optimized HLO: reductions and other fusions not read (the "
  "kernels stage, hloprobe.kernels, reads their emitter and tiling)"
)


class BoundaryCausesTest(absltest.TestCase):
  def test_sites_first_then_other_kernels_once_each(self):
    dsr = SiteMade(Fate.MULTIPLY_REDUCE)
    sites = SiteChanges(1, 2, (SiteChange(0, dsr, _GEMM),))
    f = _fate(Fate.TRITON_GEMM, ptx_kernel="k")
    gemm = RowKernel("g", "gemm", (1,), "s", fate=f, block_k=64)
    tiles = KernelUnread(Unread.RECORD, why=_TILES)
    softmax = RowKernel("triton_softmax.4", "reduction", (), "s", tiles)
    b = Boundary(1, 2, sites, (gemm, softmax, softmax))
    self.assertEqual(
      ic.boundary_causes(b),
      (
        [
          "site 0 multiply+reduce (Triton gemm at n = 2)",
          "site 1 Triton gemm TF32_TF32_F32, no mma, split-K 1, block_k 64",
          "triton_softmax.4 tiles: no rule read",
        ],
        1,
      ),
    )
    d = KernelDifference(
      _record("E", (("tile", "1"),)), _record("E", ()), (("tile", "1", "-"),)
    )
    only = Boundary(8, 2, SiteChanges(8, 2), differences=(d,))
    self.assertEqual(
      ic.boundary_causes(only),
      (["fusion.3 (reduction reduce_sum at no source line): tile 1 -> -"], 0),
    )

  def test_a_matched_kernels_difference(self):
    # Each part of the words from its field: both names where they
    # differ, what the first computes (its source files' base names), the
    # emitter, the arithmetic fields, the config values.
    a = dataclasses.replace(
      _record("Triton gemm", (("split_k", "1"),), "gemm.1"),
      role=Role.CONTRACTION,
      ops=("dot_general",),
      source=("/u/model.py:11", "/u/lib.py:3"),
    )
    b = dataclasses.replace(a, name="gemm.2", emitter="cuBLAS")
    d = KernelDifference(
      a, b, (("split_k", "1", "2"),), (("num_stages", "3", "4"),)
    )
    self.assertEqual(
      ic.boundary_causes(Boundary(2, 1, SiteChanges(2, 1), differences=(d,))),
      (
        [
          "gemm.1 / gemm.2 (contraction dot_general at model.py:11, lib.py:3):"
          " emitter Triton gemm -> cuBLAS, split_k 1 -> 2 (config: num_stages"
          " 3 -> 4)"
        ],
        0,
      ),
    )
    ptx = KernelDifference(a, a, (("ptx", "x", "y"),))
    (words,), _ = ic.boundary_causes(
      Boundary(2, 1, SiteChanges(2, 1), differences=(ptx,))
    )
    self.assertEqual(
      words,
      "gemm.1 (contraction dot_general at model.py:11, lib.py:3): ptx x -> y;"
      " every rule field is equal: the PTX's float dataflow differs (e.g. a"
      " value loaded again instead of kept in a register), so the same bits"
      " are likely but not proven",
    )

  def test_unmatched_kernel_is_placed_by_batch_size(self):
    # The kernels stage compares `against` (its first config, `a`) with
    # the boundary's n (its second, `b`): a kernel on one side only is
    # said by batch size, not as "only in the first config" (issue 38).
    softmax = _record("Triton block-level (__triton)", (), "triton_softmax.4")
    gone = KernelDifference(softmax, None, ())
    b = Boundary(1, 2, SiteChanges(1, 2), differences=(gone,))
    self.assertEqual(
      ic.boundary_causes(b)[0],
      [
        "triton_softmax.4 (reduction reduce_sum at no source line, Triton "
        "block-level (__triton)): "
        "only at n = 2, not at n = 1"
      ],
    )
    new = KernelDifference(None, softmax, ())
    b = Boundary(64, 8, SiteChanges(64, 8), differences=(new,))
    self.assertEqual(
      ic.boundary_causes(b)[0],
      [
        "triton_softmax.4 (reduction reduce_sum at no source line, Triton "
        "block-level (__triton)): "
        "only at n = 64, not at n = 8"
      ],
    )

  def test_unexplained(self):
    self.assertIsNone(ic.unexplained_words(None))
    self.assertEqual(
      ic.unexplained_words(Unexplained(kernels_differ=True)), "kernels differ"
    )
    libs = Unexplained((("__ynn_fusion", (0, 1)), ("x", (3,))))
    self.assertEqual(
      ic.unexplained_words(libs),
      "no site changed fate; sites 0-1 run in __ynn_fusion, a library kernel "
      "chosen by the whole shape (its order is not read); site 3 run in x, a "
      "library kernel chosen by the whole shape (its order is not read)",
    )
    self.assertEqual(
      ic.unexplained_words(Unexplained()),
      "no contraction site changed fate: a kernel chose another order at "
      "this shape (the CPU's reductions are not read)",
    )


class ModelWhyTest(absltest.TestCase):
  def test_each_reason(self):
    k = RowKernel("loop.1", "elementwise", (2, 3), "s")
    tiles = KernelUnread(Unread.RECORD, why=_TILES)
    softmax = RowKernel("triton_softmax.4", "reduction", (), "s", tiles)
    gpu = "(the GPU's implementation, not modelled bit for bit)"
    cases = [
      (NotModelled(Inexact.NOT_COMPILED), "the config did not compile"),
      (NotModelled(Inexact.NOT_READ, n=8), "n = 8: its kernels not read"),
      (
        NotModelled(Inexact.NOT_COMPUTED),
        "the kernel model's bits not computed",
      ),
      (
        NotModelled(Inexact.NOT_COMPUTED, error="MemoryError: big"),
        "the kernel model's bits not computed: MemoryError: big",
      ),
      (
        NotModelled(
          Inexact.SITE, 1, site=0, model=site_model("cuBLAS", (), "8.0")
        ),
        "n = 1: site 0: cuBLAS: kernel arithmetic not modelled",
      ),
      (
        NotModelled(Inexact.NOT_A_GEMM, kernel=k),
        "loop.1 (sites 2, 3): not a Triton gemm the kernel model is "
        "bit-exact for",
      ),
      (
        NotModelled(Inexact.FUSES, kernel=k, ops=("erf", "tanh")),
        f"loop.1 (sites 2, 3): fuses erf, tanh {gpu}",
      ),
      (
        NotModelled(Inexact.ORDER, kernel=softmax),
        "triton_softmax.4: a reduction (tiles: no rule read): its order is "
        "not modelled",
      ),
      (
        NotModelled(Inexact.OPS_NOT_READ, kernel=k),
        "loop.1 (sites 2, 3): its ops not read",
      ),
      (
        NotModelled(Inexact.NO_OP_METADATA, kernel=k),
        "loop.1 (sites 2, 3): its ops not read (no op metadata)",
      ),
      (
        NotModelled(Inexact.COMPUTES, kernel=k, ops=("exp",)),
        f"loop.1 (sites 2, 3): computes exp {gpu}",
      ),
      (
        NotModelled(Inexact.MULTIPLY_ADD, kernel=k),
        "loop.1 (sites 2, 3): a multiply and an add or subtract among its "
        "ops, and whether one feeds the other (a possible multiply-add) not "
        "read",
      ),
      (
        NotModelled(Inexact.CONTRACTS, kernel=k, pairs=("mul.1 -> sub.2",)),
        "loop.1 (sites 2, 3): mul.1 -> sub.2 in one kernel (a multiply "
        "feeding an add or subtract: the GPU may fuse them into one "
        "multiply-add)",
      ),
      (
        NotModelled(
          Inexact.CONTRACTS, kernel=k, pairs=("mul.1 -> sub.2",), ptx_read=False
        ),
        "loop.1 (sites 2, 3): mul.1 -> sub.2 in one kernel (a multiply "
        "feeding an add or subtract: the GPU may fuse them into one "
        "multiply-add; its PTX not read)",
      ),
      (
        NotModelled(
          Inexact.CONTRACTS,
          kernel=k,
          pairs=("mul.1 -> sub.2",),
          fused=("fma.rn.f32",),
        ),
        "loop.1 (sites 2, 3): mul.1 -> sub.2 in one kernel, and its PTX has "
        "fma.rn.f32 (a multiply fused into an add, or left for ptxas to "
        "fuse: one rounding where XLA:CPU's kernel model rounds twice)",
      ),
    ]
    self.assertEqual(len({w.reason for w, _ in cases}), len(Inexact))
    for why, want in cases:
      self.assertEqual(ic.model_why_words(why), want)
    self.assertIsNone(ic.model_why_words(None))


class ChangedPhrasesTest(absltest.TestCase):
  def test_sites_with_the_sizes_they_changed_at(self):
    # A pin's changes per n, each against the baseline at the same n.
    split = dataclasses.replace(_GEMM, split_k=2)
    at = {
      n: SiteChanges(n, n, (SiteChange(1, _GEMM, split),)) for n in (64, 128)
    }
    self.assertEqual(
      ic.changed_phrases((SiteChanges(8, 8), at[64], at[128])),
      [
        ("site 1 Triton gemm (split-K 2 at n = 64)", [64]),
        ("site 1 Triton gemm (split-K 2 at n = 128)", [128]),
      ],
    )
    self.assertEqual(ic.changed_phrases((SiteChanges(8, 8),)), [])


# tm_mm on the CPU (jaxlib 0.12.0.1), as its optimized HLO reads: at
# n = 1 the dot stays a plain `dot` (XLA's own emitter); from n = 2 on it
# is a kCustom fusion whose backend config kind is "__ynn_fusion" (the
# dot-library-rewriter's YNNPACK fusion). Row 0's bits: n = 1 and n = 64
# equal, n = 2-32 another value (YNNPACK picks its kernel from the whole
# shape), 3 ULP apart here (float32 1.0 and the third float above it).
_OWN = _fate(
  Fate.DOT,
  site=types.SimpleNamespace(index=0),
  effective_algorithm="F32_F32_F32",
)
_YNN = dataclasses.replace(
  _OWN, fusion_kind="kCustom", backend_config_kind="__ynn_fusion"
)
_ONE = np.float32(1.0)
_THIRD = (np.array([1.0], np.float32).view(np.int32) + 3).view(np.float32)[0]
_YNN_WORDS = (
  "no site changed fate; site 0 run in __ynn_fusion, a library kernel "
  "chosen by the whole shape (its order is not read)"
)


def _tm_mm(sizes, bits_of):
  """The CPU group's records (`_OWN` at n = 1, `_YNN` above) and row 0
  per n (`bits_of(n)`: `_ONE` or `_THIRD`)."""
  cpu = get_target("cpu")
  results = [
    ConfigResult(
      Config("tm_mm", cpu, n, as_precision("float32")),
      Compilation("", "", fates=(_OWN if n == 1 else _YNN,)),
    )
    for n in sizes
  ]
  rows = {
    ("tm_mm", "cpu", "float32", "baseline", n): ConfigRows(
      n, (np.array([bits_of(n)], np.float32),)
    )
    for n in sizes
  }
  (a,) = invariance_of(results, rows=rows)
  return a


class MixedClassTest(absltest.TestCase):
  """A class of bits whose sizes differ in their sites' fates: each
  sub-group's cause (issue 38, a new user's tm_mm on the CPU)."""

  def test_each_size_of_a_class_its_own_cause(self):
    sizes = (1, 2, 3, 4, 8, 16, 32, 64)
    a = _tm_mm(sizes, lambda n: _ONE if n in (1, 64) else _THIRD)
    self.assertEqual(a.rows[0].classes, ((2, 3, 4, 8, 16, 32), (1, 64)))
    self.assertIsNone(a.mixed)
    (b,) = a.boundaries
    self.assertEqual(
      [(p.sizes, p.against) for p in b.parts], [((1,), 2), ((64,), 32)]
    )
    line = answer_lines([a])[0]
    self.assertEqual(
      line,
      "row 0 is not batch-invariant on cpu under float32 (bits compared): "
      "identical for n = 2-32; n = 1, 64 differs by 3 ULP (at n = 1: site "
      "0 dot by XLA's own emitter (in __ynn_fusion at n = 2); at n = 64: "
      f"{_YNN_WORDS})",
    )
    (g,) = invariance_json([a])["groups"]
    self.assertEqual(
      [(p["sizes"], p["unexplained"]) for p in g["boundaries"][0]["parts"]],
      [([1], None), ([64], _YNN_WORDS)],
    )
    self.assertIn(Lever.YNN, levers(a))

  def test_a_tie_prefers_the_class_of_shared_fates(self):
    # n = 1, 64 and n = 2-8 both of two sizes: n = 2-8 share their fates.
    a = _tm_mm((1, 2, 8, 64), lambda n: _ONE if n in (1, 64) else _THIRD)
    self.assertEqual(a.rows[0].classes, ((2, 8), (1, 64)))
    line = answer_lines([a])[0]
    self.assertEqual(
      line,
      "row 0 is not batch-invariant on cpu under float32 (bits compared): "
      "identical for n = 2-8; n = 1, 64 differs by 3 ULP (at n = 1: site 0 "
      "dot by XLA's own emitter (in __ynn_fusion at n = 2); at n = 64: "
      f"{_YNN_WORDS})",
    )

  def test_a_reference_class_of_other_fates_says_so(self):
    # n = 1-8 one class of bits (n = 1 XLA's own emitter, n = 2-8
    # __ynn_fusion), n = 64 apart; its boundary against n = 8, whose
    # fates it shares.
    a = _tm_mm((1, 2, 8, 64), lambda n: _THIRD if n == 64 else _ONE)
    (b,) = a.boundaries
    self.assertEqual((b.n, b.against, b.parts), (64, 8, ()))
    self.assertEqual([p.sizes for p in a.mixed.parts], [(2, 8)])
    line = answer_lines([a])[0]
    self.assertEqual(
      line,
      "row 0 is not batch-invariant on cpu under float32 (bits compared): "
      "identical for n = 1-8 (same bits though the sites' fates differ: at "
      "n = 2-8: site 0 dot in __ynn_fusion (XLA's own emitter at n = 1)); "
      f"n = 64 differs by 3 ULP ({_YNN_WORDS})",
    )

  def test_a_class_of_shared_fates_says_one_cause(self):
    a = _tm_mm((2, 8, 64), lambda n: _THIRD if n == 64 else _ONE)
    (b,) = a.boundaries
    self.assertEqual(b.parts, ())
    self.assertIsNone(a.mixed)
    line = answer_lines([a])[0]
    self.assertTrue(
      line.endswith(
        f"identical for n = 2-8; n = 64 differs by 3 ULP ({_YNN_WORDS})"
      ),
      line,
    )
    (g,) = invariance_json([a])["groups"]
    self.assertNotIn("parts", g["boundaries"][0])
    self.assertNotIn("mixed", g)


if __name__ == "__main__":
  absltest.main()
