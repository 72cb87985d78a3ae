"""Predicted numerics of a config: what its chosen algorithms should compute.

For each config, the case is re-evaluated on the CPU (`emulate`) with every
dot site at its effective algorithm (`DotFate.effective_algorithm`, which
`effective` read from the kernel or a rule), and compared with the float64
reference (`accuracy`). Around it: the f32 noise floor (every site at F32
under several summation orders), per-site attribution (each non-F32 site
alone, and each one put back to F32), each site's analytic band, the
candidate assignment that best matches an observed run, and a verdict.

Emulations are cached per (batch size, site algorithms, order), so configs
that share an assignment (most precisions on most targets compute F32; a100
and h100 under float32 are one emulation) cost one emulation. The
assignments one config will ask for at its batch size (all F32, its own,
and those of the per-site attribution) are emulated together in one jit
compile (`emulate.emulate_many`): XLA's CPU compile, not the run, is most
of an emulation's cost. A `Predictor` holds that cache for one case; it is
made per sweep, not kept globally.
"""

from __future__ import annotations

import contextlib
import dataclasses

import jax
import numpy as np

from hloprobe.compile import timing
from hloprobe.compile.cases import Case
from hloprobe.errors import HloprobeError
from hloprobe.numerics import accuracy, emulate
from hloprobe.sites.dot_sites import DotFate, Fate

__all__ = ["Prediction", "Predictor", "SiteShare"]

F32 = "F32_F32_F32"
# Fates whose arithmetic no candidate changes: the strength-reduced ones.
_FIXED_FATES = (Fate.MULTIPLY, Fate.MULTIPLY_REDUCE, Fate.GONE)


@dataclasses.dataclass(frozen=True, slots=True)
class SiteShare:
  """One non-F32 site's part in a config's predicted error (row 0).

  Attributes:
    site: dot site index.
    algorithm: its effective algorithm.
    alone_abs: |row 0 - f64| with only this site at its algorithm.
    without_abs: |row 0 - f64| with this site at F32, the others as chosen.
    share: alone_abs over the sum of all sites' alone_abs, in [0, 1].
  """

  site: int
  algorithm: str
  alone_abs: float
  without_abs: float
  share: float


@dataclasses.dataclass(frozen=True)
class Prediction:
  """A config's predicted numerics and verdict.

  Attributes:
    site_algorithms: the algorithm emulated at each site.
    stats: predicted errors against float64 (`accuracy.ErrorStats`).
    noise: the f32 noise floor of the config.
    tolerance_abs: how far an observed row 0 may sit from the predicted one
      and still be explained: NOISE_FACTOR times the larger of the
      predicted and the F32 row-0 spread over summation orders.
    shares: attribution of the predicted error to the non-F32 sites (only
      where the error exceeds the noise floor).
    top_site: the site with the largest share, or None.
    bands: the analytic band of each site (None where not measurable), from
      operand magnitudes over the largest batch swept.
    best_candidate: for an observed run, the candidate assignment whose
      emulated row 0 is nearest, e.g. "TF32_TF32_F32 at sites [0, 1, 2]"
      or "F32_F32_F32"; None without an observation.
    verdict: see `accuracy.verdict`.
    note: why something is missing (e.g. unknown algorithms taken as F32).
  """

  site_algorithms: tuple[str, ...]
  stats: accuracy.ErrorStats
  noise: accuracy.NoiseFloor
  tolerance_abs: float
  shares: tuple[SiteShare, ...]
  top_site: int | None
  bands: tuple[accuracy.SiteBand | None, ...]
  best_candidate: str | None
  verdict: str
  note: str | None = None


# Fixed summation orders (all but XLA's own): each output element is summed
# the same way whatever the batch size, so they are emulated once, at the
# largest batch size, and sliced.
_FIXED_ORDERS = tuple(o for o in emulate.SUMMATION_ORDERS if o != "xla")


