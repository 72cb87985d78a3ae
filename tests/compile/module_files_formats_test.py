"""Every module-file kind read back from a plain JAX program made here.

One Python process (a `-c` script, `XLA_FLAGS=--xla_dump_to=...` with HLO
text, protos and snapshots) runs a three-dot program on the CPU and writes
every kind of file a bug report attaches: the dump's
`*.before_optimizations.txt`, `*.cpu_after_optimizations.txt`, `*.hlo.pb`
and `*.snapshot.*.pb`, the program's own StableHLO (`Lowered.as_text()`),
its MLIR bytecode, its StableHLO portable artifact and its `jax.export`
artifact; the dump's module proto is printed in protobuf text format here. The independent source is the program's own StableHLO and
arguments: every file must read back to the same entry parameters and the
same number of `stablehlo.dot_general` ops (counted in the test by a
regex), and XLA's snapshot to the very arguments and result (bit-equal).
"""

from __future__ import annotations

import glob
import os
import pickle
import re
import subprocess
import sys
import tempfile
import textwrap

import ml_dtypes
import numpy as np
import pytest
from absl.testing import absltest, parameterized
from google.protobuf import message_factory, text_format

from hloprobe import ir, private_api
from hloprobe.compile.module_files import read_module_file, unknown_custom_calls
from hloprobe.ir import proto_wire
from hloprobe.ir.xla_proto import snapshot_bytes

pytestmark = pytest.mark.compiles

_PROGRAM = textwrap.dedent("""
  import io, json, os, sys
  import numpy as np, ml_dtypes, jax, jax.numpy as jnp
  from jaxlib.mlir.dialects import stablehlo
  out = sys.argv[1]

  def f(x, w, v):
    h = jnp.tanh(x @ w)
    return h @ v.astype(jnp.float32), jnp.einsum("bi,bi->b", x, x)

  g = np.random.default_rng(7)
  x = g.standard_normal((4, 3)).astype(np.float32)
  w = g.standard_normal((3, 5)).astype(np.float32)
  v = g.standard_normal((5, 2)).astype(ml_dtypes.bfloat16)
  y, z = jax.jit(f)(x, w, v)
  lowered = jax.jit(f).lower(x, w, v)
  text = lowered.as_text()
  open(os.path.join(out, "program.mlir"), "w").write(text)
  buf = io.BytesIO()
  lowered.compiler_ir("stablehlo").operation.write_bytecode(buf)
  open(os.path.join(out, "program.mlirbc"), "wb").write(buf.getvalue())
  open(os.path.join(out, "program.vhlo"), "wb").write(
    stablehlo.serialize_portable_artifact_str(
      text, stablehlo.get_minimum_version()))
  open(os.path.join(out, "program.export"), "wb").write(
    jax.export.export(jax.jit(f))(x, w, v).serialize())
  np.savez(os.path.join(out, "values.npz"), x=x, w=w,
           v=v.view(np.uint16), y=np.asarray(y), z=np.asarray(z))
""")
# The program's entry parameters, as its own code declares them.
_PARAMETERS = (((4, 3), "f32"), ((3, 5), "f32"), ((5, 2), "bf16"))
_DOT_GENERAL = re.compile(r"\bstablehlo\.dot_general\b")


def setUpModule():
  global _DIR, _FILES, _VALUES, _PROGRAM_DOTS
  _DIR = tempfile.mkdtemp(prefix="modfile-formats-")
  dump = os.path.join(_DIR, "dump")
  env = dict(
    os.environ,
    JAX_PLATFORMS="cpu",
    XLA_FLAGS=f"--xla_dump_to={dump} --xla_dump_hlo_as_text "
    "--xla_dump_hlo_as_proto --xla_dump_hlo_snapshots",
  )
  subprocess.run(
    [sys.executable, "-c", _PROGRAM, _DIR],
    env=env,
    check=True,
    capture_output=True,
    timeout=300,
  )

  def one(pattern):
    (found,) = glob.glob(os.path.join(dump, f"*jit_f*{pattern}"))
    return found

  _FILES = {
    "before_txt": one(".before_optimizations.txt"),
    "after_txt": one(".cpu_after_optimizations.txt"),
    "before_pb": one(".before_optimizations.hlo.pb"),
    "snapshot": one(".snapshot.*.pb"),
    "mlir": os.path.join(_DIR, "program.mlir"),
    "mlirbc": os.path.join(_DIR, "program.mlirbc"),
    "vhlo": os.path.join(_DIR, "program.vhlo"),
    "export": os.path.join(_DIR, "program.export"),
  }
  _FILES["pbtxt"] = os.path.join(_DIR, "module.pbtxt")
  with open(_FILES["before_pb"], "rb") as f, open(_FILES["pbtxt"], "w") as t:
    t.write(_as_text_format(f.read()))
  with np.load(os.path.join(_DIR, "values.npz")) as z:
    _VALUES = {k: z[k] for k in z.files}
  _VALUES["v"] = _VALUES["v"].view(ml_dtypes.bfloat16)
  with open(_FILES["mlir"]) as f:
    _PROGRAM_DOTS = len(_DOT_GENERAL.findall(f.read()))


