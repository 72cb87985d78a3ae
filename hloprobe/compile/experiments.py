"""XLA_FLAGS experiments: named sets of XLA flags to compare with a baseline.

`--experiment=NAME:FLAGS` (FLAGS are XLA_FLAGS words such as
`--xla_gpu_enable_triton_gemm=false`), `--experiment=NAME` for a built-in,
and `--experiments_file=PATH` (one `NAME:FLAGS` a line; `#` comments). The
baseline, with no extra flags, is always present. Whether XLA knows a flag
is XLA's to say: an unknown one kills the worker, and that experiment alone
fails (see `worker`).

Private in intent: use the package, `hloprobe.compile`.
"""

from __future__ import annotations

import dataclasses
import re

from hloprobe.errors import InvalidArgumentError, did_you_mean
from hloprobe.ir import InputFile

__all__ = [
  "BASELINE",
  "BUILTIN_EXPERIMENTS",
  "Experiment",
  "parse_experiments_file",
]

_NAME_RE = re.compile(r"^[A-Za-z0-9_.\-]+$")


@dataclasses.dataclass(frozen=True, slots=True)
class Experiment:
  """A named set of XLA flags.

  Attributes:
    name: used in tables, results.json and golden file names.
    xla_flags: XLA_FLAGS words, e.g. ("--xla_gpu_enable_triton_gemm=false",).
    description: one line, for built-ins.
  """

  name: str
  xla_flags: tuple[str, ...] = ()
  description: str = ""

  @property
  def flags_text(self) -> str:
    return " ".join(self.xla_flags)

  @classmethod
  def parse(cls, text: str) -> Experiment:
    """Parses `NAME:FLAGS` or a built-in experiment's name.

    Raises:
      InvalidArgumentError: bad name, unknown built-in, or a word that is not an
        `--xla_...` flag.
    """
    name, sep, flags = text.partition(":")
    name = name.strip()
    if not sep:
      if name in BUILTIN_EXPERIMENTS:
        return BUILTIN_EXPERIMENTS[name]
      raise InvalidArgumentError(
        f"unknown experiment {name!r}; "
        f"{did_you_mean(name, BUILTIN_EXPERIMENTS)}write "
        f"NAME:--xla_flag=value or choose from {', '.join(BUILTIN_EXPERIMENTS)}"
      )
    if not _NAME_RE.match(name) or name == BASELINE.name:
      raise InvalidArgumentError(
        f"bad experiment name {name!r}; use letters, digits, '_', '.', '-' "
        "(and not 'baseline')"
      )
    return cls(name, _check_flags(name, flags.split()))


BASELINE = Experiment("baseline", (), "no extra XLA flags")

# Flag names checked to exist in jaxlib 0.10.2 and 0.12.0.1 (a100 sweeps of
# each; XLA aborts on unknown ones;
# xla/debug_options_flags.cc). No `no_cublaslt` (--xla_gpu_enable_cublaslt=
# false): XLA accepts the flag, but the seed's gemms under
# --xla_gpu_enable_triton_gemm=false stay `__cublas$lt$matmul` with it, on
# both releases (a100 sweeps, 2026-12-05; XLA_NOTES: the fusion autotuner
# no longer tells cuBLAS from cuBLASLt, 8ef54478), so it promised a change
# it does not make (review finding 14).
BUILTIN_EXPERIMENTS = {
  e.name: e
  for e in (
    Experiment(
      "no_triton_gemm",
      ("--xla_gpu_enable_triton_gemm=false",),
      "GPU gemms go to cuBLAS/cuBLASLt instead of Triton",
    ),
    Experiment(
      "no_dot_strength_reduction",
      ("--xla_disable_hlo_passes=dot-strength-reduction",),
      "GPU: keep matrix-vector dots as dots (gemms) at batch 1",
    ),
    Experiment(
      "no_algsimp",
      ("--xla_disable_hlo_passes=algsimp",),
      "CPU: no AlgebraicSimplifier, which strength-reduces dots there",
    ),
    Experiment(
      "no_autotune",
      ("--xla_gpu_autotune_level=0",),
      "GPU: XLA's heuristic gemm choice, no autotuning",
    ),
    Experiment(
      "deterministic_ops",
      ("--xla_gpu_deterministic_ops=true",),
      "GPU: deterministic ops (no atomics in split-K reductions)",
    ),
  )
}


def _check_flags(name: str, words: list[str]) -> tuple[str, ...]:
  if not words:
    raise InvalidArgumentError(
      f"experiment {name!r} has no XLA flags; write NAME:--xla_flag=value"
    )
  for word in words:
    if not word.startswith("--xla_"):
      raise InvalidArgumentError(
        f"malformed XLA flag {word!r} in experiment {name!r}; "
        "expected e.g. '--xla_gpu_enable_triton_gemm=false'"
      )
  return tuple(words)


# `#` starts a comment at the start of a line or after a space, so a flag
# value may hold one (`--xla_dump_to=/tmp/run#2`).
_COMMENT_RE = re.compile(r"(?:^|\s)#.*")


def parse_experiments_file(path: str) -> list[Experiment]:
  """Reads one `NAME:FLAGS` (or built-in name) per line; `#` at the start of
  a line or after a space starts a comment.

  Raises:
    InvalidArgumentError: the file cannot be read, or a line is bad (named with its
      line number).
  """
  lines = (
    InputFile(path, f"--experiments_file={path!r}", InvalidArgumentError)
    .read_text()
    .splitlines()
  )
  out = []
  for lineno, line in enumerate(lines, start=1):
    line = _COMMENT_RE.sub("", line).strip()
    if not line:
      continue
    try:
      out.append(Experiment.parse(line))
    except InvalidArgumentError as e:
      raise InvalidArgumentError(f"{path}:{lineno}: {e}") from e
  return out
