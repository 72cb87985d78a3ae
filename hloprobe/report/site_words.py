"""Failures, rejected compiles and the site notes on a verdict or a
prediction in words: the one place these sentences are made (issue 36:
words only at the edge).

The records (`records.Failure`, `sites.CompileFinding`, the notes of
`numerics.note_records` on a verdict or a prediction) carry the stage, the
error, the site indices, algorithms, fates, dtypes and the rule; code
decides by those fields. What people read of them is made here, for the
text, the tables, the verify outcome and results.json ("sites [0, 1, 2,
3] (F16_F16_F32) rejected by dot strength reduction ...: XlaRuntimeError:
...", "site 2 ambiguous, emulated as F32", "TF32_TF32_F32 at sites [1],
hidden by bf16 output rounding").

Private in intent: use the package, `hloprobe.report`.
"""

from __future__ import annotations

__all__ = [
  "best_candidate_words",
  "collective_words",
  "conflict_words",
  "failure_words",
  "fp8_rewrite_words",
  "pass_fate_words",
  "finding_words",
  "groups_words",
  "prediction_note",
  "site_json",
  "site_note_words",
]


def conflict_words(c) -> str | None:
  """A site's `PrecisionConflict` (`SiteFate.conflict`) in words, e.g.
  "optimized precision config highest,highest contradicts StableHLO
  DEFAULT,DEFAULT"; None for None."""
  if c is None:
    return None
  return (
    f"optimized precision config {c.optimized} contradicts StableHLO "
    f"{','.join(c.stablehlo)}"
  )


def collective_words(c) -> str | None:
  """A site's `Collective` (`SiteFate.collective`) in words, e.g.
  "all-reduce over 8 devices (all-reduce.3)", its reduction named where
  it is not an add ("all-reduce (maximum) over 8 devices (...)"); None
  for None."""
  if c is None:
    return None
  named = c.kind if c.reduction == "add" else f"{c.kind} ({c.reduction})"
  return f"{named} over {c.devices} devices ({c.name})"


def _fp8_gate_words(r, gate) -> str:
  """One thing that kept the fp8 cuBLASLt rewrite (`Fp8Rewrite` `r`)
  from firing, or from being known (`Fp8Gate` `gate`)."""
  g = r.GATE
  if gate == g.OLD_GPU:
    return (
      f"compute capability {r.compute_capability} < 8.9 (FP8 cuBLASLt "
      "gemms need Ada, Hopper or later)"
    )
  if gate == g.BOTH_E5M2:
    return "both operands f8e5m2 (one must be f8e4m3fn)"
  if gate == g.OPERAND_TYPES:
    lhs, rhs = r.operand_types
    return (
      f"operand types {lhs} x {rhs} (cuBLASLt FP8 takes f8e4m3fn or f8e5m2)"
    )
  if gate == g.OUTPUT_TYPE:
    return f"output {r.output} (must be {', '.join(r.OUTPUT_TYPES)})"
  if gate == g.DIMENSIONS:
    return (
      "an operand without exactly one contracting and one non-contracting "
      "dimension"
    )
  if gate == g.STRENGTH_REDUCED:
    return (
      f"dot strength reduction made it a {r.fate.value} before any gemm "
      "rewriter ran (no dot left to rewrite)"
    )
  if gate == g.TRITON_GEMM:
    words = (
      "the Triton gemm took the dot first (triton-gemm-rewriter runs "
      "before GemmRewriter; --xla_gpu_enable_triton_gemm=false leaves it to "
      "GemmRewriter)"
    )
    if r.compile_only:
      words += (
        "; compile-only: a real GPU's autotuner may hand it to cuBLAS, "
        "whose GemmRewriter can fire it"
      )
    return words
  if gate == g.NOT_FP8_GEMM:
    return (
      "GemmRewriter made a non-FP8 gemm; its operands are not "
      "MatchFp8Param's dequantization (an f8 value converted, optionally "
      "times or over a broadcast scalar, then only layout ops) or cuBLASLt "
      "does not support the gemm (GemmIsSupportedByCublasLt): the optimized "
      "HLO does not tell which"
    )
  if gate == g.NO_COMPUTE_CAPABILITY:
    return "the target's compute capability is unknown"
  return f"the site is {r.fate.value}"  # OTHER_FATE


