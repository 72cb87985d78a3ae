"""Numbers: errors, ULPs, noise floor and verdicts, and prediction.

accuracy (error statistics, ULPs, noise floor, bands, verdicts), rounding
(float formats by rounding), emulate_dot (one dot_general under an
algorithm), jaxpr_sites and emulate (a case's jaxpr with its dots
emulated), predict (GPU error predicted from emulation).
"""

from __future__ import annotations

__all__: list[str] = []
