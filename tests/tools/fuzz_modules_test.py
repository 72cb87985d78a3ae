"""hloprobe/tools/fuzz_modules.py, the seeded fuzz of the module readers
(`make fuzz`): a mutation is a pure function of (run seed, index), so a
finding replays from its index; every seed file is read whole by the
reader under test; and a mutated file is classified, in process, as read,
refused in one line, or a finding.

Expected values: the seeds are the lowered program's own texts (the HLO
text must hold the jit's two dots), compared byte for byte with
themselves, never with the fuzz's own counts.
"""

from __future__ import annotations

import os
import tempfile

import pytest
from absl.testing import absltest

from hloprobe.tools import fuzz_modules

pytestmark = pytest.mark.compiles  # lowers the seed program


# Mutations `make test` runs (seed 0, from index 0; issue 41 asks for at
# least 2,000): about 100 a second in one worker once the reader's child
# has read each kind once (its first reads import jax: about 5 s); this
# test took 26 s with 1,000 and 31 s with 2,000 on a loaded machine
# (load 16 on 2 cores). `make fuzz` runs 100,000.
TEST_MUTATIONS = 2000


class FuzzRunTest(absltest.TestCase):
  def test_mutations_find_nothing(self):
    counts, findings = fuzz_modules.fuzz(TEST_MUTATIONS, run_seed=0, jobs=1)
    self.assertEqual(
      [(f.index, f.seed, f.what) for f in findings], [], "fuzz findings"
    )
    self.assertEqual(sum(counts.values()), TEST_MUTATIONS)
    # Both outcomes happen: some mutations still read, most are refused.
    self.assertGreater(counts["read"], 0)
    self.assertGreater(counts["refused"], TEST_MUTATIONS // 2)


class FuzzModulesTest(absltest.TestCase):
  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.seeds = sorted(fuzz_modules.seed_files().items())

  def test_every_module_kind_is_seeded_and_read(self):
    names = {name for name, _ in self.seeds}
    self.assertIn("module.hlo.txt", names)
    self.assertIn("module.export", names)
    hlo = dict(self.seeds)["module.hlo.txt"].decode()
    self.assertEqual(hlo.count(" dot("), 2, hlo)
    with tempfile.TemporaryDirectory() as d:
      for name, data in self.seeds:
        path = os.path.join(d, name)
        with open(path, "wb") as f:
          f.write(data)
        outcome = fuzz_modules.read_outcome(path)
        self.assertEqual(outcome.kind, "read", (name, outcome.what))

  def test_seeds_name_no_checkout_path_nor_caller(self):
    # A finding replays from its index only if the seeds are the same
    # bytes wherever the fuzz runs and whoever asks: `fuzz` and
    # `--replay` call seed_files from different stacks, and jax puts
    # locations in MLIR bytecode and jax.export artifacts.
    def from_another_stack():
      return sorted(fuzz_modules.seed_files().items())

    self.assertEqual(from_another_stack(), self.seeds)
    checkout = os.path.dirname(os.path.dirname(fuzz_modules.__file__))
    for name, data in self.seeds:
      self.assertNotIn(os.path.basename(__file__).encode(), data, name)
      self.assertNotIn(checkout.encode(), data, name)
    self.assertIn(b"fuzz_seed.py", dict(self.seeds)["module.export"])

  def test_a_mutation_is_a_pure_function_of_seed_and_index(self):
    for i in (0, 1, 17, 999):
      first = fuzz_modules.mutate(self.seeds, 3, i)
      self.assertEqual(first, fuzz_modules.mutate(self.seeds, 3, i))
      self.assertEqual(first[0], self.seeds[i % len(self.seeds)][0])
    self.assertNotEqual(
      fuzz_modules.mutate(self.seeds, 3, 5),
      fuzz_modules.mutate(self.seeds, 4, 5),
    )

  def test_a_truncated_hlo_text_is_refused_in_one_line(self):
    data = dict(self.seeds)["module.hlo.txt"]
    with tempfile.TemporaryDirectory() as d:
      path = os.path.join(d, "cut.hlo.txt")
      with open(path, "wb") as f:
        f.write(data[: len(data) // 2])
      outcome = fuzz_modules.read_outcome(path)
    self.assertEqual(outcome.kind, "refused", outcome.what)
    self.assertNotIn("\n", outcome.what)


if __name__ == "__main__":
  absltest.main()
