"""Per-device execution of SPMD-partitioned modules (`execute.spmd`, issue
40 item 2): each device's shard, collectives across the devices' runs, the
output shards joined.

Expected values: numpy (float64 products and sums of the inputs written
here; exact small-integer sums for the collectives), and XLA's iota
replica groups as xla/hlo/ir/tile_assignment.h (`IotaTileAssignment`:
iota over `dims`, transposed by `perm`, reshaped to the group shape)
defines them, worked out by hand. The 8-device programs compile in a child
with XLA_FLAGS=--xla_force_host_platform_device_count=8 (marked
`compiles`); the handwritten 2-device module needs no compile.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap

import numpy as np
import pytest
from absl.testing import absltest

from hloprobe.execute.spmd import (
  MeshSharding,
  execute_partitioned,
  partition_count,
  program_shardings,
  replica_groups,
  shard_indices,
)
from hloprobe.ir import parse_hlo_module

_ROOT = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir)

_TWO = """\
HloModule two, num_partitions=2

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}

ENTRY %main (p: f32[2,4]) -> (f32[2,4], f32[4,4], f32[1,4], f32[2,4], u32[1]) {
  %p = f32[2,4]{1,0} parameter(0)
  %ar = f32[2,4]{1,0} all-reduce(%p), channel_id=1, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=%add
  %ag = f32[4,4]{1,0} all-gather(%p), channel_id=2, replica_groups=[1,2]<=[2], dimensions={0}, use_global_device_ids=true
  %rs = f32[1,4]{1,0} reduce-scatter(%p), channel_id=3, replica_groups={{0,1}}, dimensions={0}, use_global_device_ids=true, to_apply=%add
  %cp = f32[2,4]{1,0} collective-permute(%p), channel_id=4, source_target_pairs={{0,1},{1,0}}
  %id = u32[] partition-id()
  %idb = u32[1]{0} broadcast(%id), dimensions={}
  ROOT %t = (f32[2,4]{1,0}, f32[4,4]{1,0}, f32[1,4]{1,0}, f32[2,4]{1,0}, u32[1]{0}) tuple(%ar, %ag, %rs, %cp, %idb)
}
"""


class ReplicaGroupsTest(absltest.TestCase):
  def test_the_forms(self):
    self.assertEqual(replica_groups("{}", 4), [[0, 1, 2, 3]])
    self.assertEqual(replica_groups("{{0,2},{1,3}}", 4), [[0, 2], [1, 3]])
    # iota(8) as [4,2], transposed (1,0): [[0,2,4,6],[1,3,5,7]].
    self.assertEqual(
      replica_groups("[2,4]<=[4,2]T(1,0)", 8), [[0, 2, 4, 6], [1, 3, 5, 7]]
    )
    # A 2x4 mesh in iota order, grouped along 'b' (the rows) or 'a'.
    mesh = "mesh['a'=2,'b'=4] {'b'}"
    self.assertEqual(replica_groups(mesh, 8), [[0, 1, 2, 3], [4, 5, 6, 7]])
    mesh = "mesh['a'=2,'b'=4] {'a'}"
    self.assertEqual(replica_groups(mesh, 8), [[0, 4], [1, 5], [2, 6], [3, 7]])


# jax's lowering of `jit(f, in_shardings=(P(None, "k"),))` (a Sharding
# custom call on the parameter) and of a shard_map (Shardy's
# GlobalToLocalShape / LocalToGlobalShape), cut down.
_LOWERED = """\
HloModule jit_f, frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<["k"=8]>}}

