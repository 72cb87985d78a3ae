"""XLA's own HLO parser against the text reader, on every recorded module.

`hlo.parse_hlo_module` takes computations, instructions, opcodes and
operands from XLA's parser (`private_api.xla_hlo_structure`) and the rest
from the text; `hlo_text.parse_text_module` reads everything from the text
(the fallback). Both must give equal records, in order, on the recorded
HLO of tests/*/testdata (jaxlib 0.10.2, 0.11.2, 0.12.0.1) and the goldens.
"""

from __future__ import annotations

import dataclasses
import functools
import glob
import os

import testutil
from absl.testing import absltest, parameterized

from hloprobe import private_api
from hloprobe.errors import HloParseError
from hloprobe.ir import hlo, hlo_text

_MINIMAL = """HloModule m

ENTRY %main (x: f32[2]) -> f32[2] {
  ROOT %x = f32[2]{0} parameter(0)
}
"""
# Opcodes whose spelling is not their enum's (kExp, kSin), a custom call,
# a tuple shape and a tiled layout before the opcode.
_SPELLINGS = """HloModule m

ENTRY %main (x: f32[8,128]) -> (f32[8,128], f32[8,128]) {
  %x = f32[8,128]{1,0:T(8,128)} parameter(0)
  %e = f32[8,128]{1,0} exponential(%x)
  %s = f32[8,128]{1,0} sine(%e)
  %c = f32[8,128]{1,0} custom-call(%s), custom_call_target="foo"
  ROOT %t = (f32[8,128]{1,0}, f32[8,128]{1,0}) tuple(%c, %e)
}
"""
_COMPACT = """HloModule m

%body (p: (s32[], (f32[2]{0}, f32[3]{0}))) -> f32[2] {
  %p = (s32[], (f32[2]{0}, f32[3]{0})) parameter(0)
  %n = f32[2]{0} negate(%p#1#0)
  ROOT %a = f32[2]{0} add(%n, %p#1#0)
}

ENTRY %main (x: f32[2]) -> f32[2] {
  ROOT %x = f32[2]{0} parameter(0)
}
"""
_UNKNOWN_FRAME = """HloModule m

ENTRY %main (x: f32[2]) -> f32[2] {
  ROOT %x = f32[2]{0} parameter(0), metadata={op_name="x" stack_frame_id=3}
}
"""


def _recorded_modules() -> list[tuple[str, str]]:
  """(path relative to the checkout, HLO text) of every recorded module:
  tests/*/testdata .hlo/.txt files that hold one, and the goldens (their
  `//` header line dropped)."""
  paths = sorted(
    glob.glob(
      os.path.join(testutil.ROOT, "tests", "**", "testdata", "**"),
      recursive=True,
    )
    + glob.glob(
      os.path.join(testutil.ROOT, "golden", "**", "*.hlo"), recursive=True
    )
  )
  found = []
  for path in paths:
    if not path.endswith((".hlo", ".txt")) or not os.path.isfile(path):
      continue
    if f"{os.sep}testdata{os.sep}fuzz{os.sep}" in path:
      continue  # crash XLA's parser in process by design (module_guard's)
    with open(path, encoding="utf-8") as f:
      text = f.read()
    if text.startswith("//"):
      text = text.split("\n", 1)[1]
    if text.startswith("HloModule"):
      found.append((os.path.relpath(path, testutil.ROOT), text))
  return found


@functools.cache
def _plain(text: str):
  """`hlo.parse_hlo_module(text)`, no memo: read once for the file's tests
  that compare with it (the records are immutable)."""
  return hlo.parse_hlo_module(text)


def _differences(a: hlo.HloModule, b: hlo.HloModule) -> list[str]:
  """Where two module records differ, in order, as readable lines."""
  out = [
    f"module {f.name}"
    for f in dataclasses.fields(a)
    if f.name != "computations" and getattr(a, f.name) != getattr(b, f.name)
  ]
  if list(a.computations) != list(b.computations):
    out.append(f"computations {list(a.computations)} != {list(b.computations)}")
  for name, comp in a.computations.items():
    other = b.computations.get(name)
    if other is None or comp == other:
      continue
    for x, y in zip(comp.instructions, other.instructions):
      if x != y:
        out.append(f"{name}: {x.to_text()} != {y.to_text()}")
        break
    else:
      out.append(
        f"{name}: {len(comp.instructions)} != {len(other.instructions)}"
      )
  return out