def _as_text_format(hlo_proto: bytes) -> str:
  """The HloModuleProto inside a dump's HloProto in protobuf text format,
  printed by protobuf with XLA's schema (as jaxlib embeds it)."""
  pool = proto_wire.xla_schema(private_api.jaxlib_embedded)
  get = lambda name: message_factory.GetMessageClass(
    pool.FindMessageTypeByName(name)
  )
  module = get("xla.HloProto").FromString(hlo_proto).hlo_module
  return text_format.MessageToString(module)


class FormatsTest(parameterized.TestCase):
  def test_the_program_has_three_dots(self):
    self.assertEqual(_PROGRAM_DOTS, 3)

  @parameterized.named_parameters(
    ("hlo_text", "before_txt", "hlo_text"),
    ("hlo_proto", "before_pb", "hlo_proto"),
    ("hlo_proto_text", "pbtxt", "hlo_proto_text"),
    ("stablehlo_text", "mlir", "stablehlo_text"),
    ("stablehlo_bytecode", "mlirbc", "stablehlo_bytecode"),
    ("portable_artifact", "vhlo", "stablehlo_bytecode"),
    ("jax_export", "export", "jax_export"),
  )
  def test_reads_back_to_the_programs_sites(self, key, kind):
    mf = read_module_file(_FILES[key])
    self.assertEqual(mf.kind, kind)
    self.assertEqual(mf.name, "jit_f")
    self.assertEqual(mf.parameters, _PARAMETERS)
    self.assertFalse(mf.optimized)
    self.assertEqual(len(_DOT_GENERAL.findall(mf.stablehlo)), _PROGRAM_DOTS)
    self.assertNotIn("stablehlo.dot ", mf.stablehlo)
    self.assertIsNone(mf.arguments)
    self.assertEqual(mf.hlo_text is not None, kind.startswith("hlo"))
    self.assertEqual(unknown_custom_calls(mf), ())
    again = pickle.loads(pickle.dumps(mf))
    self.assertEqual(again.stablehlo, mf.stablehlo)

  def test_hlo_text_keeps_the_source_lines(self):
    mf = read_module_file(_FILES["before_txt"])
    self.assertTrue(mf.hlo_text.startswith("HloModule jit_f"))
    self.assertIn('"jit(f)/dot_general"', mf.stablehlo)

  def test_after_optimizations_is_optimized(self):
    mf = read_module_file(_FILES["after_txt"])
    self.assertEqual((mf.kind, mf.optimized), ("hlo_text", True))
    self.assertEqual(mf.parameters, _PARAMETERS)

  def test_xlas_own_snapshot_gives_its_arguments_and_result_bit_equal(self):
    mf = read_module_file(_FILES["snapshot"])
    self.assertEqual(mf.kind, "hlo_snapshot")
    self.assertTrue(mf.optimized)  # XLA:CPU snapshots its optimized module
    self.assertEqual(mf.parameters, _PARAMETERS)
    for got, want in zip(mf.arguments, (_VALUES[k] for k in "xwv")):
      self.assertEqual(got.dtype, want.dtype)
      np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
    self.assertLen(mf.result, 2)
    for got, want in zip(mf.result, (_VALUES["y"], _VALUES["z"])):
      np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))

  def test_a_snapshot_this_writer_makes_reads_back(self):
    """An unoptimized module's snapshot, made by `ir.snapshot_bytes` from
    the dump's module proto and the program's arguments."""
    with open(_FILES["before_pb"], "rb") as f:
      proto = ir.read_proto_file(f.read()).module_proto
    args = (_VALUES["x"], _VALUES["w"], _VALUES["v"])
    path = os.path.join(_DIR, "mine.snapshot.pb")
    with open(path, "wb") as f:
      f.write(snapshot_bytes(proto, args, (_VALUES["y"], _VALUES["z"])))
    mf = read_module_file(path)
    self.assertEqual((mf.kind, mf.optimized), ("hlo_snapshot", False))
    self.assertEqual(len(_DOT_GENERAL.findall(mf.stablehlo)), _PROGRAM_DOTS)
    for got, want in zip(mf.arguments, args):
      np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


if __name__ == "__main__":
  absltest.main()
