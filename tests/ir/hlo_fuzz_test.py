"""Parsers on mutated real inputs: a result or the library's own error,
never a foreign exception, never a hang (issue 13.8).

`check_parser` is the harness: a parser, its error class, a corpus of real
texts and an optional `inspect` that touches the result's lazy parts. Any
parser can be pointed at it (a StableHLO test can reuse it as is). Time is
bounded through hypothesis's own `deadline` per example (generous), and
the adversarial PTX cases count the work done, not the wall clock.
"""

from __future__ import annotations

import datetime
import glob
import os
from unittest import mock

import testutil
from absl.testing import absltest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hloprobe.errors import HloParseError
from hloprobe.ir import hlo, ptx

_TESTDATA = os.path.join(os.path.dirname(__file__), "testdata")
# Characters that matter to these grammars, and a few that do not.
_ALPHABET = '{}()[]<>"\\=,;:%.@#/* \n\t0123456789-xef_\u00e9\x00'
_SETTINGS = settings(
  max_examples=int(os.environ.get("HLOPROBE_FUZZ_EXAMPLES", "60")),
  deadline=datetime.timedelta(seconds=5),
  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
  derandomize=True,
)


def _read(path: str) -> str:
  with open(path, encoding="utf-8") as f:
    return f.read()


def hlo_corpus() -> list[str]:
  """Optimized HLO bodies: the goldens (header line dropped) and testdata."""
  texts = [
    _read(p).split("\n", 1)[1]
    for p in sorted(
      glob.glob(os.path.join(testutil.ROOT, "golden", "*", "*", "*.hlo"))
    )[:8]
  ]
  # A jaxlib 0.12.0.1 pass dump: tuple operands as `%arg_tuple.1#1`.
  compact = glob.glob(
    os.path.join(
      _TESTDATA,
      "..",
      "..",
      "sites",
      "testdata",
      "passes",
      "jaxlib01201_euler_scan_cpu_n2",
      "*.0000.*.txt",
    )
  )
  return (
    texts
    + [_read(os.path.join(_TESTDATA, "seed_a100_n2_default.hlo"))]
    + [_read(p) for p in compact]
  )


def ptx_corpus() -> list[str]:
  return [
    _read(p) for p in sorted(glob.glob(os.path.join(_TESTDATA, "ptx", "*.ptx")))
  ]


_SNIPPETS = (
  '"',
  "\\q",
  "{",
  "}",
  "(",
  ")",
  "[",
  "]",
  "=",
  ",",
  "-1",
  "9" * 30,
  "%",
  "\n",
)
_SYNTAX = '"{}()[]=,:%.;#'


@st.composite
def _position(draw, text: str) -> int:
  """Anywhere, or (as often) at a syntax character, where parsers branch."""
  if draw(st.booleans()):
    char = draw(st.sampled_from(_SYNTAX))
    first = text.find(char)
    if first >= 0:
      count = text.count(char)
      k = draw(st.integers(0, min(count, 2000) - 1))
      at = first
      for _ in range(k):
        at = text.find(char, at + 1)
      return at
  return draw(st.integers(0, len(text)))


@st.composite
def mutated(draw, corpus: list[str]) -> str:
  """A corpus text with 1-4 edits at random or syntax positions: delete,
  duplicate or insert a span, insert a snippet, or cut the text short."""
  text = draw(st.sampled_from(corpus))
  for _ in range(draw(st.integers(1, 4))):
    i = draw(_position(text))
    j = draw(st.integers(i, min(len(text), i + 200)))
    edit = draw(
      st.sampled_from(["delete", "duplicate", "insert", "snippet", "cut"])
    )
    if edit == "delete":
      text = text[:i] + text[i + draw(st.integers(1, 3)) :]
    elif edit == "duplicate":
      text = text[:j] + text[i:j] + text[j:]
    elif edit == "insert":
      text = (
        text[:i] + draw(st.text(_ALPHABET, min_size=1, max_size=8)) + text[i:]
      )
    elif edit == "snippet":
      text = text[:i] + draw(st.sampled_from(_SNIPPETS)) + text[i:]
    else:
      text = text[:i]
  return text


