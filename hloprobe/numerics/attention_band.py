"""The band of a cuDNN fused attention site, from its own operands.

A dot or convolution site's band is analytic (`bands.site_band`, from
the site's |A||B|). An attention site's is measured (`emulate_attention.
attention_band`): its forward by FlashAttention-2's online softmax over
the key blocks a kernel may use, each against float64, on the operands
the site sees at the sweep's largest batch size. Those operands are read
here by one F32 evaluation of the case (`Evaluator`, jit-compiled on the
CPU) that returns every forward attention site's q, k and v besides;
sites inside loop and branch bodies (scan, while, cond) are not read (no
band, as for a dot there).

Private in intent: use the package, `hloprobe.numerics`.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import numpy as np

from hloprobe.numerics.bands import SiteBand
from hloprobe.numerics.emulate_attention import (
  ATTENTION_PRIMITIVES,
  attention_band,
)
from hloprobe.numerics.evaluator import Evaluator
from hloprobe.numerics.jaxpr_sites import plan_sites, trace

__all__ = ["AttentionOperands", "attention_operands", "attention_site_band"]

# One site's operands: (its equation, its operands as numpy arrays).
AttentionOperands = tuple


class _OperandReader(Evaluator):
  """An F32 evaluation that keeps each attention site's operands."""

  def __init__(self, count: int):
    super().__init__(("F32_F32_F32",) * count, "xla", "rna")
    self.operands: dict[int, tuple] = {}
    self.equations: dict[int, object] = {}

  def _eqn(self, i, eqn, ins, plan):
    if (
      i in plan.sites
      and eqn.primitive.name in ATTENTION_PRIMITIVES
      and not self.in_body
    ):
      self.operands[plan.sites[i]] = tuple(ins)
      self.equations[plan.sites[i]] = eqn
    return super()._eqn(i, eqn, ins, plan)


def attention_operands(fn, args: Sequence) -> dict[int, AttentionOperands]:
  """Site index -> (equation, operands as numpy) of every attention site
  of `fn` on `args` outside loop and branch bodies (one jit compile)."""
  closed, _ = trace(fn, args)
  plan, sites = plan_sites(closed.jaxpr)
  equations: dict[int, object] = {}

  def run(consts, leaves):
    reader = _OperandReader(len(sites))
    reader.run(closed.jaxpr, plan, consts, leaves)
    equations.update(reader.equations)
    return reader.operands

  found = jax.jit(run)(tuple(closed.consts), jax.tree_util.tree_leaves(args))
  return {
    site: (equations[site], [np.asarray(x) for x in ins])
    for site, ins in found.items()
  }


def attention_site_band(
  site: int, algorithm: str, k: int, found: AttentionOperands | None
) -> SiteBand | None:
  """An attention site's `SiteBand`: worst_abs the largest |O - O_f64|
  over the modelled kernel variants, expected_abs their largest rms
  (measured, not Higham's bound: `emulate_attention.attention_band`), the
  operand scale P|V|; K the head dim (`StableHloDot.contracting_size`).
  None without operands or where the forward is not emulated."""
  measured = None if found is None else attention_band(*found, algorithm)
  if measured is None:
    return None
  return SiteBand(site, algorithm, k, *measured)
