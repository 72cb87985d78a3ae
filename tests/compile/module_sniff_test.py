"""compile/module_sniff.py: a module file's kind from its bytes, never its
suffix. The recorded files are those XLA dumped for tests/testdata/modfile
(README.md there: HLO text, a binary HloModuleProto, an HloSnapshot); the
others are written here by the formats' own rules (MLIR bytecode's magic
"ML\\xefR", mlir/Bytecode/Encoding.h). Nothing here compiles."""

from __future__ import annotations

import os

import testutil
from absl.testing import absltest, parameterized

from hloprobe.compile import module_sniff

_DATA = os.path.join(testutil.ROOT, "tests", "testdata", "modfile")


def _read(name: str) -> bytes:
  with open(os.path.join(_DATA, name), "rb") as f:
    return f.read()


class SniffTest(parameterized.TestCase):
  @parameterized.parameters(
    ("jit_f.before_optimizations.txt", "hlo_text"),
    ("jit_f.before_optimizations.hlo.pb", "hlo_proto"),
    ("jit_f.snapshot.pb", "hlo_snapshot"),
  )
  def test_recorded_files(self, name, kind):
    got = module_sniff.sniff(_read(name))
    self.assertIsInstance(got, module_sniff.Sniffed)
    self.assertEqual(got.kind, kind)

  @parameterized.parameters(
    (b"ML\xefR\x03MLIR19\x00rest", "stablehlo_bytecode"),
    (b"// a comment\n\nmodule @jit_f {\n}\n", "stablehlo_text"),
    (b"\xef\xbb\xbf#loc = loc(unknown)\nmodule {}\n", "stablehlo_text"),
    (b'name: "m"\nentry_computation_name: "main"\n', "hlo_proto_text"),
    (b"hlo_module {\n}\n", "hlo_proto_text"),
  )
  def test_by_contents(self, data, kind):
    self.assertEqual(module_sniff.sniff(data).kind, kind)

  def test_no_module_says_what_it_is(self):
    self.assertEqual(module_sniff.sniff(b"").why, "empty")
    self.assertEqual(module_sniff.sniff(b" \n").why, "only whitespace")
    self.assertRegex(
      module_sniff.sniff(b"print('hi')\n").why,
      r"^text that is neither HLO .* it begins \"print\('hi'\)\"$",
    )
    self.assertRegex(
      module_sniff.sniff(bytes([0xFF, 0, 1, 2, 3, 4, 5, 6, 7])).why,
      r"^binary data \(9 bytes, starting ff00010203040506\), not a module",
    )


class UntrustedTest(absltest.TestCase):
  """Files that crash jaxlib's parsers are refused before any sees them
  (issue 41: SIGSEGV at 10^5 nested HLO tuples, SIGABRT on a bytecode
  producer that is not UTF-8)."""

  def test_deep_hlo_tuples(self):
    d = 100_000
    data = "HloModule m\nENTRY e { p = " + "(" * d + "f32[]" + ")" * d
    found = module_sniff.sniff((data + " parameter(0) }").encode())
    self.assertIsInstance(found, module_sniff.NotAModule)
    self.assertIn("brackets deep", found.why)

  def test_deep_mlir_tuples(self):
    d = 50_000
    data = "module @m {\n func.func @main(%a: " + "tuple<" * d + "f32"
    data += ">" * d + ") {\n return\n }\n}\n"
    found = module_sniff.sniff(data.encode())
    self.assertIsInstance(found, module_sniff.NotAModule)
    self.assertIn("brackets deep", found.why)

  def test_bytecode_producer_not_utf8(self):
    data = b"ML\xefR" + bytes([3]) + b"Stable\xffHLO\0" + bytes(64)
    found = module_sniff.sniff(data)
    self.assertIsInstance(found, module_sniff.NotAModule)
    self.assertIn("not UTF-8", found.why)


if __name__ == "__main__":
  absltest.main()
