"""A sharded Case (issue 24 item 5) as a record: its mesh fields, checked;
picklable (it goes to workers); its device count, and the XLA_FLAGS word
that gives a worker's CPU that many host devices. No XLA."""

from __future__ import annotations

import pickle

import jax
import numpy as np
import pytest
from absl.testing import absltest
from jax.sharding import NamedSharding, PartitionSpec

from hloprobe.compile import CASES, Case, placement
from hloprobe.errors import CaseError


def _inputs():
  return (np.ones((2, 8), np.float32), np.ones((8, 3), np.float32))


def _case(**mesh) -> Case:
  return Case("m", "a matmul", lambda x, w: x @ w, _inputs, **mesh)


class ShardedCaseTest(absltest.TestCase):
  def test_the_builtin_case_is_listed_with_8_devices(self):
    case = CASES["sharded_matmul"]
    self.assertEqual(case.device_count, 8)
    self.assertEqual(case.mesh_axes, ("k",))
    x, w = case.full_inputs()
    # The contracting dimension (256) is what is sharded, 32 per device.
    self.assertEqual(x.shape[1], 256)
    self.assertEqual(case.in_specs[0], PartitionSpec(None, "k"))
    self.assertEqual(case.in_specs[1], PartitionSpec("k", None))

  def test_a_sharded_case_pickles(self):
    case = Case(
      "m",
      "a matmul",
      np.matmul,
      _inputs,
      mesh_shape=(2, 4),
      mesh_axes=("a", "b"),
      in_specs=(PartitionSpec(None, "b"), PartitionSpec("b")),
      out_specs=PartitionSpec("a"),
    )
    back = pickle.loads(pickle.dumps(case))
    self.assertEqual(back.device_count, 8)
    self.assertEqual(back.in_specs, case.in_specs)
    self.assertEqual(back.out_specs, PartitionSpec("a"))

  def test_one_device_without_a_mesh(self):
    self.assertEqual(_case().device_count, 1)

  def test_bad_mesh_fields_are_one_error(self):
    for bad in (
      {"mesh_shape": (8,)},
      {"mesh_shape": (8,), "mesh_axes": ("a", "b")},
      {"mesh_shape": (0,), "mesh_axes": ("a",)},
      {"in_specs": (PartitionSpec("k"), None)},
      {"mesh_axes": ("k",)},
    ):
      with self.subTest(bad=bad), self.assertRaises(CaseError) as e:
        _case(**bad)
      self.assertNotIn("\n", str(e.exception))
      self.assertIn("mesh_", str(e.exception))


@pytest.mark.compiles  # jax.devices() starts XLA's CPU client
class OutSpecsTest(absltest.TestCase):
  def test_a_pytree_of_specs_shards_a_tuple_output(self):
    # A train step returning (w1, w2), as `jax.jit`'s out_shardings takes
    # a tuple for a tuple output: a sharding per leaf, each the case's spec.
    specs = (PartitionSpec(), PartitionSpec("a"))
    case = _case(mesh_shape=(1,), mesh_axes=("a",), out_specs=specs)
    ins, out = placement.shardings(case, _inputs(), jax.devices("cpu")[:1])
    self.assertLen(ins, 2)
    self.assertIsInstance(out, tuple)
    self.assertTrue(all(isinstance(o, NamedSharding) for o in out))
    self.assertEqual(tuple(o.spec for o in out), specs)

  def test_one_spec_is_one_sharding(self):
    case = _case(mesh_shape=(1,), mesh_axes=("a",))
    _, out = placement.shardings(case, _inputs(), jax.devices("cpu")[:1])
    self.assertEqual(out.spec, PartitionSpec())


if __name__ == "__main__":
  absltest.main()
