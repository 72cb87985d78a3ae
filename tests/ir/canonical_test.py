"""Tests of hloprobe.ir.canonical on real compiled modules and small fixtures."""

from __future__ import annotations

import importlib.util
import json
import os
import random
import re
import subprocess
import sys

import numpy as np
import pytest
import testutil
from absl.testing import absltest, parameterized
from hypothesis import given, settings
from hypothesis import strategies as st

from hloprobe.compile import cases, lowering, targets
from hloprobe.errors import HloParseError
from hloprobe.ir import canonical
from hloprobe.ir.canonical import canonical_hlo, canonical_stablehlo, name_stem
from hloprobe.ir.hlo import parse_hlo_module

_REPO = testutil.ROOT
_CPU = targets.get_target("cpu")


def _compile_seed(n: int, precision: str) -> lowering.CompiledCase:
  case = cases.get_case("seed_mlp")
  return lowering.compile_case(
    case, case.inputs_for(case.make_inputs(), n), precision, _CPU
  )


_SEED = {
  (n, p): _compile_seed(n, p) for n in (1, 2) for p in ("bfloat16", "float32")
}

# A hand-written GPU-style module: metadata, tables, noise and kept
# backend_config keys, a Triton gemm fusion and a cuBLAS custom call.
_GPU_STYLE = """\
HloModule jit_f, is_scheduled=true, entry_computation_layout={(f32[8,16]{1,0}, /*index=1*/f32[16,4]{1,0})->f32[8,4]{1,0}}

FileNames
1 "/home/someone/project/model.py"

FunctionNames
1 "f"

FileLocations
1 {file_name_id=1 function_name_id=1 line=12 end_line=12 column=2 end_column=9}

StackFrames
1 {file_location_id=1 parent_frame_id=1}

%gemm_fusion_dot.7_computation (parameter_0.3: f32[8,16], parameter_1.9: f32[16,4]) -> f32[8,4] {
  %parameter_0.3 = f32[8,16]{1,0} parameter(0)
  %parameter_1.9 = f32[16,4]{1,0} parameter(1)
  ROOT %dot.12 = f32[8,4]{1,0} dot(%parameter_0.3, %parameter_1.9), lhs_contracting_dims={1}, rhs_contracting_dims={0}, operand_precision={high,high}, algorithm=dot_tf32_tf32_f32, metadata={op_name="jit(f)/dot_general" stack_frame_id=1}
}

ENTRY %main.33 (x.1: f32[8,16], w.2: f32[16,4]) -> f32[8,4] {
  %x.1 = f32[8,16]{1,0} parameter(0), metadata={op_name="x"}
  %w.2 = f32[16,4]{1,0} parameter(1), metadata={op_name="w"}
  %gemm_fusion_dot.7 = f32[8,4]{1,0} fusion(%x.1, %w.2), kind=kCustom, calls=%gemm_fusion_dot.7_computation, metadata={op_name="jit(f)/dot_general" stack_frame_id=1}, backend_config={"operation_queue_id":"0","wait_on_operation_queues":[],"fusion_backend_config":{"kind":"__triton_gemm","triton_gemm_config":{"block_m":"16","block_n":"16","block_k":"32","split_k":"1","num_stages":"1","num_warps":"2","num_ctas":"1"}},"force_earliest_schedule":false,"reification_cost":[{"end_to_end_cycles":1.5}],"device_type":"DEVICE_TYPE_INVALID"}
  %custom-call.4 = (f32[8,4]{1,0}, s8[0]{0}) custom-call(%x.1, %w.2), custom_call_target="__cublas$gemm", backend_config={"operation_queue_id":"0","wait_on_operation_queues":[],"gemm_backend_config":{"alpha_real":1,"beta":0,"precision_config":{"operand_precision":["HIGHEST","HIGHEST"],"algorithm":"ALG_UNSET"},"epilogue":"DEFAULT"},"force_earliest_schedule":false}
  %get-tuple-element.2 = f32[8,4]{1,0} get-tuple-element(%custom-call.4), index=0
  ROOT %add.5 = f32[8,4]{1,0} add(%gemm_fusion_dot.7, %get-tuple-element.2), metadata={op_name="jit(f)/add" stack_frame_id=1}
}
"""

