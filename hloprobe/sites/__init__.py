"""Dot sites: each StableHLO dot_general and what XLA made of it.

dot_sites (site mapping, fates), operand_ancestry (operands traced through
fusions, loops and branches), effective (the algorithm a gemm really uses),
passes (which HLO pass changed a site).
"""

from __future__ import annotations

__all__: list[str] = []
