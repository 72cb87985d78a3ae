"""STUB (modcase branch, until `modfile` lands): HLO text and StableHLO
text only, per the contract of issue 25. Replaced by modfile's reader.

Private in intent: use the package, `hloprobe.compile`.
"""

from __future__ import annotations

import dataclasses
import os
import re

import numpy as np

from hloprobe.errors import CaseError

__all__ = ["ModuleFile", "is_module_file", "read_module_file"]


@dataclasses.dataclass(frozen=True)
class ModuleFile:
  path: str
  kind: str
  name: str
  stablehlo: str
  hlo_text: str | None
  optimized: bool
  parameters: tuple[tuple[tuple[int, ...], str], ...]
  arguments: tuple[np.ndarray, ...] | None
  result: tuple[np.ndarray, ...] | None


def _head(path: str) -> str:
  with open(path, "rb") as f:
    return f.read(4096).decode("utf-8", "replace")


def is_module_file(spec: str) -> bool:
  if spec.endswith(".py") or not os.path.isfile(spec):
    return False
  head = _head(spec)
  return head.lstrip().startswith("HloModule") or "module" in head


def read_module_file(path: str, *, max_bytes: int = 1 << 28) -> ModuleFile:
  from hloprobe.ir import parse_hlo_module

  try:
    with open(path, encoding="utf-8") as f:
      text = f.read()
  except OSError as e:
    raise CaseError(f"module file {path!r}: {e}") from None
  if text.lstrip().startswith("HloModule"):
    module = parse_hlo_module(text)
    params = tuple(
      (tuple(p.shape.dims), p.shape.dtype)
      for _, p in sorted(module.entry.parameters().items())
    )
    optimized = "is_scheduled=true" in text.split("\n", 1)[0]
    return ModuleFile(path, "hlo_text", module.name, "", text, optimized,
                      params, None, None)
  from hloprobe import private_api
  from hloprobe.ir import parse_hlo_module as parse

  hlo = private_api.stablehlo_to_hlo_text(text)
  module = parse(hlo)
  params = tuple(
    (tuple(p.shape.dims), p.shape.dtype)
    for _, p in sorted(module.entry.parameters().items())
  )
  name = re.search(r"module @([\w.$-]+)", text)
  return ModuleFile(path, "stablehlo_text", name.group(1) if name else "m",
                    text, None, False, params, None, None)
