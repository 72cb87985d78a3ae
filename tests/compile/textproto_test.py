"""compile/textproto.py: the text-format tokenizer on the shipped a100
target config (hloprobe/compile/gpu_specs/a100_sxm_40.txtpb; the values
read from that file by eye) and on text written here. Integer literals
follow protobuf's io/tokenizer.cc (Tokenizer::ParseInteger): decimal,
hex `0x..` and octal `0..`."""

from __future__ import annotations

import os

from absl.testing import absltest, parameterized

import hloprobe
from hloprobe.compile import textproto

_A100 = os.path.join(
  os.path.dirname(hloprobe.__file__),
  "compile",
  "gpu_specs",
  "a100_sxm_40.txtpb",
)


class TokenizeTest(parameterized.TestCase):
  def setUp(self):
    super().setUp()
    with open(_A100, encoding="utf-8") as f:
      self.text = f.read()
    self.tokens = textproto.tokenize(self.text)

  def test_scalar_fields_by_their_path(self):
    read = lambda *path: textproto.field_value(self.tokens, path)
    self.assertEqual(read("gpu_device_info", "core_count"), "108")
    self.assertEqual(
      read("gpu_device_info", "cuda_compute_capability", "major"), "8"
    )
    self.assertEqual(read("gpu_device_info", "name"), "NVIDIA A100-SXM4-40GB")
    self.assertEqual(read("platform_name"), "CUDA")
    self.assertIsNone(read("gpu_device_info", "no_such_field"))
    textproto.check_nesting(self.tokens)

  def test_bad_character_and_deep_nesting(self):
    with self.assertRaises(textproto.ParseError) as e:
      textproto.tokenize('a: 1\nb: "x" @')
    self.assertEqual(e.exception.offset, 12)
    self.assertEqual(textproto.line_col('a: 1\nb: "x" @', 12), (2, 8))
    deep = textproto.tokenize("a {" * 65 + "}" * 65)
    with self.assertRaisesRegex(textproto.ParseError, "nested more than 64"):
      textproto.check_nesting(deep)

  @parameterized.parameters(
    ("42", 42),
    ("-0x1F", -31),
    ("017", 15),
    ("0", 0),
    ("+7", 7),
    ("1.5", None),
    ("08", None),
    ("name", None),
  )
  def test_text_format_int(self, literal, value):
    self.assertEqual(textproto.text_format_int(literal), value)


if __name__ == "__main__":
  absltest.main()