ENTRY %main (a: f32[2,16], b: f32[16,4]) -> f32[2,4] {
  %a = f32[2,16]{1,0} parameter(0)
  %cc = f32[2,16]{1,0} custom-call(%a), custom_call_target="Sharding", sharding={devices=[1,8]<=[8]}
  %b = f32[16,4]{1,0} parameter(1)
  %sm = (f32[16,4]{1,0}) custom-call(%b), custom_call_target="xla.sdy.GlobalToLocalShape", frontend_attributes={xla.sdy.in_shardings="#sdy.sharding_per_value<[<@mesh, [{\\"k\\"}, {}]>]>"}
  %d = f32[2,4]{1,0} dot(%cc, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %out = f32[2,4]{1,0} custom-call(%d), custom_call_target="Sharding", sharding={replicated}
}
"""


class ShardingsTest(absltest.TestCase):
  def test_tiled_shardings(self):
    # [2,1,4] tiles, the last replicated: iota(8) as [2,1,4], so devices
    # 0-3 hold rows 0:2 and devices 4-7 rows 2:4, every column.
    found = shard_indices(
      "{devices=[2,1,4]<=[8] last_tile_dim_replicate}", (4, 16), 8
    )
    self.assertEqual(found[3], (slice(0, 2), slice(0, 16)))
    self.assertEqual(found[4], (slice(2, 4), slice(0, 16)))
    # An explicit list: tile 0 (columns 0:3) on device 1.
    found = shard_indices("{devices=[1,2]1,0}", (2, 6), 2)
    self.assertEqual(
      found, [(slice(0, 2), slice(3, 6)), (slice(0, 2), slice(0, 3))]
    )
    with self.assertRaisesRegex(Exception, "padded"):
      shard_indices("{devices=[1,8]<=[8]}", (2, 12), 8)

  def test_a_mesh_sharding_cuts_over_axes_major_first(self):
    # Mesh a=2, b=4; dimension 0 split over (a, b): device p = 4 a + b
    # holds block a*4 + b, i.e. block p, of 8.
    spec = MeshSharding((("a", "b"),), (2, 4), ("a", "b"))
    self.assertEqual(shard_indices(spec, (16,), 8)[5], (slice(10, 12),))
    # Split over (b, a): device 5 (a 1, b 1) holds block 1*2 + 1 = 3.
    spec = MeshSharding((("b", "a"),), (2, 4), ("a", "b"))
    self.assertEqual(shard_indices(spec, (16,), 8)[5], (slice(6, 8),))

  def test_the_program_s_shardings(self):
    ins, outs = program_shardings(parse_hlo_module(_LOWERED))
    self.assertEqual(ins[0], "{devices=[1,8]<=[8]}")
    self.assertEqual(ins[1], MeshSharding((("k",), ()), (8,), ("k",)))
    self.assertEqual(outs, ["{replicated}"])


class TwoDevicesTest(absltest.TestCase):
  def test_collectives_of_a_handwritten_module(self):
    module = parse_hlo_module(_TWO)
    self.assertEqual(partition_count(module), 2)
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    rows = "{devices=[2,1]<=[2]}"  # device d: rows 2d:2d+2
    shapes = [(4, 4), (8, 4), (2, 4), (4, 4), (2,)]
    outs = [rows] * 4 + ["{devices=[2]<=[2]}"]
    ex = execute_partitioned(module, [x], [rows], outs, shapes)
    self.assertEqual(ex.not_executed, ())
    ar, ag, rs, cp, pid = ex.outputs
    total = x[:2] + x[2:]  # numpy: the two devices' shards summed
    np.testing.assert_array_equal(ar, np.concatenate([total, total]))
    np.testing.assert_array_equal(ag, np.concatenate([x, x]))
    np.testing.assert_array_equal(rs, total)
    np.testing.assert_array_equal(cp, np.concatenate([x[2:], x[:2]]))
    np.testing.assert_array_equal(pid, [0, 1])

  def test_a_device_that_cannot_compute_names_it_and_nobody_hangs(self):
    text = _TWO.replace("%id = u32[] partition-id()", "%id = u32[] rng-x()")
    module = parse_hlo_module(text)
    x = np.zeros((4, 4), np.float32)
    rows = "{devices=[2,1]<=[2]}"
    shapes = [(4, 4), (8, 4), (2, 4), (4, 4), (2,)]
    outs = [rows] * 4 + ["{devices=[2]<=[2]}"]
    ex = execute_partitioned(module, [x], [rows], outs, shapes)
    self.assertIsNone(ex.outputs)
    self.assertEqual([n.instruction for n in ex.not_executed], ["id"])

  def test_a_sharding_that_does_not_give_the_module_s_shapes_is_named(self):
    module = parse_hlo_module(_TWO)
    x = np.zeros((4, 4), np.float32)
    shapes = [(4, 4), (8, 4), (2, 4), (4, 4), (2,)]
    with self.assertRaisesRegex(Exception, "parameter 0: .*propagation"):
      execute_partitioned(module, [x], [None], [None] * 5, shapes)


_CHILD = textwrap.dedent(
  """
  import os, sys
  os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
  import jax, jax.numpy as jnp, numpy as np
  from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
  from hloprobe.execute.spmd import execute_partitioned
  from hloprobe.ir import parse_hlo_module

  mesh = Mesh(np.array(jax.devices()[:8]), ("x",))
  S = lambda *spec: NamedSharding(mesh, P(*spec))
  # A PartitionSpec as execute_partitioned takes it: (axes, sizes, names).
  M = lambda s: (tuple(() if e is None else (e,) for e in s.spec), (8,),
                 ("x",))
  a, b = (np.load(sys.argv[1])[k] for k in ("a", "b"))

  def shmap(a, b):
    body = lambda x, y: jax.lax.psum(x @ y, "x")
    return jax.shard_map(body, mesh=mesh, in_specs=(P(None, "x"),
      P("x", None)), out_specs=P())(a, b)

  programs = {
    "allreduce": (lambda a, b: jnp.tanh(a @ b) + 1.0,
                  (S(None, "x"), S("x", None)), S("x", None)),
    "allgather": (lambda a, b: jnp.sin(a) @ b, (S("x", None), S()), S()),
    "shard_map": (shmap, (S(None, "x"), S("x", None)), S()),
  }
  out = {}
  for name, (fn, ins, outs) in programs.items():
    f = jax.jit(fn, in_shardings=ins, out_shardings=outs)
    module = parse_hlo_module(f.lower(a, b).compile().as_text())
    shape = jax.eval_shape(fn, a, b).shape
    for widen in (True, False):
      ex = execute_partitioned(module, [a, b], [M(s) for s in ins],
                               [M(outs)], [shape], widen=widen)
      assert ex.outputs is not None, (name, ex.not_executed)
      out[name + ("_f64" if widen else "_f32")] = ex.outputs[0]
    ops = {i.opcode for c in module.computations.values()
           for i in c.instructions}
    out[name + "_collectives"] = np.array(sorted(
      o for o in ops if o.startswith(("all-", "reduce-scatter", "coll"))))
  np.savez(sys.argv[2], **out)
  """
)


@pytest.mark.compiles
class EightDevicesTest(absltest.TestCase):
  """Three 8-device programs (an all-reduce of K-sharded partial products,
  an all-gather, a shard_map psum), executed per device in float64 and
  in f32, against numpy float64."""

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    g = np.random.default_rng(40)
    cls.a = g.standard_normal((16, 1024)).astype(np.float32)
    cls.b = g.standard_normal((1024, 8)).astype(np.float32)
    with tempfile.TemporaryDirectory() as tmp:
      inputs = os.path.join(tmp, "in.npz")
      found = os.path.join(tmp, "out.npz")
      np.savez(inputs, a=cls.a, b=cls.b)
      env = dict(os.environ, PYTHONPATH=os.path.abspath(_ROOT))
      env.pop("XLA_FLAGS", None)
      done = subprocess.run(
        [sys.executable, "-c", _CHILD, inputs, found],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
      )
      if done.returncode:
        raise AssertionError(done.stderr[-3000:])
      with np.load(found) as d:
        cls.out = {k: d[k] for k in d.files}

  def _check(self, name, ref, collective):
    self.assertIn(collective, self.out[name + "_collectives"].tolist())
    # float64 run: the devices' partial sums add in another order than
    # numpy's, by far less than 1e-12 at these sizes.
    np.testing.assert_allclose(self.out[name + "_f64"], ref, atol=1e-11)
    # f32 run: within Higham's gamma_K |a||b| (K = 1024 plus the 7
    # additions of the partial sums), u = 2^-24.
    a, b = self.a.astype(np.float64), self.b.astype(np.float64)
    k = 1024 + 7
    u = 2.0**-24
    bound = k * u / (1 - k * u) * (np.abs(a) @ np.abs(b)).max()
    self.assertLess(np.abs(self.out[name + "_f32"] - ref).max(), bound)

  def test_all_reduce_of_k_sharded_products(self):
    a, b = self.a.astype(np.float64), self.b.astype(np.float64)
    self._check("allreduce", np.tanh(a @ b) + 1.0, "all-reduce")

  def test_all_gather_of_row_shards(self):
    a, b = self.a.astype(np.float64), self.b.astype(np.float64)
    self._check("allgather", np.sin(a) @ b, "all-gather")

  def test_shard_map_psum(self):
    a, b = self.a.astype(np.float64), self.b.astype(np.float64)
    self._check("shard_map", a @ b, "all-reduce")


if __name__ == "__main__":
  absltest.main()
