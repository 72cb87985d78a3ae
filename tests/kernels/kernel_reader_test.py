"""Tests for hloprobe.kernels on recorded compiles (tests/testdata/kernels,
written by its record_fixtures.py and record_pin.py) and hand-written HLO
and PTX.

Expected values are read off the fixtures' text by hand and from the XLA
rule each field encodes (cited in hloprobe/kernels/*_rules.py):
  * n = 8 (0.12.0.1): `gemm_fusion_dot_general.2`'s nested dot prints
    `backend_config={"sizes":["64"]}` (block_k 64), K = 256 (f32[8,256] x
    f32[256,512]), the PTX kernel has `fma.rn.f32` and no mma;
    `triton_softmax.4` prints num_warps "2", output_tiles [1,1024].
  * n = 64: `gemm_fusion_dot` computes f32[2,64,1000] (a split dimension
    of 2) and `triton_softmax.4`'s computation starts with a reduce over
    dimensions={0} whose op_name is the dot's ("jit(batched)/vmap()/
    dot_general"): split-K 2, K = 2 x 256; the softmax prints num_warps "4".
  * n = 1: `input_reduce_fusion.1` reduces f32[512] (a row of 512): by
    RowReductionFusion, threads = min(1024, round_up(ceil(512/32), 32)) =
    32, vector 2 (even, 32 * 2 <= 512, f32 inputs), per-thread tile
    min(32/2, ceil(256/32)) = 8 vectors = 16 elements; its PTX has 5 warp
    shuffles (offsets 16, 8, 4, 2, 1: one warp per row) and ld.global.v2.
"""

from __future__ import annotations

import os

from absl.testing import absltest, parameterized

from hloprobe import kernels
from hloprobe.errors import TargetError
from hloprobe.kernels import kernel_reader
from hloprobe.kernels.differences import kernel_classes
from hloprobe.kernels.records import Role, RowCount, RowCountWhy

_DATA = os.path.join(os.path.dirname(__file__), "..", "testdata", "kernels")
_RELEASES = ("0.12.0.1", "0.10.2")


def _files(release: str, n: int, stem: str = "ln_model_a100_n"):
  base = os.path.join(_DATA, release, f"{stem}{n}")
  with open(base + ".hlo.txt", encoding="utf-8") as f:
    hlo = f.read()
  with open(base + ".ptx.txt", encoding="utf-8") as f:
    return hlo, f.read()


def _read(release: str, n: int, stem: str = "ln_model_a100_n"):
  hlo, ptx = _files(release, n, stem)
  return kernels.read_kernels(hlo, n, [ptx], core_count=108)


def _by_name(records):
  return {r.name: r for r in records}


