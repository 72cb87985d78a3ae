"""A text-format protobuf tokenizer: enough to check a target config's
structure, read a few scalar fields and cut one field out; not a full parser.

Private in intent: use the package, `hloprobe.compile`.
"""

from __future__ import annotations

import dataclasses
import re

__all__ = [
  "CLOSE",
  "ParseError",
  "Token",
  "check_nesting",
  "field_end",
  "field_value",
  "line_col",
  "message_end",
  "text_format_int",
  "tokenize",
]

_TOKEN_RE = re.compile(
  r"""(?P<ws>\s+|\#[^\n]*)
    |(?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
    |(?P<punct>[{}<>:\[\],;])
    |(?P<word>[A-Za-z0-9_.+\-]+)""",
  re.VERBOSE,
)


@dataclasses.dataclass(frozen=True, slots=True)
class Token:
  """One token: its kind (a group of `_TOKEN_RE`), text and offsets."""

  kind: str
  text: str
  start: int
  end: int


def tokenize(text: str) -> list[Token]:
  """The tokens of `text`, whitespace and comments dropped.

  Raises:
    ParseError: a character no token starts with.
  """
  tokens, pos = [], 0
  while pos < len(text):
    m = _TOKEN_RE.match(text, pos)
    if m is None:
      raise ParseError(pos, f"unexpected character {text[pos]!r}")
    if m.lastgroup != "ws":
      tokens.append(Token(m.lastgroup, m.group(), m.start(), m.end()))
    pos = m.end()
  return tokens


class ParseError(Exception):
  """Malformed text at character `offset` (the caller names the file)."""

  def __init__(self, offset: int, message: str):
    super().__init__(message)
    self.offset = offset


CLOSE = {"{": "}", "<": ">"}


def field_end(tokens: list[Token], i: int) -> int:
  """Index just past the field whose name is tokens[i] (its value: a
  word, strings, a `[...]` list or a nested `{...}`/`<...>` message).

  Args:
    tokens: the text's tokens (`tokens`).
    i: the index of the field's name.

  Raises:
    ParseError: tokens[i] is no field name, the value is missing at the
      end, is no value, or a nested message is not closed.
  """
  if tokens[i].kind != "word":
    raise ParseError(
      tokens[i].start, f"expected a field name, got {tokens[i].text!r}"
    )
  i += 1
  if i < len(tokens) and tokens[i].text == ":":
    i += 1
  if i >= len(tokens):
    raise ParseError(tokens[-1].end, "missing value at end of file")
  tok = tokens[i]
  if tok.text in CLOSE:
    return message_end(tokens, i + 1, CLOSE[tok.text])
  if tok.text == "[":
    while i < len(tokens) and tokens[i].text != "]":
      i += 1
    return i + 1
  if tok.kind == "string":
    while i < len(tokens) and tokens[i].kind == "string":
      i += 1
    return i
  if tok.kind != "word":
    raise ParseError(tok.start, f"expected a value, got {tok.text!r}")
  return i + 1


def message_end(tokens: list[Token], i: int, close: str | None) -> int:
  """Checks fields from tokens[i] up to `close`; returns the index past it.

  Args:
    tokens: the text's tokens.
    i: the index of the first field.
    close: the closing token ("}" or ">"), or None for the top level (up
      to the end of the tokens).

  Raises:
    ParseError: a field is malformed (`field_end`), or `close` is missing.
  """
  while i < len(tokens):
    if tokens[i].text == close:
      return i + 1
    i = field_end(tokens, i)
    if i < len(tokens) and tokens[i].text in (",", ";"):
      i += 1
  if close is not None:
    raise ParseError(tokens[-1].end if tokens else 0, f"missing {close!r}")
  return i


def line_col(text: str, offset: int) -> tuple[int, int]:
  """(line, column), both from 1, of character `offset` of `text`."""
  line = text.count("\n", 0, offset) + 1
  return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


# GpuTargetConfigProto nests 3 messages deep (gpu_device_info ->
# cuda_compute_capability); the checks recurse once per level.
_MAX_NESTING = 64


def check_nesting(tokens: list[Token]) -> None:
  """Raises ParseError at the first `{`/`<` nested over `_MAX_NESTING`."""
  depth = 0
  for tok in tokens:
    if tok.text in CLOSE:
      depth += 1
      if depth > _MAX_NESTING:
        raise ParseError(
          tok.start, f"messages nested more than {_MAX_NESTING} deep"
        )
    elif tok.text in ("}", ">"):
      depth -= 1


def field_value(tokens: list[Token], path: tuple[str, ...]) -> str | None:
  """The value of a scalar field, found by its chain of field names."""
  depth, wanted = 0, 0
  for i, tok in enumerate(tokens):
    if tok.text in ("{", "<"):
      depth += 1
    elif tok.text in ("}", ">"):
      depth -= 1
      wanted = min(wanted, depth)
    elif i and tokens[i - 1].text == ":":
      continue  # a value, not a field name
    elif tok.kind == "word" and depth == wanted and tok.text == path[wanted]:
      if wanted < len(path) - 1:
        wanted += 1
        continue
      j = i + 2 if i + 1 < len(tokens) and tokens[i + 1].text == ":" else i + 1
      return tokens[j].text.strip("\"'") if j < len(tokens) else None
  return None


# Text-format integers (protobuf's io/tokenizer.cc, Tokenizer::ParseInteger):
# decimal, hex `0x..` and octal `0..`, with a sign.
_INTEGER_RE = re.compile(r"([+-]?)(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)")


def text_format_int(value: str) -> int | None:
  """The integer a text-format literal denotes, or None for another word."""
  m = _INTEGER_RE.fullmatch(value)
  if m is None:
    return None
  digits = m.group(2)
  if digits[:2] in ("0x", "0X"):
    number = int(digits[2:], 16)
  elif digits.startswith("0"):
    number = int(digits, 8)
  else:
    number = int(digits)
  return -number if m.group(1) == "-" else number
