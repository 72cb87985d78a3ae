"""Sweep records made by hand for the pictures' tests: a config whose row-0
error is `err` over an f32 noise floor `floor` (observed where `ran`, else
predicted). Shared by tests/pictures/severity_test.py and plot_test.py."""

from __future__ import annotations

from hloprobe.compile.targets import get_target
from hloprobe.numerics import Verdict, VerdictKind, accuracy, predict
from hloprobe.records import Config, ConfigResult, Execution


def config_result(
  target="cpu",
  n=2,
  precision="float32",
  err=1e-4,
  floor=1e-4,
  ran=True,
  verdict=Verdict(VerdictKind.WITHIN_NOISE),
  worst=None,
  case="seed_mlp",
) -> ConfigResult:
  """A config whose row-0 error (observed where `ran`, else predicted) is
  `err` over an f32 noise floor `floor`; `verdict`: its verdict record;
  `worst`: its worst row."""
  stats = accuracy.ErrorStats(
    row0=0.5, row0_ref=0.5, row0_abs=err, max_abs=err, max_rel=err
  )
  prediction = predict.Prediction(
    site_algorithms=("F32_F32_F32",),
    stats=stats,
    noise=accuracy.NoiseFloor(floor, floor, floor / 4),
    tolerance_abs=floor,
    shares=(),
    top_site=None,
    bands=(None,),
    best_candidate=None,
    leaves=("",),
    verdicts=(verdict,),
    rows=(worst,),
  )
  run = Execution(run_s=0.1, leaf_stats=(stats,), headline=0) if ran else None
  return ConfigResult(
    Config(case, get_target(target), n, precision),
    execution=run,
    prediction=prediction,
  )