def check_parser(test, parse, error, corpus, inspect=None):
  """Runs `parse` on mutated corpus texts: a result, or `error`, only.

  Args:
    test: the TestCase (for failure messages).
    parse: str -> result.
    error: the exception class the parser documents.
    corpus: real texts to mutate.
    inspect: optional result -> None that reads the result's lazy parts.
  """

  @_SETTINGS
  @given(mutated(corpus))
  def run(text):
    try:
      result = parse(text)
      if inspect is not None:
        inspect(result)
    except error:
      pass

  run()


def _touch_hlo(module) -> None:
  """Reads every lazy part of a parsed module."""
  module.entry.root  # noqa: B018
  for computation in module.computations.values():
    computation.parameters()
    for inst in computation.instructions:
      inst.metadata, inst.backend_config, inst.called_computations  # noqa: B018
      module.source_location(inst)
      for key in ("lhs_contracting_dims", "rhs_batch_dims"):
        inst.dims_attr(key)


class FuzzTest(absltest.TestCase):
  def test_hlo(self):
    check_parser(
      self, hlo.parse_hlo_module, HloParseError, hlo_corpus(), _touch_hlo
    )

  def test_ptx(self):
    check_parser(self, ptx.parse_ptx, HloParseError, ptx_corpus())


def _ptx(functions: list[str]) -> str:
  return ".version 8.0\n.target sm_80\n" + "\n".join(functions)


def _func(name: str, calls=(), kind="func", close=True) -> str:
  body = "".join(f"call.uni {c}, ();\n" for c in calls)
  end = "}\n" if close else "\n"
  return f".{kind} {name}()\n{{\nfma.rn.f32 %f1, %f2, %f3, %f4;\n{body}{end}"


class PtxCostTest(absltest.TestCase):
  """The adversarial PTX of issue 13.8, with the work counted."""

  def _count_bodies(self, text: str) -> tuple[list, int]:
    with mock.patch.object(ptx, "_opcodes", wraps=ptx._opcodes) as opcodes:
      kernels = ptx.parse_ptx(text)
    return kernels, opcodes.call_count

  def test_shared_callees_are_read_once(self):
    # f_i calls a_i and b_i, which both call f_{i+1}: 2^depth call paths.
    depth, funcs = 16, [_func("f16")]
    for i in reversed(range(depth)):
      funcs += [_func(f"a{i}", [f"f{i + 1}"]), _func(f"b{i}", [f"f{i + 1}"])]
      funcs.append(_func(f"f{i}", [f"a{i}", f"b{i}"]))
    funcs.append(_func("k", ["f0"], kind="entry"))
    (kernel,), bodies = self._count_bodies(_ptx(funcs))
    self.assertEqual(bodies, 3 * depth + 2)  # each function's body once
    self.assertEqual(dict(kernel.instructions), {"fma.rn.f32": 3 * depth + 2})

  def test_a_thousand_nested_calls(self):
    funcs = [_func(f"f{i}", [f"f{i + 1}"]) for i in range(1000)]
    funcs += [_func("f1000"), _func("k", ["f0"], kind="entry")]
    (kernel,), bodies = self._count_bodies(_ptx(funcs))
    self.assertEqual(bodies, 1002)
    self.assertEqual(kernel.algorithm, "F32_F32_F32")

  @settings(
    max_examples=3, deadline=datetime.timedelta(seconds=5), derandomize=True
  )
  @given(st.integers(2000, 3000))
  def test_unclosed_bodies_stay_linear(self, count):
    # Each body runs to the next function, not to the end of the text.
    text = _ptx([_func(f"f{i}", close=False) for i in range(count)])
    text += _func("k", ["f0"], kind="entry", close=False) + "/*" * count
    (kernel,) = ptx.parse_ptx(text)
    self.assertEqual(kernel.name, "k")


if __name__ == "__main__":
  absltest.main()
