"""Findings grouped by cause, and each cause's fix as a change to the code.

`verify.find_findings` gives one `Finding` per (what is wrong, sites, set
of batch sizes): one TF32 story on a user's model can be four findings
(n = 7, 9, 8 and 2-6, row 0 at some and another row at others). People
act on causes, so `group_causes` joins the findings of one cause:

  cause key    (experiment, case, target, sites, their effective
               algorithms, what XLA made of them), and for a finding that
               is not an error of a row ("failed", "changed the math",
               "integer", "leaf", "not judged") its kind and words too.
               Row 0 and another row of the same sites and algorithm are
               one cause (the same arithmetic, seen in two rows).

A `Cause` keeps its findings worst first (the first is the worst row and
the worst batch size: `Finding.row`, `Finding.worst_n`), the union of
their batch sizes and precisions, and each site's source line
(`SiteLine`: `my.py:17` and the line's text, read from the program's
file; the location is the one `sweep --sites` prints).

`code_change` words a candidate fix (`verify.Candidate`) as the change to
make in JAX at those lines, and says how `verify` checks it:

  --fix=float32      `precision=jax.lax.Precision.HIGHEST` on each call
                     at fault, or `jax.default_matmul_precision("float32")`
                     around it. `verify --fix=float32` traces the program
                     under `jax.default_matmul_precision("float32")`
                     (`compile.lowering`: the context manager itself), so
                     each of these dots gets operand precision HIGHEST in
                     its StableHLO: what `precision=HIGHEST` writes
                     (jax/_src/lax/lax.py, `canonicalize_precision`: the
                     config applies only where a call passes none).
  --fix=<preset>     `precision=jax.lax.DotAlgorithmPreset.<preset>` on the
                     call, or `jax.default_matmul_precision("<preset>")`
                     around it: the config takes preset names too (jax
                     0.10.2 and 0.12.0.1) and gives the dot that algorithm.
  an XLA_FLAGS fix   no code change exists (a compiler flag):
                     `XLA_FLAGS=<flags>` in the environment of the process.

Private in intent: use the package, `hloprobe.report`.
"""

from __future__ import annotations

import dataclasses
import linecache
import os
from collections.abc import Sequence

from hloprobe.ir import ALGORITHMS
from hloprobe.report.wording import numbers
from hloprobe.sites import Fate
from hloprobe.verify import Candidate, Finding

__all__ = [
  "Cause",
  "CodeChange",
  "SiteLine",
  "call_example",
  "code_change",
  "group_causes",
]

# Finding kinds that are an error of a row: one cause across rows.
_ROW_KINDS = ("row 0", "row")
# Source text shown for a line, at most this many characters.
_CODE_CHARS = 48
# `jax.default_matmul_precision` names that give HIGHEST and HIGH
# (jax/_src/lax/lax.py, canonicalize_precision; jax 0.10.2, 0.12.0.1).
_HIGHEST = ("float32", "highest")
_HIGH = ("tensorfloat32", "high")


@dataclasses.dataclass(frozen=True, slots=True)
class SiteLine:
  """A dot site's place in the program.

  Attributes:
    site: the site's index (`sweep --sites`' "site").
    location: `file:line` as recorded (the innermost source frame), or
      None where the site has none (a module file's dot).
    code: that line's text, stripped and cut to 48 characters, or None
      where the file cannot be read.
  """

  site: int
  location: str | None
  code: str | None

  @property
  def short(self) -> str:
    """E.g. "my.py:17" (the file's base name), or "site 3" without one."""
    if not self.location:
      return f"site {self.site}"
    path, _, line = self.location.rpartition(":")
    return f"{os.path.basename(path)}:{line}" if path else self.location

  def words(self) -> str:
    """E.g. "my.py:17 `h = x @ w1 + b1`"; "site 3 (no source line)"."""
    if not self.location:
      return f"site {self.site} (no source line)"
    return f"{self.short} `{self.code}`" if self.code else self.short


@dataclasses.dataclass(frozen=True, slots=True)
class Cause:
  """One cause: the findings of the same sites, algorithm and fate.

  Attributes:
    findings: its findings, worst first (`verify.rank_findings` order);
      the first holds the worst error, its row and batch size.
    lines: each site at fault with its source line, in site order.
    algorithms: the sites' effective algorithms, distinct, in site order
      (None where not settled).
    fates: what XLA made of the sites, e.g. ("Triton gemm
      (triton-gemm-rewriter)",).
    batch_sizes: every batch size it holds at, ascending.
    precisions: every precision it holds under, first-seen order.
  """

  findings: tuple[Finding, ...]
  lines: tuple[SiteLine, ...]
  algorithms: tuple[str | None, ...]
  fates: tuple[str, ...]
  batch_sizes: tuple[int, ...]
  precisions: tuple[str, ...]

  @property
  def worst(self) -> Finding:
    return self.findings[0]

  @property
  def sites(self) -> tuple[int, ...]:
    return tuple(s.site for s in self.lines)

  def sites_words(self) -> str:
    """E.g. "sites 0-2", "site 3"."""
    many = len(self.lines) > 1
    return f"site{'s' if many else ''} {numbers(self.sites)}"

  def sizes_words(self) -> str:
    """E.g. "n = 2-9 under bfloat16 and tensorfloat32"."""
    ps = list(self.precisions)
    under = ps[0] if len(ps) == 1 else ", ".join(ps[:-1]) + " and " + ps[-1]
    return f"n = {numbers(self.batch_sizes)} under {under}"