class Predictor:
  """Predicts configs of one case; caches emulations between them.

  Like the float64 reference, emulations in the fixed summation orders are
  made once at the largest batch size and sliced along the case's output
  axis: a sweep's batch axis maps rows independently.

  Args:
    case: the case.
    full_inputs: its `make_inputs()`.
    reference: its float64 reference for the largest batch size swept.
  """

  def __init__(self, case: Case, full_inputs: tuple, reference: np.ndarray):
    self._case, self._full, self._reference = case, full_inputs, reference
    self._largest = np.shape(reference)[case.output_axis]
    self._outputs: dict[tuple, np.ndarray] = {}
    self._scales: tuple | None = None
    self._counts: dict[int, int] = {}
    self._watch: timing.Stopwatch | None = None  # set during `predict`

  def _stage(self, name: str):
    """Times a stage on the current config's stopwatch, if any."""
    return (self._watch.stage if self._watch else timing.null_stage)(name)

  def _slice(self, out: np.ndarray, n: int) -> np.ndarray:
    return np.take(out, np.arange(n), axis=self._case.output_axis)

  def _ref(self, n: int) -> np.ndarray:
    return self._slice(self._reference, n)

  def _emulate(self, n: int, algorithms: tuple[str, ...]) -> np.ndarray:
    """The output at batch n in XLA's own summation order (cached)."""
    key = (n, algorithms, "xla")
    if key not in self._outputs:
      args = self._case.inputs_for(self._full, n)
      with self._stage("emulation"), _x64_if_needed(algorithms):
        out = emulate.emulate_case(self._case.fn, args, algorithms)
      self._outputs[key] = np.asarray(jax.tree_util.tree_leaves(out)[0])
    return self._outputs[key]

  def _prefetch(self, n: int, assignments) -> None:
    """Emulates the missing assignments at batch n in one compile."""
    missing = sorted(
      {a for a in assignments if (n, a, "xla") not in self._outputs}
    )
    for x64 in (False, True):  # F64 sites need x64 on while tracing
      group = [a for a in missing if ("F64_F64_F64" in a) == x64]
      if not group:
        continue
      args = self._case.inputs_for(self._full, n)
      with self._stage("emulation"), _x64_if_needed(group[0]):
        outs = emulate.emulate_many(self._case.fn, args, group)
      for a, out in zip(group, outs):
        self._outputs[(n, a, "xla")] = out

  def _site_scales(self) -> tuple:
    """Each site's (max, rms) of |A||B| over the largest batch (cached).

    Measured once: the max over the largest batch bounds the max over any
    smaller one, so the worst-case bands stay bounds.
    """
    if self._scales is None:
      args = self._case.inputs_for(self._full, self._largest)
      with self._stage("emulation"):
        out, self._scales = emulate.emulate_with_scales(self._case.fn, args)
      key = (self._largest, (F32,) * len(self._scales), "xla")
      self._outputs.setdefault(key, out)
    return self._scales

  def _fixed_orders(self, algorithms: tuple[str, ...]) -> dict[str, np.ndarray]:
    """Outputs at the largest batch size in the fixed orders (cached)."""
    key = (self._largest, algorithms, _FIXED_ORDERS[0])
    if key not in self._outputs:
      args = self._case.inputs_for(self._full, self._largest)
      with self._stage("emulation"), _x64_if_needed(algorithms):
        spread = emulate.order_spread(
          self._case.fn, args, algorithms, orders=_FIXED_ORDERS
        )
      for order, out in spread.outputs.items():
        self._outputs[(self._largest, algorithms, order)] = out
    return {
      o: self._outputs[(self._largest, algorithms, o)] for o in _FIXED_ORDERS
    }

  def _row0(self, n: int, algorithms: tuple[str, ...]) -> float:
    return float(self._emulate(n, algorithms).reshape(-1)[0])

  def _spread(self, n: int, algorithms: tuple[str, ...]) -> accuracy.NoiseFloor:
    """Row 0 and batch against float64 over every summation order."""
    outputs = {
      o: self._slice(x, n) for o, x in self._fixed_orders(algorithms).items()
    }
    outputs["xla"] = self._emulate(n, algorithms)
    return accuracy.noise_floor(outputs, self._ref(n))

  def _row0_abs(self, n: int, algorithms: tuple[str, ...]) -> float:
    return abs(self._row0(n, algorithms) - float(self._ref(n).reshape(-1)[0]))

  def predict(
    self,
    n: int,
    fates: tuple[DotFate, ...],
    observed: accuracy.ErrorStats | None,
    watch: timing.Stopwatch | None = None,
  ) -> Prediction:
    """The prediction of one config at batch size n.

    Args:
      n: batch size.
      fates: the config's dot sites, with effective algorithms.
      observed: its observed errors, or None where it cannot run.
      watch: if given, charged the time of each stage (`timing.STAGES`).

    Raises:
      HloprobeError: the emulator's sites do not match the StableHLO sites.
      EmulationError: the case holds a primitive the emulator cannot follow.
    """
    self._watch = watch
    try:
      with self._stage("predict"):
        return self._predict(n, fates, observed)
    finally:
      self._watch = None

  def _predict(self, n, fates, observed) -> Prediction:
    if n not in self._counts:  # one trace per batch size, not per config
      args = self._case.inputs_for(self._full, n)
      with self._stage("emulation"):
        self._counts[n] = emulate.count_sites(self._case.fn, args)
    count = self._counts[n]
    if count != len(fates):
      raise HloprobeError(
        f"the emulator finds {count} dot sites, the StableHLO {len(fates)}; "
        "cannot pair them"
      )
    chosen, note = _chosen_algorithms(fates)
    # What this config will most likely ask for, emulated together.
    self._prefetch(n, [(F32,) * count, chosen, *_share_assignments(chosen)])
    with self._stage("noise floor"):
      noise = self._spread(n, (F32,) * count)
      spread = noise if chosen == (F32,) * count else self._spread(n, chosen)
    stats = accuracy.error_stats(self._emulate(n, chosen), self._ref(n))
    tolerance = accuracy.NOISE_FACTOR * max(
      spread.row0_spread_abs, noise.row0_spread_abs
    )
    judged = observed or stats
    with self._stage("attribution"):
      shares = ()
      if judged.row0_abs > accuracy.NOISE_FACTOR * noise.row0_abs:
        shares = self._shares(n, chosen)
      bands = self._bands(n, fates, chosen)
      best = self._best_candidate(n, fates, chosen, observed, tolerance)
    top = max(shares, key=lambda s: s.alone_abs).site if shares else None
    return Prediction(
      site_algorithms=chosen,
      stats=stats,
      noise=noise,
      tolerance_abs=tolerance,
      shares=shares,
      top_site=top,
      bands=bands,
      best_candidate=best,
      verdict=accuracy.verdict(observed, stats, noise, tolerance, chosen),
      note=note,
    )

  def _shares(self, n: int, chosen: tuple[str, ...]) -> tuple[SiteShare, ...]:
    rows = []
    for i, alone, without in _share_pairs(chosen):
      rows.append(
        (i, chosen[i], self._row0_abs(n, alone), self._row0_abs(n, without))
      )
    total = sum(r[2] for r in rows) or 1.0
    return tuple(SiteShare(i, a, al, wo, al / total) for i, a, al, wo in rows)

  def _bands(
    self, n: int, fates, chosen
  ) -> tuple[accuracy.SiteBand | None, ...]:
    bands = []
    for f, alg, scale in zip(fates, chosen, self._site_scales()):
      ok = scale is not None and alg in accuracy.OPERAND_UNIT
      bands.append(
        accuracy.site_band(f.site.index, alg, f.site.contracting_size, *scale)
        if ok
        else None
      )
    return tuple(bands)

  def _best_candidate(
    self, n, fates, chosen, observed, tolerance
  ) -> str | None:
    """The assignment whose row 0 is nearest the observed one.

    Where the observation sits within tolerance of the chosen assignment,
    that one is taken without emulating the others.
    """
    if observed is None:
      return None
    if abs(self._row0(n, chosen) - observed.row0) <= tolerance:
      return accuracy.describe_algorithms(chosen) or F32
    candidates = {chosen, (F32,) * len(chosen)}
    for alg in ("TF32_TF32_F32", "BF16_BF16_F32"):
      candidates.add(
        tuple(F32 if f.fate in _FIXED_FATES else alg for f in fates)
      )
    best = min(
      sorted(candidates), key=lambda c: abs(self._row0(n, c) - observed.row0)
    )
    return accuracy.describe_algorithms(best) or F32


