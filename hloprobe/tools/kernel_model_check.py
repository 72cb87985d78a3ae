"""The kernel model against a `make gpu-check` record: what is left.

  python -m hloprobe.tools.kernel_model_check SWEEP_JSON TARGET

SWEEP_JSON is a gpu_check sweep record (e.g. tests/testdata/gpu_check/
nvidia_h200-jaxlib0.11.2-sweep.json), TARGET the compile-only target of
the recording GPU (its compute capability picks the mma model, e.g.
h200). For every baseline config the GPU ran with at least one site the
kernel model predicts bit for bit (`numerics.site_model`, from the
record's PTX evidence, split-K and effective algorithm), prints the
kernel model's row 0 against the observed one and what the remainder is
(`numerics.kernel_remainder`, in words by `report.kernel_words`: the
band sites' f32 order, the elementwise functions' ulp). Bad input: one line on stderr, exit 2.

Private in intent: `python -m hloprobe.tools.kernel_model_check`.
"""

from __future__ import annotations

import json
import re
import sys

from hloprobe.compile import get_case, get_target
from hloprobe.errors import InvalidArgumentError
from hloprobe.numerics import site_model
from hloprobe.numerics.kernel_sites import kernel_remainder
from hloprobe.report.kernel_words import remainder_lines

__all__ = ["check_lines", "main"]


# A recorded sweep's site names its kernel's mma opcodes and tf32 rounding
# only in its evidence words (results.json has no `SiteFate.mma_opcodes`):
# the one reader of those words, for a file recorded on a GPU.
_RECORDED_MMA_RE = re.compile(r"((?:wgmma\.mma_async|mma\.sync)\.[\w.]+)")


def _recorded_mma(evidence: str | None) -> tuple[str, ...]:
  """The mma opcodes a recorded site's `algorithm_evidence` names."""
  return tuple(sorted(set(_RECORDED_MMA_RE.findall(evidence or ""))))


def _recorded_rounding(evidence: str | None) -> str | None:
  """ "rna" where a recorded site's evidence names `cvt.rna.tf32.f32`."""
  return "rna" if "cvt.rna.tf32.f32" in (evidence or "") else None


def check_lines(record: dict, compute_capability: str) -> list[str]:
  """The lines for every config of `record` (a gpu_check sweep record)."""
  lines = []
  for c in record["configs"]:
    if (c["target"], c["experiment"], c["status"]) != ("gpu", "baseline", "ok"):
      continue
    sites = c["dot_sites"]
    kernels = {
      s["index"]: site_model(
        s["fate"],
        _recorded_mma(s["algorithm_evidence"]),
        compute_capability,
        s["split_k"],
        s["effective_algorithm"],
        _recorded_rounding(s["algorithm_evidence"]),
      )
      for s in sites
    }
    head = f"{c['case']} n = {c['n']} {c['precision']}"
    if all(k.ins is None for k in kernels.values()):
      lines.append(f"{head}: no bit-exact site (every site a band)")
      continue
    case = get_case(c["case"])
    args = case.inputs_for(case.full_inputs(), c["n"])
    algorithms = [s["effective_algorithm"] for s in sites]
    words = remainder_lines(
      kernel_remainder(case, args, algorithms, kernels, c["numerics"]["row0"])
    )
    lines += [f"{head}: {words[0]}"] + [f"  {w}" for w in words[1:]]
  return lines


def main(argv: list[str]) -> int:
  """`kernel_model_check SWEEP_JSON TARGET`; returns the exit status."""
  if len(argv) != 2:
    print("usage: kernel_model_check SWEEP_JSON TARGET", file=sys.stderr)
    return 2
  try:
    with open(argv[0], encoding="utf-8") as f:
      record = json.load(f)
    target = get_target(argv[1])
  except (OSError, ValueError, InvalidArgumentError) as e:
    print(f"kernel_model_check: {e}", file=sys.stderr)
    return 2
  if target.compute_capability is None:
    print(f"kernel_model_check: {argv[1]} is not a GPU target", file=sys.stderr)
    return 2
  print("\n".join(check_lines(record, target.compute_capability)))
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
