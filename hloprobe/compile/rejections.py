"""A config XLA rejected, compiled again to see where: its StableHLO, the
module after every pass that completed, and XLA's whole message.

`compile_case` raises XLA's error as it is (its first line becomes the
config's `Failure`); a message such as "INVALID_ARGUMENT: Unsupported dot
precision algorithm: 4" names neither the dot nor the pass. `Rejection.of_compile`
lowers the config again and compiles it with `xla_dump_hlo_pass_re=.*`
(this compile's own debug options, as `--explain_passes` does), so that
`sites.explain_rejection` can read which pass ran last and which dot sites
the rejected module still holds. It costs one more failing compile, only for
configs that failed to compile.

Private in intent: use the package, `hloprobe.compile`.
"""

from __future__ import annotations

import dataclasses
import re
import tempfile

from hloprobe.compile import compat, lowering
from hloprobe.compile.case_model import Case
from hloprobe.compile.targets import Target

__all__ = ["Rejection", "missing_lowering"]

# jax's error for a primitive without a lowering rule for the platform
# (jax/_src/interpreters/mlir.py `lower_per_platform`: "MLIR translation
# rule for primitive '<name>' not found for platform cpu"; the same words in
# jax 0.10.2 and 0.12.0.1).
_NO_LOWERING = re.compile(
  r"MLIR translation rule for primitive '([^']+)' not found for platform cpu"
)
# Primitives jax lowers for GPUs only: the cuDNN fused attention ones,
# `mlir.register_lowering(..., platform="cuda")` alone
# (jax/_src/cudnn/fused_attention_stablehlo.py: dot_product_attention_fwd,
# _bwd and their fp8 forms; jax 0.10.2 and 0.12.0.1).
_GPU_ONLY = re.compile(r"dot_product_attention(_fp8)?_(fwd|bwd)")
# jax's lowering rules of the host callbacks, by the function the user
# called (jax/_src/debugging.py, jax/_src/callback.py; jax 0.10.2 and
# 0.12.0.1).
_CALLBACK_RULES = {
  "debug_callback_lowering": "jax.debug.print or jax.debug.callback",
  "debug_print_lowering_rule": "jax.debug.print",
  "io_callback_lowering": "io_callback",
  "pure_callback_lowering": "pure_callback",
}


def missing_lowering(error: BaseException) -> str | None:
  """The lowering jax could not make, in words; None otherwise.

  "GPU-only primitive dot_product_attention_fwd has no CPU lowering" where
  jax registers a CUDA lowering alone (`_GPU_ONLY`), else "primitive
  <name> has no CPU lowering": for a config on the CPU target (its compile
  failure) and for the executor's check (`numerics.executed`). A host
  callback lowered for a compile-only GPU (`_host_callback`) is named too.
  """
  found = _NO_LOWERING.search(str(error))
  if found is None:
    return _host_callback(error)
  name = found.group(1)
  kind = "GPU-only primitive" if _GPU_ONLY.fullmatch(name) else "primitive"
  return f"{kind} {name} has no CPU lowering"


def _host_callback(error: BaseException) -> str | None:
  """A host callback that jax cannot lower without an attached GPU, named
  by what the user wrote; None for any other error.

  jax lowers a host callback (`jax.debug.print`, `jax.debug.callback`,
  `io_callback`, `pure_callback`) through `emit_python_callback`
  (jax/_src/callback.py), which asks the module's backend for its
  platform; a compile-only GPU's (a topology's) is "gpu", which
  `xla_bridge.canonicalize_platform` resolves only against an attached GPU
  backend, so the lowering raises "Unknown backend: 'gpu' requested" (jax
  0.10.2 and 0.12.0.1: the same frames and words). The error's traceback
  says it was that call and which rule made it.
  """
  frames = []
  tb = error.__traceback__
  while tb is not None:
    frames.append(tb.tb_frame.f_code.co_name)
    tb = tb.tb_next
  if "emit_python_callback" not in frames:
    return None
  rules = [_CALLBACK_RULES[f] for f in frames if f in _CALLBACK_RULES]
  what = rules[-1] if rules else "a host callback"
  return (
    f"{what} cannot be lowered for a compile-only GPU (jax lowers host "
    "callbacks through an attached GPU backend); compile on a machine with "
    "a GPU, or take the callback out of the program"
  )


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

  @staticmethod
  def of_compile(
    case: Case, args: tuple, precision: str, target: Target
  ) -> Rejection | None:
    """Lowers and compiles a config again with every pass dumped: what XLA
    had in hand when it rejected it.

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
        options = {
          **lowering._gpu_compiler_options(target, dump_dir),
          **options,
        }
      try:
        lowered.compile(compiler_options=options)
      except compat.runtime_error_type() as e:
        dumps = lowering._read_pass_dumps(dump_dir)
        return Rejection(stablehlo, str(e), dumps)
    return None
