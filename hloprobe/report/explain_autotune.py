"""Who chose each gemm fusion site, under loaded autotune results.

`--autotune_results` compiles name, per site, the results file's entry
("autotuned on <device>") or its absence ("no autotune entry for this
fusion; default config used"): `LoadedResults.fusion_selections`, carried as
`SiteFate.selection`. `site_selections` words them per site for
`explain`'s "cannot settle" lines; `autotuned` tells `explain` which
Triton gemm sites the results settled (no "autotuning could pick cuBLAS"
alternative there).

Private in intent: use the package, `hloprobe.report`.
"""

from __future__ import annotations

from hloprobe.compile import selection_note
from hloprobe.records import ConfigResult
from hloprobe.sites import SiteFate

__all__ = ["autotuned", "site_selections"]


def autotuned(f: SiteFate) -> bool:
  """Whether loaded autotune results chose the site's fusion."""
  note = selection_note(f.selection)
  return note is not None and note.autotuned


def site_selections(configs: list[ConfigResult]) -> tuple[str, ...]:
  """Who chose each gemm fusion site under loaded autotune results, e.g.
  "site 0 (bfloat16; n = 4096): autotuned on NVIDIA A100-SXM4-40GB
  (a100.textproto: CUBLASLT_FISSION: gemm { algorithm: -1 })"; () without
  results. A cuBLAS entry settles the emitter, not its TF32 use: its
  `GemmKey` holds an index into cuBLASLt's heuristic list of algorithms
  and a workspace size, nothing of the math mode
  (`CublasLtBackend::GetSupportedConfigs`/`ApplyConfig`,
  xla/backends/gpu/autotuner/cublaslt.cc, openxla/xla 00e3ab66: it sets
  `selected_algorithm`; the compute type comes from `GemmConfig::For` and
  the dot's precision config), so the verdict's "ambiguous" on TF32
  stays."""
  found: dict[tuple[int, str], tuple[dict, dict]] = {}
  for r in configs:
    for f in r.compilation.fates if r.ok else ():
      if selection_note(f.selection) is not None:
        ps, ns = found.setdefault((f.site.index, f.selection), ({}, {}))
        ps[r.config.precision], ns[r.config.n] = None, None
  return tuple(
    f"site {i} ({', '.join(ps)}; n = {', '.join(map(str, sorted(ns)))}): "
    f"{words}"
    for (i, words), (ps, ns) in sorted(found.items())
  )
