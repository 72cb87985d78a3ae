"""A config XLA rejected, compiled again to see where: its StableHLO, the
module after every pass that completed, and XLA's whole message.

`compile_case` raises XLA's error as it is (its first line becomes the
config's `Failure`); a message such as "INVALID_ARGUMENT: Unsupported dot
precision algorithm: 4" names neither the dot nor the pass. `rejected_compile`
lowers the config again and compiles it with `xla_dump_hlo_pass_re=.*`
(this compile's own debug options, as `--explain_passes` does), so that
`sites.explain_rejection` can read which pass ran last and which dot sites
the rejected module still holds. It costs one more failing compile, only for
configs that failed to compile.

Private in intent: use the package, `hloprobe.compile`.
"""

from __future__ import annotations

import dataclasses
import tempfile

from hloprobe.compile import compat, lowering
from hloprobe.compile.case_model import Case
from hloprobe.compile.targets import Target

__all__ = ["Rejection", "rejected_compile"]


@dataclasses.dataclass(frozen=True, slots=True)
class Rejection:
  """What XLA had in hand when it rejected a config's compile.

  Attributes:
    stablehlo: the lowered module's StableHLO text (debug locations kept).
    message: XLA's whole error message (every line).
    pass_dumps: (file name, module text) after each pass that completed and
      changed the module, in order (`lowering`'s pass dumps; their names say
      the pass, `module_<id>.<name>.<seq>.<pipeline>.after_<pass>.before_
      <next>.txt`); () when XLA dumped none.
  """

  stablehlo: str
  message: str
  pass_dumps: tuple[tuple[str, str], ...] = ()


def rejected_compile(
  case: Case, args: tuple, precision: str, target: Target
) -> Rejection | None:
  """Lowers and compiles a config again with every pass dumped.

  Args:
    case, args, precision, target: as `lowering.compile_case` took them.

  Returns:
    The `Rejection`, or None when the compile succeeds this time (nothing
    to explain).

  Raises:
    Exception: whatever lowering raises (the config failed before XLA).
  """
  lowered = lowering.lower_case(case, args, precision, target)[0]
  stablehlo = compat.stablehlo_text(lowered)
  with tempfile.TemporaryDirectory(prefix="hloprobe-reject-") as dump_dir:
    options = lowering._pass_dump_options(dump_dir)
    if target.platform == "cuda":
      options = {**lowering._gpu_compiler_options(target, dump_dir), **options}
    try:
      lowered.compile(compiler_options=options)
    except compat.runtime_error_type() as e:
      dumps = lowering._read_pass_dumps(dump_dir)
      return Rejection(stablehlo, str(e), dumps)
  return None