def fp8_rewrite_words(r) -> str | None:
  """A site's fp8 cuBLASLt rewrite (`SiteFate.fp8_rewrite`, an
  `Fp8Rewrite`) in words: "fired (`__cublas$lt$matmul$f8`, scales
  a=x_scale, b=w_scale; A f8e4m3fn[16,64], B f8e4m3fn[32,64])", "did not
  fire: <conditions>" or "unknown: <why>"; None for None."""
  if r is None:
    return None
  if r.fired:
    if not r.call:
      return f"fired (`{r.TARGET}`)"
    scales = ", ".join(f"{k}={name}" for k, name in r.scales)
    ab = ", ".join(
      f"{k} {dtype}[{','.join(map(str, dims))}]"
      for k, dtype, dims in r.operands
    )
    return f"fired (`{r.TARGET}`, scales {scales or 'none'}; {ab})"
  why = "; ".join(_fp8_gate_words(r, g) for g in r.gates)
  return f"{'did not fire' if r.fired is False else 'unknown'}: {why}"


def site_json(f, rewritten_by=None) -> dict:
  """One dot site (`SiteFate`) as results.json's "dot_sites" entry: its
  `record`, with the fields made of words ("conflict", "collective",
  "fp8_rewrite", "rewritten_by"'s "fate_after") worded here, in their
  place."""
  out = f.record(rewritten_by)
  out["conflict"] = conflict_words(f.conflict)
  out["collective"] = collective_words(f.collective)
  out["fp8_rewrite"] = fp8_rewrite_words(f.fp8_rewrite)
  if rewritten_by is not None:
    out["rewritten_by"]["fate_after"] = pass_fate_words(rewritten_by)
  return out


def pass_fate_words(p) -> str:
  """What a site was right after the pass that rewrote it (a
  `PassAttribution`): its fate, a dot's emitter, "(merged)", its split-K,
  e.g. "dot in __ynn_fusion", "dot split-K 4", "dot (merged)"."""
  words = p.fate.value
  if p.emitter is not None:
    words = f"{words} in {p.emitter}"
  if p.merged:
    words = f"{words} (merged)"
  return f"{words} split-K {p.split_k}" if p.split_k else words


# The preset a site the emulator does not model is predicted as.
_F32 = "F32_F32_F32"


def finding_words(finding) -> str:
  """A rejected compile's sites, algorithm and rule (`sites.CompileFinding`).

  E.g. "sites [0, 1, 2] (F16_F16_F32) rejected by dot strength reduction
  ...", "site 3 rejected by ...", "no dot site named rejected by ...".
  """
  if not finding.sites:
    where = "no dot site named"
  elif len(finding.sites) == 1:
    where = f"site {finding.sites[0]}"
  else:
    where = f"sites {list(finding.sites)}"
  alg = f" ({finding.algorithm})" if finding.algorithm else ""
  return f"{where}{alg} rejected by {finding.rule}"


def failure_words(failure) -> str:
  """A config's failure (`records.Failure`): its error, after the
  finding's words (`finding_words`) where XLA rejected the compile and the
  sites were looked for."""
  if failure.finding is None:
    return failure.error
  return f"{finding_words(failure.finding)}: {failure.error}"


def groups_words(groups) -> str:
  """`TF32_TF32_F32 at sites [0, 1, 2] and ...` for (algorithm, sites)
  groups (`Verdict.algorithms`, `BelowRequest.algorithms`)."""
  return " and ".join(f"{alg} at sites {list(sites)}" for alg, sites in groups)


def _where(sites) -> str:
  """`site 0` or `sites [1, 2]`."""
  return f"site {sites[0]}" if len(sites) == 1 else f"sites {list(sites)}"


def _below_words(n) -> str:
  """A `site_notes.BelowRequest` by how the verdict shows its sites."""
  named = groups_words(n.algorithms)
  if n.shown.name == "BELOW":
    return f"{named} below the requested precision"
  if n.shown.name == "PREDICTED":
    return f"{named} predicted, not seen in this run"
  why = f"{n.output} output rounding" if n.output else "the f32 noise"
  return f"{named}, hidden by {why}"


def _tf32_optional_words(n) -> str:
  """A `site_notes.Tf32Optional`: which library kept which sites in f32,
  or which sites row 0 assumes TF32 at (ambiguous)."""
  libs = [(fate.value, _where(sites)) for fate, sites in n.libraries]
  if n.kept:
    return " and ".join(
      f"{lib} kept {where} in f32 (TF32 allowed, not required)"
      for lib, where in libs
    )
  at = " and ".join(f"{lib} {where}" for lib, where in libs)
  names = sorted({"cuDNN" if "cuDNN" in lib else "cuBLAS" for lib, _ in libs})
  return (
    f"ambiguous: row 0 assumes TF32_TF32_F32 at {at}, where TF32 is "
    f"allowed, not required, and {' or '.join(names)} may keep some in f32"
  )


