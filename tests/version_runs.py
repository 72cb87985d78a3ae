"""`VersionRun` records made by hand, as a release's worker sends them:
shared by tests/versions/compare_test.py and tests/versions/bisect_test.py."""

from __future__ import annotations

from hloprobe.versions.run import VersionRun


def config_row(n: int, fates: str, verdict: str = "consistent") -> dict:
  """A results.json config of the seed MLP on the CPU, as a worker sends."""
  return {
    "case": "seed_mlp",
    "target": "cpu",
    "n": n,
    "precision": "float32",
    "status": "ok",
    "fate_summary": fates,
    "dot_sites": [],
    "prediction": {"verdict": verdict, "row0_abs_err": 1e-6},
  }


def version_run(jaxlib: str, *configs: dict, jax_commit: str | None = None):
  reply = {
    "jax": jaxlib,
    "jax_commit": jax_commit,
    "capabilities": {"threefry_partitionable": True},
    "results": {"configs": list(configs)},
    "requirements": [],
  }
  return VersionRun(jaxlib, reply=reply, python_version="3.13")


def not_installed(jaxlib: str) -> VersionRun:
  return VersionRun(jaxlib, error="not installed: no wheel", installed=False)