def _share_pairs(chosen: tuple[str, ...]):
  """(site, only it at its algorithm, it alone put back to F32) per non-F32 site."""
  for i, alg in enumerate(chosen):
    if alg != F32:
      alone = tuple(alg if j == i else F32 for j in range(len(chosen)))
      without = tuple(F32 if j == i else a for j, a in enumerate(chosen))
      yield i, alone, without


def _share_assignments(chosen: tuple[str, ...]) -> list[tuple[str, ...]]:
  """Every assignment `_shares` emulates for `chosen`."""
  return [
    a for _, alone, without in _share_pairs(chosen) for a in (alone, without)
  ]


def _x64_if_needed(algorithms: tuple[str, ...]):
  """F64_F64_F64 sites need 64-bit types enabled while emulating."""
  x64 = "F64_F64_F64" in algorithms
  return jax.enable_x64(True) if x64 else contextlib.nullcontext()


def _chosen_algorithms(fates) -> tuple[tuple[str, ...], str | None]:
  """Each site's effective algorithm; unknown or unemulated ones as F32."""
  chosen, unknown = [], []
  for f in fates:
    alg = f.effective_algorithm
    if alg in emulate.EMULATED_ALGORITHMS:
      chosen.append(alg)
    else:
      chosen.append(F32)
      unknown.append(f"site {f.site.index}: {alg or 'unknown'}")
  note = f"taken as F32_F32_F32: {', '.join(unknown)}" if unknown else None
  return tuple(chosen), note
