"""`hloprobe verify`: accept or reject a candidate fix, with the evidence.

The package's face: fix (parsing --fix and --require, the sweep),
requirements (judging them), evidence (what decided them, as records),
outcome (`verify`, `verify_fix`), findings (what a sweep got wrong, ranked
worst first: `find_findings`), candidates (the fixes that apply to them,
tried on the configs at fault and judged as `verify` judges, or listed
with their `verify` commands: `candidate_fixes`). `report.verification`
renders
the outcome; `report.explain_answer` the findings and the tries.

A fix is a matmul precision (`float32`, `F32_F32_F32`, ...) or an XLA_FLAGS
experiment (`no_dot_strength_reduction`, `NAME:--xla_...`). One sweep runs
the baseline and the fix on the same cases, targets and batch sizes; each
requirement is then judged on the fix's configs, from numbers only, with
observed values where the target runs and predicted ones (`predict`) where
it cannot:

  consistent  row 0 does not depend on batch size: for every (case, target,
              precision), max over row 0's values of |row0(n) - row0(smallest
              n)| <= NOISE_FACTOR x the f32 noise floor of row 0, both of the
              same output leaf, this config's headline (a batched one:
              `accuracy.headline_leaf`; a leaf without a batch axis, such as
              a loss over the batch, changes with n by design; a predicted
              leaf the smallest n did not headline cannot be compared and
              fails, saying so). Needs at least two batch sizes
              (`parse_requirements`); a group with one, or a case with no
              batched leaf, fails, saying so.
  accurate    every config is as close to float64 as f32 noise allows: row
              0 and the whole batch of the headline leaf within NOISE_FACTOR
              x the noise floor, every row of every leaf within
              NOISE_FACTOR x its own floor (`numerics.rows`: a FAIL names
              the worst row), and every other leaf's verdict exact or
              within noise. Or, with --abs_error_bound / --rel_error_bound
              (the names of XLA's run_hlo_module), max |err| <= abs bound or
              max rel err <= rel bound (XLA's ErrorSpec: either bound
              suffices), for the headline and every observed leaf. Either
              way, a config whose optimized module XLA made compute other
              math ("XLA changed the math", `numerics.made`) fails, its
              evidence naming the instruction.
  golden      the fix's configs match the committed goldens.
  invariant   every (case, target, precision) one class of identical bits
              over the batch sizes (`invariance.invariance_of`: the rows
              run where the target runs, else kernel identity or the kernel
              model); alone, the sweep is of the bits only (no numerics).

Without a fix (`verify_fix(spec, None, ...)`, `hloprobe verify` without
--fix) the baseline's own configs are judged, as they are.
"""

from __future__ import annotations

from hloprobe.verify.candidates import Candidate as Candidate
from hloprobe.verify.candidates import FixTrial as FixTrial
from hloprobe.verify.candidates import candidate_fixes as candidate_fixes
from hloprobe.verify.evidence import Evidence as Evidence
from hloprobe.verify.findings import Finding as Finding
from hloprobe.verify.findings import find_findings as find_findings
from hloprobe.verify.fix import REQUIREMENTS as REQUIREMENTS
from hloprobe.verify.fix import parse_fix as parse_fix
from hloprobe.verify.fix import parse_requirements as parse_requirements
from hloprobe.verify.outcome import verify_fix as verify_fix
from hloprobe.verify.requirements import judge as judge

__all__ = [
  "Candidate",
  "Evidence",
  "Finding",
  "FixTrial",
  "REQUIREMENTS",
  "candidate_fixes",
  "find_findings",
  "judge",
  "parse_fix",
  "parse_requirements",
  "verify_fix",
]


from hloprobe.verify import evidence as evidence