_MODEL_SOURCE = """\
import jax.numpy as jnp


def model(x, w1, w2):
  h = jnp.sin(x @ w1)
  return (h @ w2).sum(axis=-1)
"""


def _rename(text: str, seed: int) -> str:
  """Renumbers every HLO name and shuffles non-entry computations."""
  rng = random.Random(seed)
  module = parse_hlo_module(text)
  names = list(module.computations)
  names += [i.name for _, i in module.all_instructions()]
  numbers = rng.sample(range(10 * len(names)), len(names))
  mapping = {
    n: f"{name_stem(n)}.{k}" for n, k in zip(names, numbers, strict=True)
  }
  text = re.sub(r"%([\w.\-]+)", lambda m: "%" + mapping.get(m[1], m[1]), text)
  head, *blocks = text.split("\n\n")
  comps = [b for b in blocks if b.lstrip().startswith("%")]
  rng.shuffle(comps)
  rest = [b for b in blocks if not b.lstrip().startswith("%")]
  tables = [b for b in rest if not b.lstrip().startswith("ENTRY")]
  entry = [b for b in rest if b.lstrip().startswith("ENTRY")]
  return "\n\n".join([head] + tables + comps + entry)


def _load(path: str, name: str):
  spec = importlib.util.spec_from_file_location(name, path)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