def _one_site_words(n) -> str:
  """A `site_notes.SiteNote`, by its kind."""
  kind, alg = n.kind.name, n.algorithm
  i = n.sites[0]
  if kind == "TF32_TRUNCATED":
    return (
      f"sites {list(n.sites)}: TF32_TF32_F32 kernels with no "
      f"cvt.rna.tf32.f32 (TF32 operands truncated), emulated as {alg}"
    )
  if kind == "AMBIGUOUS":
    return f"site {i} ambiguous, emulated as F32"
  if kind == "FP8_FAST_ACCUM":
    return (
      f"site {i} {alg}: not modelled: cuBLASLt FP8 fast accumulation "
      f"(predicted as {_F32})"
    )
  if kind == "EMULATED_F32":
    return f"site {i} {alg or 'unknown'}, emulated as F32"
  head = f"site {i} ran {alg} for declared {n.declared}"
  if kind == "STRENGTH_REDUCED":
    return (
      f"{head}: dot strength reduction made it a {n.fate.value}, whose "
      f"kernel computes {alg}, so this row says nothing about a gemm that "
      "honours the preset"
    )
  if kind == "PRESET_IGNORED":
    return (
      f"{head}: the target ignores the preset, so this check says nothing "
      "about a GPU"
    )
  if kind == "CONFLICT":
    return f"site {i}: {conflict_words(n.detail)}"
  if kind == "FP8_REWRITE":
    return f"site {i}: fp8 cuBLASLt rewrite {fp8_rewrite_words(n.detail)}"
  raise ValueError(f"no words for a site note of kind {kind!r}")


def _overflow_words(n) -> str:
  """A `site_notes.SumOverflow`: the sites whose exact sum overflows."""
  found = ", ".join(
    f"site {i} ({lhs} x {rhs} -> {n.dtype} {fate.value})"
    for i, lhs, rhs, fate in n.sites
  )
  return f"the exact sum overflows {n.dtype} at {found}"


def _taken_words(n) -> str:
  """A `note_records.TakenAsF32`: the sites emulated as F32 and why."""
  sites = ", ".join(
    f"site {i}: {alg} (not modelled: cuBLASLt FP8 fast accumulation)"
    if alg == n.fast_accum
    else f"site {i}: {alg or 'unknown'}"
    for i, alg in n.sites
  )
  return f"taken as {_F32}: {sites}"


def _attention_bias_words(n) -> str:
  """A `note_records.AttentionBias`: the sites and their dtypes."""
  at = "; ".join(f"site {i}: bias {bias}, q/k/v {q}" for i, bias, q in n.sites)
  return (
    f"cuDNN attention bias of another dtype than q/k/v at {at} (read in its "
    "own type, added to the f32 scores)"
  )


def _shares_alone_words(n) -> str:
  """A `note_records.SharesAlone`: the shares made alone, and why."""
  why = []
  if n.program_sites > n.sites_above:
    why.append(f"{n.program_sites} dot sites (over {n.sites_above})")
  if n.inputs_bytes >= n.from_bytes:
    why.append(
      f"inputs of {n.inputs_bytes / 2**20:.1f} MiB (from "
      f"{n.from_bytes / 2**20:.0f} MiB)"
    )
  if n.groups:
    which = (
      f"site shares from the {n.sites} sites of the group of largest error "
      f"({n.groups} groups of consecutive non-F32 sites, each emulated "
      f"together at row 0: {n.non_f32_sites} sites, over "
      f"{n.grouped_above}), each alone at row 0; the other groups' sites' "
      "shares and "
    )
  else:
    which = (
      f"site shares from each of the {n.sites} non-F32 sites alone at row 0; "
    )
  return (
    f"{which}each site's error without it (the others as chosen) not "
    f"computed: a large program ({' and '.join(why)})"
  )


_NOTE_WORDS = {
  "below request": _below_words,
  "tf32 optional": _tf32_optional_words,
  "site": _one_site_words,
  "sum overflow": _overflow_words,
  "taken as F32": _taken_words,
  "attention bias": _attention_bias_words,
  "shares alone": _shares_alone_words,
}


def best_candidate_words(p) -> str | None:
  """A prediction's best candidate assignment (`Prediction.best_candidate`)
  in words: "TF32_TF32_F32 at sites [1, 2]", or "F32_F32_F32" where every
  site is; None without one (no observed run)."""
  if p.best_candidate is None:
    return None
  return groups_words(p.best_candidate) or _F32


def site_note_words(n) -> str | None:
  """A site note on a verdict or a prediction (`numerics.note_records`,
  by their `note`) in words; None for a record that is not a site note."""
  words = _NOTE_WORDS.get(n.note)
  return None if words is None else words(n)


def prediction_note(p) -> str | None:
  """results.json's "note" of a prediction: its notes (`Prediction.notes`)
  in words, joined by "; "; None without any."""
  return "; ".join(map(site_note_words, p.notes)) or None