class ReadKernelsTest(parameterized.TestCase):
  @parameterized.parameters(*_RELEASES)
  def test_n8_gemms_and_softmax(self, release):
    records = _read(release, 8)
    self.assertEqual(
      [r.name for r in records],
      [
        "gemm_fusion_dot_general.2",
        "fusion.14",
        "gemm_fusion_dot_general.3",
        "triton_softmax.4",
      ],
    )
    gemm = _by_name(records)["gemm_fusion_dot_general.2"]
    self.assertEqual(gemm.role, Role.CONTRACTION)
    self.assertEqual(gemm.kernel, "gemm_fusion_dot_general_2")
    self.assertEqual(gemm.field("block_k"), "64")
    self.assertEqual(gemm.field("split_k"), "1")
    self.assertEqual(gemm.field("k"), "256")
    self.assertEqual(gemm.field("instruction"), "fma.rn.f32")
    self.assertEqual(gemm.field("algorithm"), "F32_F32_F32")
    self.assertEqual(gemm.field("output_tile"), "8x16")
    self.assertEqual(gemm.row_count, RowCount.DEPENDS)
    # Config, not arithmetic: the signature does not hold the tile.
    self.assertNotIn("8x16", gemm.signature)
    softmax = _by_name(records)["triton_softmax.4"]
    self.assertEqual(softmax.role, Role.REDUCTION)
    self.assertEqual(softmax.field("num_warps"), "2")
    self.assertEqual(softmax.field("rows_per_program"), "1")
    self.assertEqual(softmax.field("reduction_emitter"), "Triton")
    self.assertIn("tile 1024", softmax.field("reduce"))
    self.assertIn("reduce_sum", softmax.ops)
    layernorm = _by_name(records)["fusion.14"]
    self.assertEqual(layernorm.field("output_tile"), "1x32")
    self.assertIn("dims={1} of [N,512]", layernorm.field("reduce"))

  @parameterized.parameters(*_RELEASES)
  def test_n64_split_k_and_warps(self, release):
    records = _by_name(_read(release, 64))
    gemm = records["gemm_fusion_dot"]
    self.assertEqual(gemm.field("split_k"), "2")
    self.assertEqual(gemm.field("k"), "512")
    self.assertEqual(gemm.field("k_per_split"), "256")
    self.assertEqual(gemm.field("block_k"), "128")
    self.assertEqual(records["gemm_fusion_dot_general.2"].field("split_k"), "1")
    self.assertEqual(records["triton_softmax.4"].field("num_warps"), "4")

  @parameterized.parameters(*_RELEASES)
  def test_n1_strength_reduction_and_row_reduction(self, release):
    records = _by_name(_read(release, 1))
    dot = records["input_reduce_fusion.3"]
    self.assertEqual(dot.role, Role.CONTRACTION)
    self.assertIn("multiply+reduce", dot.field("strength_reduction"))
    self.assertEqual(dot.field("reduction_emitter"), "column")
    self.assertEqual(dot.field("reduce"), "dims={0} of [256,512]")
    self.assertEqual(dot.row_count, RowCount.DEPENDS)
    row = records["input_reduce_fusion.1"]
    self.assertEqual(row.role, Role.REDUCTION)
    self.assertEqual(row.field("reduction_emitter"), "row")
    self.assertEqual(row.field("threads_per_row"), "32")
    self.assertEqual(row.field("vector_size"), "2")
    self.assertEqual(row.field("elements_per_thread"), "16")
    self.assertEqual(row.field("rows_per_warp"), "1")
    self.assertEqual(row.field("ptx_shuffles"), "5")
    self.assertEqual(row.field("ptx_loads"), "v2")
    self.assertEqual(row.row_count, RowCount.INDEPENDENT)
    loop = records["loop_multiply_fusion"]
    self.assertEqual(loop.role, Role.ELEMENTWISE)
    self.assertEqual(loop.row_count, RowCount.INDEPENDENT)

  def test_as_dict_is_json(self):
    import json

    record = _read("0.12.0.1", 64)[2]
    data = json.loads(json.dumps(record.as_dict()))
    self.assertEqual(data["arithmetic"]["split_k"], "2")
    self.assertEqual(data["row_count"], "depends on the row count")
    diff = kernels.compare_kernels(_read("0.12.0.1", 8), _read("0.12.0.1", 64))
    self.assertIn("split_k", json.dumps([d.as_dict() for d in diff]))

  def test_bad_row_count(self):
    with self.assertRaises(ValueError):
      kernels.read_kernels("HloModule m\n", 0)


class CompareTest(parameterized.TestCase):
  @parameterized.parameters(*_RELEASES)
  def test_classes(self, release):
    configs = {n: _read(release, n) for n in (1, 2, 8, 64)}
    self.assertEqual(kernel_classes(configs), ((1,), (2, 8), (64,)))

  @parameterized.parameters(*_RELEASES)
  def test_boundary_at_64_names_split_k_and_warps(self, release):
    diffs = kernels.compare_kernels(_read(release, 8), _read(release, 64))
    fields = {(d.a.name, f[0]): (f[1], f[2]) for d in diffs for f in d.fields}
    self.assertEqual(
      fields[("gemm_fusion_dot_general.2", "block_k")], ("64", "128")
    )
    self.assertEqual(
      fields[("gemm_fusion_dot_general.3", "split_k")], ("1", "2")
    )
    self.assertEqual(fields[("triton_softmax.4", "num_warps")], ("2", "4"))

  def test_same_config_no_difference(self):
    a = _read("0.12.0.1", 8)
    self.assertEqual(kernels.compare_kernels(a, a), ())

  def test_n1_kernels_without_counterpart(self):
    diffs = kernels.compare_kernels(_read("0.12.0.1", 1), _read("0.12.0.1", 2))
    unmatched = [d for d in diffs if d.b is None]
    self.assertIn("loop_multiply_fusion", [d.a.name for d in unmatched])

  def test_layernorm_parameter_order_normalised(self):
    # fusion.13(gemm, p3, p2) at n = 2, fusion.14(p3, p2, gemm) at n = 8:
    # the same computation once parameters are named by what they read.
    a = _by_name(_read("0.12.0.1", 2))["fusion.13"]
    b = _by_name(_read("0.12.0.1", 8))["fusion.14"]
    self.assertEqual(a.field("computation"), b.field("computation"))
    self.assertEqual(a.signature, b.signature)
    self.assertNotEqual(a.field("output_tile"), b.field("output_tile"))