@dataclasses.dataclass(frozen=True, slots=True)
class CodeChange:
  """A candidate fix as a change to make, and how `verify` checks it.

  Attributes:
    code: whether the change is to the program (False: XLA_FLAGS).
    on_call: the argument to give each call at fault, e.g.
      "precision=jax.lax.Precision.HIGHEST"; None for a flag.
    around: the context manager to put around the call, e.g.
      'jax.default_matmul_precision("float32")'; None for a flag.
    flags: the XLA_FLAGS setting, e.g.
      "XLA_FLAGS=--xla_gpu_enable_triton_gemm=false"; None for code.
    checked_by: how `verify --fix` checks the change, in words.
  """

  code: bool
  on_call: str | None
  around: str | None
  flags: str | None
  checked_by: str


def _source_text(location: str | None) -> str | None:
  """The stripped text of `file:line`, cut to `_CODE_CHARS`; None when the
  file or line cannot be read."""
  if not location:
    return None
  path, _, line = location.rpartition(":")
  if not path or not line.isdigit():
    return None
  text = linecache.getline(path, int(line)).strip()
  if not text:
    return None
  cut = _CODE_CHARS - 3
  return text if len(text) <= _CODE_CHARS else text[:cut].rstrip() + "..."


def _key(f: Finding) -> tuple:
  where = (f.experiment, f.case, f.target, f.sites, f.algorithms, f.fates)
  return where if f.kind in _ROW_KINDS else where + (f.kind, f.what)


def group_causes(findings: Sequence[Finding]) -> tuple[Cause, ...]:
  """The findings grouped by cause (see the module), worst cause first.

  Args:
    findings: `verify.find_findings`' findings, worst first.

  Returns:
    One `Cause` per cause, ordered by its worst finding; each cause's
    findings keep their order. Empty for no findings.
  """
  groups: dict[tuple, list[Finding]] = {}
  for f in findings:
    groups.setdefault(_key(f), []).append(f)
  out = []
  for members in groups.values():
    worst = members[0]
    locations = worst.locations or (None,) * len(worst.sites)
    out.append(
      Cause(
        tuple(members),
        tuple(
          SiteLine(s, loc, _source_text(loc))
          for s, loc in zip(worst.sites, locations, strict=True)
        ),
        tuple(dict.fromkeys(worst.algorithms)),
        worst.fates,
        tuple(sorted({n for f in members for n in f.batch_sizes})),
        tuple(dict.fromkeys(p for f in members for p in f.precisions)),
      )
    )
  return tuple(out)


def code_change(candidate: Candidate) -> CodeChange:
  """`candidate` as the change to make (see the module docstring).

  Raises:
    InvalidArgumentError: the candidate's fix is neither a precision nor
      an experiment (`verify.fix.parse_fix`; the candidates are always one).
  """
  fix = candidate.parsed()
  if fix.precision is None:
    flags = fix.experiment.flags_text if fix.experiment else candidate.words
    return CodeChange(
      False,
      None,
      None,
      f"XLA_FLAGS={flags}",
      f"verify --fix={fix.name} compiles with these XLA_FLAGS",
    )
  name = fix.precision
  if name in _HIGHEST or name in _HIGH:
    level = "HIGHEST" if name in _HIGHEST else "HIGH"
    on_call = f"precision=jax.lax.Precision.{level}"
  elif name in ALGORITHMS:
    on_call = f"precision=jax.lax.DotAlgorithmPreset.{name}"
  else:  # "default", "bfloat16": the precision a call gets by default
    on_call = f'precision="{name}"'
  around = f'jax.default_matmul_precision("{name}")'
  return CodeChange(
    True,
    on_call,
    around,
    None,
    f"verify --fix={name} traces the program under {around}, which gives "
    f"each dot that passes no precision what {on_call} gives it",
  )


# What XLA makes of a convolution site (`sites.Fate`): a cuDNN call on a
# GPU, an HLO convolution on the CPU.
_CONV_FATES = frozenset({Fate.CUDNN_CONV, Fate.CONV})


def call_example(causes: Sequence[Cause], on_call: str) -> str:
  """How a call at fault takes `on_call` (`CodeChange.on_call`), by what
  its sites are: "`a @ b` -> `jnp.matmul(a, b, precision=...)`" for
  dots, "`lax.conv_general_dilated(x, k, ...)` -> `lax.conv_general_dilated(
  x, k, ..., precision=...)`" for convolutions (jax.lax.conv_general_dilated
  takes the same `precision` argument as jnp.matmul: jax 0.12.0.1 and
  0.10.2), both where the
  causes hold both. A convolution is a site whose fate is a cuDNN
  convolution or an HLO convolution; a site whose fate is not settled
  reads as a dot."""
  kinds = {k for c in causes for f in c.findings for k in f.fate_kinds}
  dot = f"`a @ b` -> `jnp.matmul(a, b, {on_call})`"
  conv = (
    "`lax.conv_general_dilated(x, k, ...)` -> "
    f"`lax.conv_general_dilated(x, k, ..., {on_call})`"
  )
  if not kinds & _CONV_FATES:
    return dot
  return conv if kinds <= _CONV_FATES else f"{dot}; {conv}"