def _has_xla_parser() -> bool:
  return private_api.xla_hlo_structure(_MINIMAL) is not None


class RecordedModulesTest(parameterized.TestCase):
  def test_corpus_is_there(self):
    paths = [p for p, _ in _recorded_modules()]
    self.assertGreaterEqual(len(paths), 60)
    self.assertTrue(
      any("jaxlib0.10.2" in p or "jaxlib0102" in p for p in paths)
    )
    self.assertTrue(
      any("jaxlib0.12.0.1" in p or "jaxlib01201" in p for p in paths)
    )

  def test_xla_and_text_give_equal_records(self):
    read_by_xla = []
    for path, text in _recorded_modules():
      with self.subTest(path):
        ours = hlo_text.parse_text_module(text)
        with_xla = hlo.with_xla_structure(ours, text)
        self.assertEqual(_plain(text), with_xla or ours)
        if with_xla is not None:
          read_by_xla.append(path)
          self.assertEqual(_differences(ours, with_xla), [])
    if not _has_xla_parser():
      self.skipTest("this jaxlib has no hlo_module_from_text")
    # The fixtures XLA reads on both jaxlibs: not vacuous.
    self.assertContainsSubset(
      [
        "tests/ir/testdata/seed_a100_n2_default.hlo",
        "tests/sites/testdata/dot_merger/t_merged-jaxlib0.10.2.hlo",
        "tests/sites/testdata/dot_merger/t_merged_cross-jaxlib0.12.0.1.hlo",
      ],
      read_by_xla,
    )
    self.assertGreaterEqual(len(read_by_xla), 25)

  def test_a_planted_difference_is_found(self):
    text = dict(_recorded_modules())[
      "tests/ir/testdata/seed_a100_n2_default.hlo"
    ]
    ours = hlo_text.parse_text_module(text)
    entry = ours.entry
    changed = dataclasses.replace(
      entry,
      instructions=(
        dataclasses.replace(entry.instructions[0], opcode="negate"),
        *entry.instructions[1:],
      ),
    )
    planted = dataclasses.replace(
      ours, computations={**ours.computations, entry.name: changed}
    )
    (found,) = _differences(ours, planted)
    self.assertRegex(
      found,
      r"^main\.2: %params_1__3_\.1 = .* parameter\(8\), .* != .* negate\(8\)",
    )


class XlaStructureTest(absltest.TestCase):
  def setUp(self):
    super().setUp()
    if not _has_xla_parser():
      self.skipTest("this jaxlib has no hlo_module_from_text")

  def test_opcodes_spelled_as_hlo_text(self):
    (entry,) = private_api.xla_hlo_structure(_SPELLINGS)
    self.assertEqual(
      [(i.name, i.opcode, i.operands) for i in entry.instructions],
      [
        ("x", "parameter", ()),
        ("e", "exponential", ("x",)),
        ("s", "sine", ("e",)),
        ("c", "custom-call", ("s",)),
        ("t", "tuple", ("c", "e")),
      ],
    )

  def test_rejected_text_falls_back_to_the_text_reader(self):
    text = _MINIMAL.replace("parameter(0)", "parameter(0), no_such_attr=1")
    self.assertIsNone(private_api.xla_hlo_structure(text))
    module = hlo.parse_hlo_module(text)
    self.assertEqual(module.entry.root.attrs, {"no_such_attr": "1"})

  def test_unknown_stack_frame_is_not_given_to_xla(self):
    module = hlo_text.parse_text_module(_UNKNOWN_FRAME)
    self.assertIsNone(hlo.with_xla_structure(module, _UNKNOWN_FRAME))
    no_id = _UNKNOWN_FRAME.replace(" stack_frame_id=3", "")
    self.assertIsNotNone(
      hlo.with_xla_structure(hlo_text.parse_text_module(no_id), no_id)
    )

  def test_compact_tuple_operands_keep_their_printed_names(self):
    ours = hlo_text.parse_text_module(_COMPACT)
    with_xla = hlo.with_xla_structure(ours, _COMPACT)
    if with_xla is None:  # jaxlib 0.10.2's parser rejects `%p#1#0`
      self.assertIsNone(private_api.xla_hlo_structure(_COMPACT))
      return
    self.assertEqual(_differences(ours, with_xla), [])
    body = with_xla.computations["body"]
    self.assertEqual(
      [i.name for i in body.instructions], ["p", "p#1", "p#1#0", "n", "a"]
    )


