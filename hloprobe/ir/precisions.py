"""The precision vocabulary: matmul precision names and DotAlgorithmPreset.

One table per vocabulary, as JAX spells it (jax 0.10.2):
`jax.default_matmul_precision` accepts 'bfloat16', 'tensorfloat32',
'float32', 'default', 'high', 'highest' and the names of
`jax.lax.DotAlgorithmPreset` (except DEFAULT, which is 'default' there).
Imports no JAX, so the HLO side can use the algorithm table too.

Private in intent: use the package, `hloprobe.ir`.
"""

from __future__ import annotations

import dataclasses
import enum

from hloprobe.errors import InvalidArgumentError, did_you_mean

__all__ = [
  "ALGORITHMS",
  "Algorithm",
  "DEFAULT_PRECISIONS",
  "PRECISION_ALIASES",
  "PRECISION_NAMES",
  "Precision",
  "as_precision",
  "algorithm_from_fields",
  "algorithm_from_hlo",
  "parse_precision",
]

# jax_default_matmul_precision value -> the StableHLO operand precision it
# gives f32 dots (jax/_src/lax/lax.py, canonicalize_precision; jax 0.10.2).
_NAMED_PRECISIONS = {
  "bfloat16": "DEFAULT",
  "tensorfloat32": "HIGH",
  "float32": "HIGHEST",
  "default": "DEFAULT",
  "high": "HIGH",
  "highest": "HIGHEST",
}


@dataclasses.dataclass(frozen=True, slots=True)
class Algorithm:
  """A dot algorithm, named as `jax.lax.DotAlgorithmPreset` names it.

  Attributes:
    name: preset name such as "TF32_TF32_F32".
    lhs, rhs: operand storage types ("f32", "tf32", "bf16", ...).
    accumulation: accumulator type.
    passes: primitive products per dot (3 for the _X3 splits).
  """

  name: str
  lhs: str
  rhs: str
  accumulation: str
  passes: int = 1

  @property
  def hlo_name(self) -> str:
    """The spelling in optimized HLO: `algorithm=dot_tf32_tf32_f32`."""
    return "dot_" + self.name.lower()


ALGORITHMS = {
  a.name: a
  for a in (
    Algorithm("F16_F16_F16", "f16", "f16", "f16"),
    Algorithm("F16_F16_F32", "f16", "f16", "f32"),
    Algorithm("BF16_BF16_BF16", "bf16", "bf16", "bf16"),
    Algorithm("BF16_BF16_F32", "bf16", "bf16", "f32"),
    Algorithm("BF16_BF16_F32_X3", "bf16", "bf16", "f32", 3),
    Algorithm("BF16_BF16_F32_X6", "bf16", "bf16", "f32", 6),
    Algorithm("BF16_BF16_F32_X9", "bf16", "bf16", "f32", 9),
    Algorithm("TF32_TF32_F32", "tf32", "tf32", "f32"),
    Algorithm("TF32_TF32_F32_X3", "tf32", "tf32", "f32", 3),
    Algorithm("F32_F32_F32", "f32", "f32", "f32"),
    Algorithm("F64_F64_F64", "f64", "f64", "f64"),
  )
}
# Presets JAX knows whose operand types are "any" fp8: named, not emulated.
_OTHER_PRESETS = (
  "ANY_F8_ANY_F8_F32",
  "ANY_F8_ANY_F8_F32_FAST_ACCUM",
  "ANY_F8_ANY_F8_ANY",
  "ANY_F8_ANY_F8_ANY_FAST_ACCUM",
)
PRECISION_NAMES = (
  tuple(_NAMED_PRECISIONS) + ("DEFAULT",) + tuple(ALGORITHMS) + _OTHER_PRESETS
)
DEFAULT_PRECISIONS = ("bfloat16", "tensorfloat32", "float32")
# Short names people type -> the name hloprobe takes (a suggestion only).
PRECISION_ALIASES = {
  "tf32": "tensorfloat32",
  "bf16": "bfloat16",
  "f32": "float32",
  "fp32": "float32",
  "tensorfloat": "tensorfloat32",
}


class _PrecisionBase(enum.StrEnum):
  """A matmul precision name as given (`str`: prints, compares and goes to
  JSON as the name), with the value JAX's config takes."""

  @property
  def jax_name(self) -> str:
    """The value for `jax.default_matmul_precision`: the name, except
    "default" for the DEFAULT preset (the config knows no "DEFAULT";
    jax/_src/config.py, jax 0.10.2)."""
    return "default" if self.value == "DEFAULT" else self.value


# The closed set of precision names (`PRECISION_NAMES`), one member each,
# named and valued by the name: Precision("bfloat16"), Precision.TF32_TF32_F32.
Precision = _PrecisionBase("Precision", [(n, n) for n in PRECISION_NAMES])
Precision.__module__ = __name__  # pickled by name, as this module's


def as_precision(name: str) -> Precision:
  """Checks a matmul precision name once: the `Precision` member of that
  name (a member is returned as it is).

  Args:
    name: 'bfloat16', 'tensorfloat32', 'float32', 'default', 'high',
      'highest', or a DotAlgorithmPreset name such as 'TF32_TF32_F32'.

  Raises:
    InvalidArgumentError: the name is unknown.
  """
  if isinstance(name, Precision):
    return name
  try:
    return Precision(name)
  except ValueError:
    raise InvalidArgumentError(
      f"unknown precision {name!r}; "
      f"{did_you_mean(name, PRECISION_NAMES, PRECISION_ALIASES)}"
      f"choose from {', '.join(PRECISION_NAMES)}"
    ) from None


def parse_precision(name: str) -> str:
  """Checks a matmul precision name and returns the value for JAX's config
  (`as_precision(name).jax_name`).

  Raises:
    InvalidArgumentError: the name is unknown.
  """
  return as_precision(name).jax_name


def algorithm_from_fields(fields: dict[str, str]) -> str:
  """Names the StableHLO `algorithm = <...>` attribute as a preset.

  Returns the preset name, or the fields as text when no preset matches.
  """
  key = (
    fields.get("lhs_precision_type"),
    fields.get("rhs_precision_type"),
    fields.get("accumulation_type"),
    int(fields.get("num_primitive_operations", "1")),
  )
  for a in ALGORITHMS.values():
    if (a.lhs, a.rhs, a.accumulation, a.passes) == key:
      return a.name
  return ",".join(f"{k}={v}" for k, v in sorted(fields.items()))


def algorithm_from_hlo(text: str) -> str:
  """Names an optimized-HLO `algorithm=dot_...` value as a preset."""
  for a in ALGORITHMS.values():
    if a.hlo_name == text:
      return a.name
  return text
