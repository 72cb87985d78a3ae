"""Issue 27 item 1: the record cache is data, not code.

A planted pickle -- under a record's own key, in a folder anyone can write
-- does not run when hloprobe reads the cache; a file that names a type,
a dtype or fields of its own choosing is a miss with a warning; records
written and read back are equal to what was written (the dataclasses,
enums, tuples, frozensets and numpy arrays a sweep stores, bfloat16
included), and a flipped byte fails the per-record sha256.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import pickle
import stat

import ml_dtypes
import numpy as np
import recorded
from absl.testing import absltest

from hloprobe.ir import Precision
from hloprobe.runtime import cache, record_file

_KEY = "ab" + "0" * 62


class _Payload:
  """A pickle that, when loaded, creates the file `marker`."""

  def __init__(self, marker: str):
    self.marker = marker

  def __reduce__(self):
    return (open, (self.marker, "w"))


def _forge(tree, arrays=None) -> bytes:
  """A well-formed record file (valid hash) holding the JSON `tree`."""
  named = {f"a{i}": a for i, a in enumerate(arrays or [])}
  named["record.json"] = np.frombuffer(json.dumps(tree).encode(), np.uint8)
  buffer = io.BytesIO()
  np.savez(buffer, **named)
  payload = buffer.getvalue()
  digest = record_file.hashlib.sha256(payload).hexdigest()
  return b"hloprobe-record 2 sha256=" + digest.encode() + b"\n" + payload


class PlantedPickleTest(absltest.TestCase):
  def setUp(self):
    super().setUp()
    self.folder = self.create_tempdir().full_path
    self.marker = os.path.join(self.create_tempdir().full_path, "ran")
    self.warnings: list[str] = []
    self.store = cache.RecordCache(self.folder, self.warnings.append)
    shard = os.path.dirname(self.store._path(_KEY))
    os.makedirs(shard)
    for d in (self.folder, os.path.join(self.folder, "records"), shard):
      os.chmod(d, 0o777)  # group- and other-writable: anyone plants here

  def _plant(self, name: str, data: bytes) -> str:
    path = os.path.join(os.path.dirname(self.store._path(_KEY)), name)
    with open(path, "wb") as f:
      f.write(data)
    return path

  def test_a_planted_pickle_does_not_run(self):
    bomb = pickle.dumps(_Payload(self.marker))
    # where this release reads its entry, and where releases before it did
    self._plant(_KEY + ".record", bomb)
    self._plant(_KEY + ".pkl", bomb)
    self.assertTrue(stat.S_IMODE(os.stat(self.folder).st_mode) & stat.S_IWGRP)
    self.assertIsNone(self.store.get(_KEY))
    self.assertFalse(os.path.exists(self.marker), "the pickle ran")
    self.assertLen(self.warnings, 1)
    self.assertIn("not an hloprobe record file", self.warnings[0])
    # the old entry counts for the bound and goes on eviction
    self.assertEqual(self.store.usage().entries, 2)
    self.store.clear()
    self.assertEqual(self.store.usage().entries, 0)

  def test_a_pickle_behind_a_valid_header_does_not_run(self):
    bomb = pickle.dumps(_Payload(self.marker))
    digest = record_file.hashlib.sha256(bomb).hexdigest().encode()
    self._plant(
      _KEY + ".record", b"hloprobe-record 2 sha256=" + digest + b"\n" + bomb
    )
    self.assertIsNone(self.store.get(_KEY))
    self.assertFalse(os.path.exists(self.marker), "the pickle ran")
    self.assertIn("malformed", self.warnings[0])

  def test_forged_types_and_dtypes_are_refused(self):
    forged = {
      "os.system": {"t": "enum", "type": "os:system", "name": "x"},
      "not a dataclass": {
        "t": "dataclass",
        "type": "hloprobe.runtime.cache:RecordCache",
        "fields": {},
      },
      "a dunder": {
        "t": "dataclass",
        "type": "hloprobe.records:__class__",
        "fields": {},
      },
      "fields not the class's": {
        "t": "dataclass",
        "type": "hloprobe.runtime.cache:CacheUsage",
        "fields": {"directory": "d", "entries": 1},
      },
      "an object dtype": {
        "t": "array",
        "index": 0,
        "dtype": "O",
        "shape": [1],
        "scalar": False,
      },
      "an unknown node": {"t": "eval", "items": []},
    }
    for why, tree in forged.items():
      with self.subTest(why):
        self.warnings.clear()
        self._plant(_KEY + ".record", _forge(tree, [np.zeros(8, np.uint8)]))
        self.assertIsNone(self.store.get(_KEY))
        self.assertLen(self.warnings, 1)
        self.assertIn("unreadable cache entry", self.warnings[0])

  def test_a_compressed_member_is_refused(self):
    named = {"record.json": np.frombuffer(b"null", np.uint8)}
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **named)
    payload = buffer.getvalue()
    digest = record_file.hashlib.sha256(payload).hexdigest().encode()
    header = b"hloprobe-record 2 sha256=" + digest + b"\n"
    self._plant(_KEY + ".record", header + payload)
    self.assertIsNone(self.store.get(_KEY))
    self.assertIn("compressed", self.warnings[0])

  def test_a_flipped_byte_is_a_miss_with_a_warning(self):
    self.store.put(_KEY, ("kept", np.arange(4.0)))
    path = self.store._path(_KEY)
    with open(path, "rb") as f:
      data = bytearray(f.read())
    data[-40] ^= 1
    with open(path, "wb") as f:
      f.write(data)
    self.assertIsNone(self.store.get(_KEY))
    self.assertIn("sha256 does not match", self.warnings[0])
    self.store.put(_KEY, ("again",))  # rewritten whole
    self.assertEqual(self.store.get(_KEY), ("again",))

  def test_a_value_the_format_cannot_hold_is_not_written(self):
    self.store.put(_KEY, (lambda: 0,))
    self.assertIn("cannot store a function", self.warnings[0])
    self.assertIsNone(self.store.get(_KEY))
    self.assertEqual(self.store.usage().entries, 0)


class RoundTripTest(absltest.TestCase):
  def _round_trip(self, value):
    f = io.BytesIO()
    record_file.dump_record(value, f)
    return record_file.load_record(f.getvalue())

  def test_a_recorded_config_result(self):
    # A100 n=2 bfloat16 (jaxlib 0.12.0.1): Triton gemm fates, TensorTypes,
    # a Target, Precision and Fate enums, tuples of SiteFate records.
    result = recorded.config_result(recorded.load("seed_a100_n2_bfloat16"))
    back = self._round_trip(result)
    self.assertEqual(back, result)
    self.assertIs(type(back.config.precision), type(result.config.precision))

  def test_arrays_scalars_and_containers(self):
    bf16 = np.array([[1.5, -2.0], [np.inf, 3.0]], ml_dtypes.bfloat16)
    value = {
      "bf16": bf16,
      (1, "k"): frozenset({2, 3}),
      Precision("highest"): [np.float32(0.25), np.int8(-3), None, b"\0x"],
      "empty": np.zeros((0, 3), np.complex64),
      "nan": float("nan"),
      "complex": complex(1.5, -0.0),
    }
    back = self._round_trip(value)
    self.assertEqual(back["bf16"].dtype, ml_dtypes.bfloat16)
    np.testing.assert_array_equal(back["bf16"], bf16)
    self.assertEqual(back[(1, "k")], frozenset({2, 3}))
    scalars = back[Precision("highest")]
    self.assertEqual([type(v) for v in scalars[:2]], [np.float32, np.int8])
    self.assertEqual(scalars[2:], [None, b"\0x"])
    self.assertEqual(back["empty"].shape, (0, 3))
    self.assertEqual(back["empty"].dtype, np.complex64)
    self.assertTrue(np.isnan(back["nan"]))
    self.assertEqual(repr(back["complex"]), "(1.5-0j)")

  def test_a_dataclass_is_rebuilt_without_its_init(self):
    usage = cache.CacheUsage("d", 2, 3)
    calls = []
    real_init = cache.CacheUsage.__init__

    def counting(self, *a, **k):
      calls.append(a)
      real_init(self, *a, **k)

    cache.CacheUsage.__init__ = counting
    try:
      back = self._round_trip(usage)
    finally:
      cache.CacheUsage.__init__ = real_init
    self.assertEqual(dataclasses.astuple(back), ("d", 2, 3))
    self.assertEqual(calls, [])


if __name__ == "__main__":
  absltest.main()