class PinTest(absltest.TestCase):
  def test_pinned_gemms_equal_over_n(self):
    # record_pin.py checked all n = 2..64; the fixtures keep 2, 8, 64.
    gemms = {
      n: [
        r
        for r in _read("0.12.0.1", n, "ln_model_a100_pinned_n")
        if r.role is Role.CONTRACTION
      ]
      for n in (2, 8, 64)
    }
    self.assertEqual(kernel_classes(gemms), ((2, 8, 64),))
    for records in gemms.values():
      self.assertEqual([r.field("block_k") for r in records], ["64", "64"])
      self.assertEqual([r.field("split_k") for r in records], ["1", "1"])
      self.assertEqual(
        [r.field("output_tile") for r in records], ["16x16", "16x16"]
      )

  def test_full_pin_every_kernel_equal(self):
    # REDUCTION_PIN_FLAGS too: the layernorm and softmax are XLA row
    # reductions (row rule: 32 threads per row, vector 2, independent of n).
    configs = {
      n: _read("0.12.0.1", n, "ln_model_a100_fullpinned_n") for n in (2, 8, 64)
    }
    self.assertEqual(kernel_classes(configs), ((2, 8, 64),))
    reductions = [
      r for r in configs[64] if r.field("reduction_emitter") is not None
    ]
    self.assertLen(reductions, 4)
    for r in reductions:
      self.assertEqual(r.field("reduction_emitter"), "row")
      self.assertEqual(r.field("threads_per_row"), "32")
      self.assertEqual(r.field("vector_size"), "2")
      self.assertEqual(r.row_count, RowCount.INDEPENDENT)

  def test_pin_file(self):
    with open(
      os.path.join(_DATA, "0.12.0.1", "ln_model_a100_pin.textproto"),
      encoding="utf-8",
    ) as f:
      text = f.read()
    entries = text.count("\nentries {")
    self.assertGreaterEqual(entries, 63 * 2 // 2)
    self.assertEqual(text.count("block_k: 64"), entries)
    self.assertEqual(text.count("backend: TRITON"), entries)

  def test_core_count(self):
    from hloprobe.compile import get_target

    # hloprobe/compile/gpu_specs/a100_sxm_40.txtpb: core_count: 108.
    self.assertEqual(kernel_reader.target_core_count(get_target("a100")), 108)
    self.assertIsNone(kernel_reader.target_core_count(get_target("cpu")))

  def test_target_gives_the_core_count(self):
    from hloprobe.compile import get_target

    hlo, ptx = _files("0.12.0.1", 8)
    by_target = kernels.read_kernels(hlo, 8, [ptx], target=get_target("a100"))
    self.assertEqual(by_target, _read("0.12.0.1", 8))

  def test_refuses_non_compile_only(self):
    from hloprobe.compile import get_target

    with self.assertRaises(TargetError):
      kernels.pin_gemm_configs({}, get_target("cpu"))


_LIB = """HloModule m, entry_computation_layout={(f32[8,64]{1,0}, f32[64,32]{1,0})->f32[8,32]{1,0}}

ENTRY %main (a: f32[8,64], b: f32[64,32]) -> f32[8,32] {
  %a = f32[8,64]{1,0} parameter(0)
  %b = f32[64,32]{1,0} parameter(1)
  %cublas = (f32[8,32]{1,0}, s8[4]{0}) custom-call(%a, %b), custom_call_target="__cublas$lt$matmul", backend_config={"gemm_backend_config":{"selected_algorithm":"-1","alpha_real":1}}
  %r = f32[8,32]{1,0} get-tuple-element(%cublas), index=0
  ROOT %ar = f32[8,32]{1,0} all-reduce(%r), replica_groups={{0,1}}, to_apply=%sum
}
"""

_SUM = """
%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}
"""


class LibraryAndCollectiveTest(absltest.TestCase):
  def test_unknown_without_device(self):
    text = _LIB.replace("\nENTRY", _SUM + "\nENTRY")
    records = _by_name(kernels.read_kernels(text, 8))
    lib = records["cublas"]
    self.assertEqual(lib.role, Role.LIBRARY)
    self.assertEqual(lib.row_count, RowCount.UNKNOWN)
    self.assertEqual(
      lib.field("library"),
      "chosen by the library's per-shape heuristic at run time: unknown "
      "without a device",
    )
    self.assertEqual(lib.emitter, "cuBLASLt (__cublas$lt$matmul)")
    coll = records["ar"]
    self.assertEqual(coll.role, Role.COLLECTIVE)
    self.assertEqual(coll.row_count, RowCount.UNKNOWN)
    self.assertIn("reducer add", coll.field("collective"))


class RecordedFixturesTest(parameterized.TestCase):
  """Other stages' recorded fixtures, read here too."""

  def test_tf32_mma_shape(self):
    # seed_mlp n = 2, DEFAULT precision, a100, jaxlib 0.10.2
    # (tests/ir/testdata/ptx/README.md): the PTX's only mma is
    # `mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32`; the nested dot
    # prints backend_config={"sizes":["16"]}.
    root = os.path.join(os.path.dirname(__file__), "..", "ir", "testdata")
    with open(os.path.join(root, "seed_a100_n2_default.hlo")) as f:
      hlo = f.read()
    with open(
      os.path.join(root, "ptx", "a100_seed_n2_default_gemm_fusion_dot.ptx")
    ) as f:
      ptx = f.read()
    gemm = kernels.read_kernels(hlo, 2, [ptx])[0]
    self.assertEqual(gemm.name, "gemm_fusion_dot")
    self.assertEqual(
      gemm.field("instruction"),
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
    )
    self.assertEqual(gemm.field("algorithm"), "TF32_TF32_F32")
    self.assertEqual(gemm.field("block_k"), "16")
    self.assertEqual(gemm.field("fate"), "Triton gemm")

  @parameterized.parameters(
    ("0.12.0.1", "all-reduce.3", "mesh['axis_0'=8] {'axis_0'}"),
    ("0.10.2", "all-reduce-start", "mesh['axis_0'=1,'axis_1'=8] {'axis_1'}"),
  )
  def test_sharded_all_reduce(self, release, name, groups):
    # tests/testdata/sharded: sharded_matmul over 8 devices, a100; the
    # all-reduce adds the 8 devices' partial sums with to_apply=%add.clone.
    path = os.path.join(
      _DATA, "..", "sharded", release, "a100_all_reduce.hlo.txt"
    )
    with open(path, encoding="utf-8") as f:
      records = _by_name(kernels.read_kernels(f.read(), 8))
    coll = records[name]
    self.assertEqual(coll.role, Role.COLLECTIVE)
    self.assertEqual(
      coll.field("collective"),
      f"all-reduce over replica_groups={groups}, reducer add",
    )
    self.assertTrue(coll.field("partials").startswith("8 partitions"))
    self.assertEqual(coll.row_count, RowCount.UNKNOWN)


class EveryFixtureTest(absltest.TestCase):
  def test_reads_every_recorded_module(self):
    # Every optimized/pass-dump HLO the suite keeps (CPU and compile-only
    # GPUs, both releases): no exception, and every record signs, says
    # whether it depends on the row count, and why.
    import glob

    from hloprobe.errors import HloParseError

    tests = os.path.join(os.path.dirname(__file__), "..")
    # The fuzz fixtures (tests/testdata/fuzz) crash XLA's parser in
    # process by design: module_guard's tests read them.
    paths = sorted(
      p
      for p in set(
        glob.glob(os.path.join(tests, "**", "*.hlo*"), recursive=True)
      )
      if f"{os.sep}testdata{os.sep}fuzz{os.sep}" not in p
    )
    read = 0
    for path in paths:
      with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
      if "HloModule" not in text[:200]:
        continue
      platform = "cpu" if "cpu" in os.path.basename(path) else "cuda"
      try:
        records = kernels.read_kernels(text, 8, platform=platform)
      except HloParseError:
        continue  # not a whole module (a fragment kept for another test)
      read += 1
      for r in records:
        self.assertTrue(r.signature, path)
        self.assertIsInstance(r.row_count_why, RowCountWhy, path)
    self.assertGreater(read, 50)


class ControlFlowTest(parameterized.TestCase):
  @parameterized.parameters(
    ("0.12.0.1", "gemm_fusion_dot_general.1"),
    ("0.10.2", "gemm_fusion_dot_general.0"),
  )
  def test_scan_body_is_walked(self, release, gemm):
    # tests/testdata/compiles/control_flow_scan_a100_n8_bfloat16: a
    # lax.scan of x @ w; the while body holds the Triton gemm, its nested
    # dot printing backend_config={"sizes":["64"]}.
    path = os.path.join(
      _DATA,
      "..",
      "compiles",
      "control_flow_scan_a100_n8_bfloat16",
      f"jaxlib{release}",
      "optimized.hlo",
    )
    with open(path, encoding="utf-8") as f:
      records = _by_name(kernels.read_kernels(f.read(), 8))
    record = records[f"while.5/{gemm}"]
    self.assertEqual(record.role, Role.CONTRACTION)
    self.assertEqual(record.field("block_k"), "64")
    self.assertEqual(record.field("split_k"), "1")
    # The while reaches the ENTRY result; so does its body's gemm.
    self.assertTrue(record.outputs)


# A hand-written module: a batch statistic that feeds the rows (a
# batchnorm's mean over axis 0, subtracted from every row) and a loss
# (the sum of the rows) beside it, as `(loss f32[], rows f32[4,8])`.
_BATCH_STAT = """HloModule bn, entry_computation_layout={(f32[4,8]{1,0})->(f32[], f32[4,8]{1,0})}

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

ENTRY %main (x: f32[4,8]) -> (f32[], f32[4,8]) {
  %x = f32[4,8]{1,0} parameter(0)
  %z = f32[] constant(0)
  %mean = f32[8]{0} reduce(%x, %z), dimensions={0}, to_apply=%add
  %b = f32[4,8]{1,0} broadcast(%mean), dimensions={1}
  %rows = f32[4,8]{1,0} subtract(%x, %b)
  %loss = f32[] reduce(%rows, %z), dimensions={0,1}, to_apply=%add
  ROOT %t = (f32[], f32[4,8]{1,0}) tuple(%loss, %rows)
}
"""


class OutputsTest(parameterized.TestCase):
  """Which output leaves each kernel reaches (`KernelRecord.outputs`), on
  recorded compiles of the
  README's `my_case` (tests/testdata/kernels/record_batch_mean.py).

  Read off the fixtures by hand: the header prints the result
  `(f32[], f32[n,64]{1,0})` (leaf 0 the loss, leaf 1 y); at n = 2 the
  ROOT tuple takes `loop_multiply_fusion` (the loss's `* 1/128`, fed by
  `input_reduce_fusion`, which reduces f32[128], the bitcast of y * y,
  over dimensions={0}: every row of y summed) and
  `gemm_fusion_dot_general.1` (y, which also feeds the loss); at n = 1
  the dot is strength-reduced (`loop_multiply_fusion` then
  `input_reduce_fusion.1`, y bitcast from it).
  """

  @parameterized.parameters(*_RELEASES)
  def test_loss_kernels_reach_only_the_loss(self, release):
    expected = {
      1: {
        "loop_multiply_fusion": (0, 1),
        "input_reduce_fusion.1": (0, 1),
        "input_reduce_fusion": (0,),
        "loop_multiply_fusion.1": (0,),
      },
      2: {
        "gemm_fusion_dot_general.1": (0, 1),
        "input_reduce_fusion": (0,),
        "loop_multiply_fusion": (0,),
      },
    }
    for n, names in expected.items():
      records = _read(release, n, "batch_mean_a100_n")
      self.assertEqual({r.name: r.outputs for r in records}, names)

  def test_a_batch_statistic_feeding_rows_reaches_them(self):
    records = _by_name(kernels.read_kernels(_BATCH_STAT, 4))
    self.assertEqual(records["mean"].outputs, (0, 1))
    self.assertEqual(records["rows"].outputs, (0, 1))
    self.assertEqual(records["loss"].outputs, (0,))


if __name__ == "__main__":
  absltest.main()
