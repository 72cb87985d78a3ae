"""engine/shared: a case's large inputs written once and mapped in each
process, the very bytes made (issue 37: every process held its own copy
of a 12-layer model's 340 MB of weights)."""

from __future__ import annotations

import os
import pickle

import ml_dtypes
import numpy as np
from absl.testing import absltest

from hloprobe.compile import Case
from hloprobe.engine import shared
from hloprobe.runtime import WorkerPool

_BIG = shared.SHARE_FROM_BYTES // 4  # f32 values in one shared leaf


def _inputs():
  g = np.random.default_rng(0)
  x = g.standard_normal((4, _BIG // 4)).astype(np.float32)  # batched, large
  w = {
    "w": g.standard_normal(_BIG).astype(np.float32),  # large
    "b": np.arange(3, dtype=np.float32),  # small: travels in the record
    "k": 7,
  }
  return x, w


class ShareTest(absltest.TestCase):
  def setUp(self):
    super().setUp()
    self.folder = self.create_tempdir().full_path

  def test_round_trip_is_the_same_bytes_mapped_read_only(self):
    full = _inputs()
    handle = shared.share(full, self.folder)
    self.assertIsInstance(handle, shared.SharedInputs)
    files = sorted(os.listdir(self.folder))
    self.assertLen(files, 2)  # x and w["w"]; b and k stay in the record
    self.assertLess(len(pickle.dumps(handle)), 4096)  # not the arrays
    back = shared.resolved(pickle.loads(pickle.dumps(handle)))
    x, w = back
    np.testing.assert_array_equal(x, full[0])
    np.testing.assert_array_equal(w["w"], full[1]["w"])
    np.testing.assert_array_equal(w["b"], full[1]["b"])
    self.assertEqual(w["k"], 7)
    self.assertIs(type(x), np.ndarray)  # a plain array over the mapping
    self.assertFalse(x.flags.writeable)
    base = x.base
    while base is not None and not isinstance(base, np.memmap):
      base = base.base
    self.assertIsInstance(base, np.memmap)  # over the file, not a copy
    # Mapped once per process: a second record of the same files maps
    # nothing new.
    again = shared.resolved(pickle.loads(pickle.dumps(handle)))
    self.assertIs(again[0], x)

  def test_shared_again_writes_nothing_new(self):
    full = _inputs()
    shared.share(full, self.folder)
    stamps = {
      n: os.stat(os.path.join(self.folder, n)).st_mtime_ns
      for n in os.listdir(self.folder)
    }
    shared.share(full, self.folder)
    self.assertEqual(
      stamps,
      {
        n: os.stat(os.path.join(self.folder, n)).st_mtime_ns
        for n in os.listdir(self.folder)
      },
    )

  def test_same_bytes_other_shape_are_other_files(self):
    a = np.zeros(_BIG, np.float32)
    shared.share((a,), self.folder)
    shared.share((a.reshape(2, -1),), self.folder)
    self.assertLen(os.listdir(self.folder), 2)

  def test_small_inputs_none_and_no_folder_pass_as_they_are(self):
    small = (np.ones((2, 3), np.float32),)
    self.assertIs(shared.share(small, self.folder), small)
    self.assertIsNone(shared.share(None, self.folder))
    full = _inputs()
    self.assertIs(shared.share(full, None), full)
    self.assertIs(shared.resolved(full), full)
    self.assertEqual(os.listdir(self.folder), [])

  def test_shapes_serve_the_batch_size_check_mapping_nothing(self):
    case = Case("c", "", lambda x, w: x, _inputs, in_axes=(0, None))
    handle = shared.share(_inputs(), self.folder)
    self.assertEqual(case.full_size(shared.shapes(handle)), 4)

  def test_ml_dtypes_leaves_round_trip(self):
    # .npy writes bfloat16 as void '|V2', and a memoryview of it cannot be
    # cast to bytes: both failed a case with large bfloat16 inputs.
    x = np.arange(1 << 20, dtype=np.float32).astype(ml_dtypes.bfloat16)
    handle = shared.share((x,), self.folder)
    self.assertIsInstance(handle, shared.SharedInputs)
    (back,) = shared.resolved(pickle.loads(pickle.dumps(handle)))
    self.assertEqual(back.dtype, ml_dtypes.bfloat16)
    np.testing.assert_array_equal(back.view(np.uint16), x.view(np.uint16))

  def test_a_file_not_the_leaf_written_is_refused(self):
    handle = shared.share(_inputs(), self.folder)
    name = sorted(os.listdir(self.folder))[0]
    np.save(os.path.join(self.folder, name), np.zeros(3, np.float32))
    shared._MAPPED.clear()
    with self.assertRaisesRegex(ValueError, "not the float"):
      shared.resolved(handle)


class PoolFolderTest(absltest.TestCase):
  def test_made_once_owned_and_removed_on_close(self):
    pool = WorkerPool()
    path = pool.shared_folder()
    self.assertEqual(pool.shared_folder(), path)
    self.assertTrue(os.path.basename(path).startswith("hloprobe-worker-"))
    with open(os.path.join(path, "owner.pid")) as f:
      self.assertEqual(f.read(), str(os.getpid()))
    pool.close()
    self.assertFalse(os.path.exists(path))
    self.assertIsNone(pool.shared_folder())  # closed: none made


if __name__ == "__main__":
  absltest.main()
