"""engine/spec.py: the sweep's words checked once. `--batch_sizes` as the
README writes it (lists and ascending ranges, duplicates kept once where
they first appear), and a spec that would sweep nothing refused by name.
Moved from engine/engine_test.py (BatchSizesTest), which sweeps."""

from __future__ import annotations

from absl.testing import absltest, parameterized

from hloprobe import engine
from hloprobe.engine import spec as spec_module
from hloprobe.errors import InvalidArgumentError


class BatchSizesTest(parameterized.TestCase):
  @parameterized.named_parameters(
    ("list_and_range", "1,2,4-9,64,4096", (1, 2, 4, 5, 6, 7, 8, 9, 64, 4096)),
    ("single", "3", (3,)),
    ("duplicates_dropped", "2,1-3", (2, 1, 3)),
  )
  def test_parse(self, text, expected):
    self.assertEqual(engine.parse_batch_sizes(text), expected)

  @parameterized.named_parameters(
    ("zero", "0"),
    ("negative", "-1"),
    ("float", "1.5"),
    ("reversed", "5-2"),
    ("empty_item", "1,,2"),
    ("word", "many"),
  )
  def test_reject(self, text):
    with self.assertRaisesRegex(InvalidArgumentError, "bad batch size"):
      engine.parse_batch_sizes(text)

  def test_ascii_digits_and_the_limits(self):
    for text in ("\u0661", "1048577", "1-4097"):
      with self.assertRaisesRegex(InvalidArgumentError, "bad batch size"):
        engine.parse_batch_sizes(text)
    self.assertLen(engine.parse_batch_sizes("1-4096"), 4096)


class CheckNonemptyTest(absltest.TestCase):
  def test_an_empty_list_is_named(self):
    spec = engine.SweepSpec(("seed_mlp",), (), ("float32",), ())
    with self.assertRaisesRegex(
      InvalidArgumentError,
      "^nothing to sweep: no targets and no batch_sizes; e.g. --case=",
    ):
      spec_module.check_nonempty(spec)
    full = engine.SweepSpec(("seed_mlp",), (1,), ("float32",), ("cpu",))
    self.assertIs(spec_module.check_nonempty(full), full)


if __name__ == "__main__":
  absltest.main()