class CanonicalHloTest(parameterized.TestCase):
  @parameterized.named_parameters((f"n{n}_{p}", n, p) for (n, p) in _SEED)
  def test_idempotent_on_real_modules(self, n, precision):
    once = canonical_hlo(_SEED[n, precision].optimized_hlo)
    self.assertMultiLineEqual(canonical_hlo(once), once)

  def test_drops_metadata_and_source_tables(self):
    raw = _SEED[1, "bfloat16"].optimized_hlo
    self.assertIn("FileNames", raw)
    self.assertIn("metadata=", raw)
    text = canonical_hlo(raw)
    for gone in (
      "FileNames",
      "StackFrames",
      "metadata=",
      "stack_frame_id",
      ".py",
      "/*index=",
    ):
      self.assertNotIn(gone, text)

  @settings(max_examples=20, deadline=None)
  @given(seed=st.integers(0, 2**32 - 1))
  def test_renaming_and_reordering_changes_nothing(self, seed):
    raw = _SEED[1, "bfloat16"].optimized_hlo
    renamed = _rename(raw, seed)
    self.assertNotEqual(renamed, raw)
    self.assertMultiLineEqual(canonical_hlo(renamed), canonical_hlo(raw))

  def test_gpu_style_module_keeps_numerics_drops_noise(self):
    text = canonical_hlo(_GPU_STYLE)
    for kept in (
      '"kind":"__triton_gemm"',
      '"split_k":"1"',
      '"block_k":"32"',
      "operand_precision={high,high}",
      "algorithm=dot_tf32_tf32_f32",
      'custom_call_target="__cublas$gemm"',
      '"operand_precision":["HIGHEST","HIGHEST"]',
      "kind=kCustom",
      "f32[8,16]{1,0}",
      "calls=%gemm_fusion_dot_computation.0",
    ):
      self.assertIn(kept, text)
    for key in canonical.NOISE_BACKEND_CONFIG_KEYS:
      self.assertNotIn(key, text)
    self.assertNotIn("/home/someone", text)
    self.assertMultiLineEqual(canonical_hlo(text), text)

  def test_a_real_change_survives(self):
    changed = _GPU_STYLE.replace('"block_k":"32"', '"block_k":"64"')
    self.assertNotEqual(canonical_hlo(changed), canonical_hlo(_GPU_STYLE))

  def test_truncated_module_is_an_error(self):
    raw = _SEED[1, "bfloat16"].optimized_hlo
    for cut in (len(raw) // 2, raw.rindex("\n  ROOT")):
      with self.assertRaises(HloParseError):
        canonical_hlo(raw[:cut])


class CanonicalStableHloTest(parameterized.TestCase):
  @parameterized.named_parameters((f"n{n}_{p}", n, p) for (n, p) in _SEED)
  def test_no_locations_and_idempotent(self, n, precision):
    raw = _SEED[n, precision].stablehlo
    self.assertIn("#loc", raw)
    text = canonical_stablehlo(raw)
    self.assertNotIn("loc(", text)
    self.assertNotIn("#loc", text)
    self.assertNotIn(".py", text)
    self.assertIn("stablehlo.dot_general", text)
    self.assertMultiLineEqual(canonical_stablehlo(text), text)

  def test_loc_inside_a_string_is_kept(self):
    line = '%0 = "x.op"() {note = "see loc(here)"} : () -> () loc(#loc3)'
    self.assertEqual(
      canonical_stablehlo(line),
      '%0 = "x.op"() {note = "see loc(here)"} : () -> ()\n',
    )


@pytest.mark.compiles
class RenamingOnlyDifferencesTest(absltest.TestCase):
  def test_same_function_in_files_with_different_paths(self):
    texts = []
    for i, (folder, pad) in enumerate(
      (("a", ""), ("deeper/b", "\n\n# moved\n"))
    ):
      path = os.path.join(
        self.create_tempdir().full_path, folder, f"model_{i}.py"
      )
      os.makedirs(os.path.dirname(path))
      with open(path, "w") as f:
        f.write(pad + _MODEL_SOURCE)
      fn = _load(path, f"model_{i}").model
      case = cases.Case(f"model_{i}", "test model", fn, lambda: ())
      args = tuple(np.ones(s, "float32") for s in ((4, 8), (8, 16), (16, 3)))
      texts.append((path, lowering.compile_case(case, args, "float32", _CPU)))
    (path_a, a), (path_b, b) = texts
    self.assertIn(path_a, a.stablehlo + a.optimized_hlo)
    self.assertIn(path_b, b.stablehlo + b.optimized_hlo)
    self.assertNotEqual(a.optimized_hlo, b.optimized_hlo)
    self.assertMultiLineEqual(
      canonical_hlo(a.optimized_hlo), canonical_hlo(b.optimized_hlo)
    )
    self.assertMultiLineEqual(
      canonical_stablehlo(a.stablehlo), canonical_stablehlo(b.stablehlo)
    )

  def test_same_module_compiled_in_other_processes(self):
    program = (
      "import json, sys\n"
      "from hloprobe.compile import cases, lowering, targets\n"
      "from hloprobe.ir import canonical\n"
      "import jax\n"
      "jax.jit(lambda x: x @ x)(jax.numpy.ones((3, 3)))  # shift global state\n"
      "c = cases.get_case('seed_mlp')\n"
      "cc = lowering.compile_case(c, c.inputs_for(c.make_inputs(), 1), 'bfloat16',"
      " targets.get_target('cpu'))\n"
      "json.dump([canonical.canonical_hlo(cc.optimized_hlo),"
      " canonical.canonical_stablehlo(cc.stablehlo)], sys.stdout)\n"
    )
    env = dict(os.environ, PYTHONPATH=_REPO, JAX_PLATFORMS="cpu")
    here = (
      canonical_hlo(_SEED[1, "bfloat16"].optimized_hlo),
      canonical_stablehlo(_SEED[1, "bfloat16"].stablehlo),
    )
    for _ in range(2):
      out = subprocess.run(
        [sys.executable, "-c", program],
        env=env,
        cwd=self.create_tempdir().full_path,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
      )
      hlo, mlir = json.loads(out.stdout)
      self.assertMultiLineEqual(hlo, here[0])
      self.assertMultiLineEqual(mlir, here[1])


if __name__ == "__main__":
  absltest.main()
