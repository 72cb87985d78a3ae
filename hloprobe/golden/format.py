"""The golden file format: names, headers, dot summaries, the manifest.

File schema version 1 for the text files, 3 for dots.json (2 had no "math",
1 one "emitter" per site), manifest schema version 2 (the folder layout).
One config makes three files:

  <target>/<case>/n<N>-<precision>[-<experiment>].hlo
                   `// hloprobe-golden v1 kind=hlo target=cpu case=seed_mlp
                   n=1 precision=bfloat16 jax=0.10.2 jaxlib=0.10.2
                   date=2025-01-31` (one line), then `ir.canonical_text("hlo")`
                   text. `//` starts a comment for XLA's HLO parser too.
  <target>/<case>/n<N>-<precision>[-<experiment>].dots.json
                   {"golden": {<the header fields>, "schema_version": 3},
                    "fate_summary": "dot x3, multiply+reduce x1",
                    "sites": [<one object per dot site, one per line>],
                    "math": null | what XLA made (`diff.math_summary`)}
  stablehlo/<case>/n<N>-<precision>[-<experiment>].stablehlo.mlir
                   the same header with kind=stablehlo and no target (an
                   MLIR comment), then `ir.canonical_text("stablehlo")`.
                   StableHLO is what JAX lowers, before any target's
                   compiler, so every target of a config shares this one
                   file; a snapshot whose targets lower a config to
                   different StableHLO fails that config (`snapshot`).

A site object: "site" (index in StableHLO program order, from 0), "lhs",
"rhs", "result" (HLO shapes such as "f32[48,2]"), "K" (contracting size),
batch and contracting dims, "stablehlo_precision" ("DEFAULT,DEFAULT"),
"stablehlo_algorithm" (preset or null), "fate" (`dot_sites.Fate` value),
"fusion_kind", "backend_config_kind", "custom_call_target" (what XLA
prints: `sites.SiteFate`), "precision_config", "algorithm",
"effective_algorithm", "split_k" (see `diff.SUMMARY_KEYS`) and "pass"
("<pass> (<pipeline>)" that rewrote the site, or null when it stays a
plain dot). No source paths, no instruction names.

MANIFEST.json: {"schema": "hloprobe-golden-manifest", "schema_version": 3,
"jax", "jaxlib", "date", "sweep": {"cases", "targets", "batch_sizes",
"precisions"}}; version 3's paths are relative to its folder (`folder`).

Parsing validates the header against the file name and the body against its
kind, and raises `GoldenError` naming the file, never a bare traceback.
Private in intent: use the package, `hloprobe.golden`.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import re
from collections.abc import Mapping

from hloprobe.errors import GoldenError, HloprobeError
from hloprobe.golden.diff import dot_summary, math_summary
from hloprobe.ir import canonical_text

__all__ = [
  "DOTS_SCHEMA_VERSION",
  "KINDS",
  "MANIFEST_SCHEMA_VERSION",
  "SCHEMA_VERSION",
  "STABLEHLO_DIR",
  "ConfigKey",
  "GoldenFile",
  "config_files",
  "manifest_text",
  "parse",
  "parse_manifest",
  "path_key",
  "same_manifest",
  "today",
]

SCHEMA_VERSION = 1
DOTS_SCHEMA_VERSION = 3  # 3: "math" (2 is read as "math": null)
# 2: StableHLO once per case and config (1: per target); 3: relative paths.
MANIFEST_SCHEMA_VERSION = 3
KINDS = ("stablehlo.mlir", "hlo", "dots.json")
# The folder of the target-independent StableHLO files.
STABLEHLO_DIR = "stablehlo"
_KIND_WORDS = {"stablehlo.mlir": "stablehlo", "hlo": "hlo", "dots.json": "dots"}
_MANIFEST_SCHEMA = "hloprobe-golden-manifest"
_CONFIG = (
  r"(?P<case>[\w\-]+)/n(?P<n>\d+)-(?P<precision>\w+)"
  r"(?:-(?P<experiment>[\w\-+=]+?))?"
)
_PATH_RE = re.compile(
  rf"^(?P<target>[\w\-]+)/{_CONFIG}\.(?P<kind>hlo|dots\.json)$"
)
_STABLEHLO_PATH_RE = re.compile(
  rf"^{STABLEHLO_DIR}/{_CONFIG}\.(?P<kind>stablehlo\.mlir)$"
)
_HEADER_RE = re.compile(r"^// hloprobe-golden v(\d+)((?: [\w]+=\S+)*)$")
_SWEEP_KEYS = {
  "cases": str,
  "targets": str,
  "batch_sizes": int,
  "precisions": str,
}


@dataclasses.dataclass(frozen=True, slots=True)
class ConfigKey:
  """One config of a sweep, as golden file names spell it.

  `target` is None for a StableHLO file's key: the file belongs to the
  config on every target.
  """

  target: str | None
  case: str
  n: int
  precision: str
  experiment: str | None = None

  @property
  def words(self) -> str:
    """e.g. "a100 seed_mlp n=1 bfloat16"."""
    extra = f" {self.experiment}" if self.experiment else ""
    target = f"{self.target} " if self.target else ""
    return f"{target}{self.case} n={self.n} {self.precision}{extra}"

  @property
  def config(self) -> tuple[str | None, str, int, str]:
    """(target, case, n, precision): the sweep coordinates."""
    return (self.target, self.case, self.n, self.precision)

  def in_configs(self, configs: set[tuple]) -> bool:
    """Whether some (target, case, n, precision) of `configs` is this one's
    (any target's, for a StableHLO key)."""
    if self.target is not None:
      return self.config in configs
    return any(c[1:] == self.config[1:] for c in configs)

  def path(self, kind: str) -> str:
    """The file's path in the golden folder; StableHLO's has no target."""
    extra = f"-{self.experiment}" if self.experiment else ""
    folder = STABLEHLO_DIR if kind == "stablehlo.mlir" else self.target
    return f"{folder}/{self.case}/n{self.n}-{self.precision}{extra}.{kind}"


def path_key(rel: str) -> tuple[ConfigKey, str] | None:
  """(config, kind) of a golden file's relative path, or None if not one.

  A StableHLO file's key has target None.
  """
  m = _PATH_RE.match(rel) or _STABLEHLO_PATH_RE.match(rel)
  if not m:
    return None
  target = m["target"] if m.re is _PATH_RE else None
  key = ConfigKey(
    target, m["case"], int(m["n"]), m["precision"], m["experiment"]
  )
  return key, m["kind"]


def _header(
  key: ConfigKey, kind: str, versions: Mapping[str, str], date: str
) -> dict:
  header = {"kind": _KIND_WORDS[kind]}
  if kind != "stablehlo.mlir":
    header["target"] = key.target
  header |= {
    "case": key.case,
    "n": key.n,
    "precision": key.precision,
  }
  if key.experiment:
    header["experiment"] = key.experiment
  return header | {
    "jax": versions["jax"],
    "jaxlib": versions["jaxlib"],
    "date": date,
  }


def _dots_lines(summary: Mapping) -> list[str]:
  """The compared lines of a dots.json: the summary, one site per line."""
  sites = summary["sites"]
  lines = [
    f'  "fate_summary": {json.dumps(summary["fate_summary"])},',
    '  "sites": [',
  ]
  lines += [
    f"    {json.dumps(s)}" + ("," if i + 1 < len(sites) else "")
    for i, s in enumerate(sites)
  ]
  return lines + ["  ],", f'  "math": {json.dumps(summary.get("math"))}']


def config_files(
  key: ConfigKey, compilation, versions: Mapping[str, str], date: str, made=None
) -> dict[str, str]:
  """The three golden files of one successful config: path -> text.

  `compilation` is the config's `records.Compilation` (texts, sites,
  passes), `made` its `numerics.Made`; the StableHLO file's leaves out
  `key.target`.
  """
  out = {}
  for kind, body in (
    ("stablehlo.mlir", canonical_text("stablehlo", compilation.stablehlo)),
    ("hlo", canonical_text("hlo", compilation.optimized_hlo)),
  ):
    fields = " ".join(
      f"{k}={v}" for k, v in _header(key, kind, versions, date).items()
    )
    out[key.path(kind)] = (
      f"// hloprobe-golden v{SCHEMA_VERSION} {fields}\n{body}"
    )
  header = {"schema_version": DOTS_SCHEMA_VERSION} | _header(
    key, "dots.json", versions, date
  )
  summary = dot_summary(compilation.fates, compilation.passes)
  summary["math"] = math_summary(made)
  lines = ["{", f'  "golden": {json.dumps(header)},'] + _dots_lines(summary)
  out[key.path("dots.json")] = "\n".join(lines + ["}"]) + "\n"
  return out


@dataclasses.dataclass(frozen=True)
class GoldenFile:
  """A parsed golden file.

  Attributes:
    key, kind: what the file name says.
    header: the header fields (str values; "n" and "schema_version" too).
    content: what is compared: the canonical text, or for dots.json the
      {"fate_summary", "sites", "math"} dict.
  """

  key: ConfigKey
  kind: str
  header: Mapping[str, str]
  content: object

  def lines(self) -> list[str]:
    """The compared content as lines, for unified diffs."""
    if self.kind == "dots.json":
      return _dots_lines(self.content)
    return self.content.splitlines()


def _fail(path: str, why: str) -> GoldenError:
  return GoldenError(
    f"[hloprobe] {path}: {why}; regenerate it with `hloprobe golden update` "
    "or restore it from git"
  )


def _text_header(path: str, text: str) -> tuple[dict, str]:
  first, _, body = text.partition("\n")
  m = _HEADER_RE.match(first)
  if not m:
    raise _fail(
      path,
      f"first line {first[:60]!r} is not a header like "
      "'// hloprobe-golden v1 kind=hlo target=cpu ...'",
    )
  fields = dict(f.split("=", 1) for f in m.group(2).split())
  return {"schema_version": m.group(1)} | fields, body


def _json(path: str, text: str):
  """The JSON document in `text`; GoldenError naming `path` otherwise."""
  try:
    return json.loads(text)
  except json.JSONDecodeError as e:
    raise _fail(path, f"not valid JSON ({e}; truncated?)") from e
  except RecursionError:
    raise _fail(path, "JSON nested too deeply to read") from None


def _dots_content(path: str, text: str) -> tuple[dict, dict]:
  doc = _json(path, text)
  ok = (
    isinstance(doc, dict)
    and isinstance(doc.get("golden"), dict)
    and isinstance(doc.get("sites"), list)
    and all(
      isinstance(s, dict) and "site" in s and "fate" in s for s in doc["sites"]
    )
  )
  if not ok:
    raise _fail(
      path,
      'not a dot summary: expected {"golden": {...}, "sites": [{"site": 0, "fate": ...}]}',
    )
  header = {k: str(v) for k, v in doc["golden"].items()}
  return header, {
    "fate_summary": doc.get("fate_summary"),
    "sites": doc["sites"],
    "math": doc.get("math"),
  }


def _check_stablehlo(path: str, body: str) -> str:
  text = canonical_text("stablehlo", body)
  balanced = text.count("{") == text.count("}") and text.count(
    "("
  ) == text.count(")")
  if not (
    text.lstrip().startswith("module")
    and text.rstrip().endswith("}")
    and balanced
  ):
    raise _fail(path, "not a complete StableHLO module (truncated?)")
  return text


def _check_header(
  path: str, header: Mapping[str, str], key: ConfigKey, kind: str
) -> None:
  version = header.get("schema_version")
  reads = DOTS_SCHEMA_VERSION if kind == "dots.json" else SCHEMA_VERSION
  if version != str(reads) and (kind, version) != ("dots.json", "2"):
    raise _fail(
      path, f"schema version {version!r}; this hloprobe reads {reads}"
    )
  expected = {
    k: str(v)
    for k, v in _header(key, kind, {"jax": "", "jaxlib": ""}, "").items()
    if k not in ("jax", "jaxlib", "date")
  }
  wrong = {k: header.get(k) for k, v in expected.items() if header.get(k) != v}
  missing = [k for k in ("jax", "jaxlib", "date") if k not in header]
  if wrong or missing:
    raise _fail(
      path,
      f"header does not match the file name (wrong {wrong}, missing {missing})",
    )


def parse(path: str, rel: str, text: str) -> GoldenFile:
  """Parses and validates one golden file.

  Args:
    path: the file's path, for messages.
    rel: its path relative to the golden folder (names config and kind).
    text: its content.

  Raises:
    GoldenError: bad file name, missing or mismatched header, or a body that
      is truncated or not of its kind; the message names `path`.
  """
  named = path_key(rel)
  if named is None:
    raise _fail(
      path,
      "not a golden file name like 'cpu/seed_mlp/n1-bfloat16.hlo' or "
      f"'{STABLEHLO_DIR}/seed_mlp/n1-bfloat16.stablehlo.mlir'",
    )
  key, kind = named
  if kind == "dots.json":
    header, content = _dots_content(path, text)
  else:
    header, body = _text_header(path, text)
    if kind == "stablehlo.mlir":
      content = _check_stablehlo(path, body)
    else:
      try:
        content = canonical_text("hlo", body)
      except HloprobeError as e:
        raise _fail(
          path,
          f"not a complete HLO module: {str(e).removeprefix('[hloprobe] ')}",
        ) from e
  _check_header(path, header, key, kind)
  return GoldenFile(key, kind, header, content)


def manifest_text(
  versions: Mapping[str, str], sweep: Mapping[str, list], date: str
) -> str:
  """MANIFEST.json text for a sweep made with these jax/jaxlib versions."""
  top = {
    "schema": _MANIFEST_SCHEMA,
    "schema_version": MANIFEST_SCHEMA_VERSION,
    "jax": versions["jax"],
    "jaxlib": versions["jaxlib"],
    "date": date,
  }
  lines = ["{"] + [
    f"  {json.dumps(k)}: {json.dumps(v)}," for k, v in top.items()
  ]
  keys = list(_SWEEP_KEYS)
  lines += ['  "sweep": {'] + [
    f"    {json.dumps(k)}: {json.dumps(list(sweep[k]))}"
    + ("," if k != keys[-1] else "")
    for k in keys
  ]
  return "\n".join(lines + ["  }", "}"]) + "\n"


def parse_manifest(path: str, text: str, sweep_only: bool = False) -> dict:
  """Parses and validates MANIFEST.json.

  Args:
    path: the file's path, for messages.
    text: its content.
    sweep_only: read versions from 1 (their sweep record is the same: to
      re-run an older folder's sweep); else from 2 (3's folder layout).

  Raises:
    GoldenError: not JSON, wrong schema, or a malformed sweep; names `path`.
  """
  doc = _json(path, text)
  if not isinstance(doc, dict) or doc.get("schema") != _MANIFEST_SCHEMA:
    raise _fail(
      path, f'not a golden manifest: expected "schema": "{_MANIFEST_SCHEMA}"'
    )
  version = doc.get("schema_version")
  readable = range(1 if sweep_only else 2, MANIFEST_SCHEMA_VERSION + 1)
  if type(version) is not int or version not in readable:
    raise _fail(
      path,
      f"schema version {doc.get('schema_version')!r}; this hloprobe reads "
      f"{readable.start} to {MANIFEST_SCHEMA_VERSION}",
    )
  sweep = doc.get("sweep")
  ok = isinstance(sweep, dict) and all(
    isinstance(sweep.get(k), list)
    and sweep[k]
    and all(type(v) is t for v in sweep[k])  # not True for an int
    for k, t in _SWEEP_KEYS.items()
  )
  if not ok or not all(
    isinstance(doc.get(k), str) for k in ("jax", "jaxlib", "date")
  ):
    raise _fail(
      path,
      "manifest lacks jax, jaxlib, date or a sweep with non-empty "
      "cases, targets, batch_sizes and precisions",
    )
  return doc


def same_manifest(old_text: str, new_text: str) -> bool:
  """Whether two manifests agree on everything but the date."""
  try:
    old, new = (
      parse_manifest("MANIFEST.json", t) for t in (old_text, new_text)
    )
  except GoldenError:
    return False
  return {**old, "date": None} == {**new, "date": None}


def today() -> str:
  """Today's date in UTC, "YYYY-MM-DD", as headers write it."""
  return datetime.datetime.now(datetime.UTC).date().isoformat()