class ScanTest(parameterized.TestCase):
  """`split_top_level` and the operand scan skip quoted strings, escapes
  included (read by hand)."""

  @parameterized.parameters(
    ("a, f(b, c), {d}", ",", ["a", "f(b, c)", "{d}"]),
    (
      'x="a,b", y={"k": "(", z: [1, 2]}',
      ",",
      ['x="a,b"', 'y={"k": "(", z: [1, 2]}'],
    ),
    (r'x="q\",r", y', ",", [r'x="q\",r"', "y"]),
    (r'x="q\\", y', ",", [r'x="q\\"', "y"]),
    ("k=v;(a;b);c", ";", ["k=v", "(a;b)", "c"]),
    (")(, a", ",", [")(", "a"]),
    ("", ",", [""]),
  )
  def test_split_top_level(self, text, sep, expected):
    self.assertEqual(hlo.split_top_level(text, sep), expected)

  @parameterized.parameters(
    ('a, "b', "unterminated string"),
    ('a(b, "c)', "unterminated string"),
    ("a(b, c", "unbalanced brackets"),
    ('"x\\', "unterminated string"),
  )
  def test_split_top_level_refuses(self, text, words):
    with self.assertRaisesRegex(HloParseError, words):
      hlo.split_top_level(text)

  def test_operands_skip_strings(self):
    inst = hlo.parse_instruction(
      '%c = f32[2]{0} custom-call(%a, %b), custom_call_target="f(x", '
      'backend_config="{\\"k\\":\\")\\"}"'
    )
    self.assertEqual(inst.operands, ("a", "b"))
    self.assertEqual(inst.attrs["custom_call_target"], '"f(x"')
    with self.assertRaisesRegex(HloParseError, "unterminated string"):
      hlo.parse_instruction('%c = f32[2]{0} custom-call(%a, "b)')


class MemoTest(absltest.TestCase):
  """`parse_hlo_module(text, memo)`: the lines of the text read before are
  not read again, and the records are those read without a memo."""

  def test_every_recorded_module_in_turn_reads_the_same(self):
    memo = {}
    modules = _recorded_modules()
    for path, text in modules + modules[::-1]:
      with self.subTest(path):
        self.assertEqual(hlo.parse_hlo_module(text, memo), _plain(text))

  def test_a_changed_line_is_read_again(self):
    memo = {}
    hlo.parse_hlo_module(_SPELLINGS, memo)
    changed = _SPELLINGS.replace("sine(%e)", "cosine(%e)")
    module = hlo.parse_hlo_module(changed, memo)
    self.assertEqual(
      [i.opcode for i in module.entry.instructions],
      ["parameter", "exponential", "cosine", "custom-call", "tuple"],
    )
    # What is kept is the last text's lines, no other.
    self.assertLen(memo, 5)
    self.assertIn("%s = f32[8,128]{1,0} cosine(%e)", memo)
    self.assertNotIn("%s = f32[8,128]{1,0} sine(%e)", memo)

  def test_a_bad_line_is_said_with_its_number(self):
    memo = {}
    hlo.parse_hlo_module(_SPELLINGS, memo)
    broken = _SPELLINGS.replace("sine(%e)", "sine(%e) junk")
    with self.assertRaisesRegex(HloParseError, r"line 6: junk after operands"):
      hlo.parse_hlo_module(broken, memo)
    # A failed read leaves the memo as it was.
    self.assertIn("%s = f32[8,128]{1,0} sine(%e)", memo)


if __name__ == "__main__":
  absltest.main()
