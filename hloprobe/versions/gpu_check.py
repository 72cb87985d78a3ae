"""`make gpu-check`: the seed sweep on an attached GPU beside its compile-only
description, observed row 0 against the predicted band.

Runs from the source tree with the machine's own jax and nothing installed
(`PYTHONPATH=. python -m hloprobe.commands.gpu_check`, whose `main` prints): the GPU machine may
have another jax (e.g. 0.11.2 with CUDA 13), so hloprobe runs unchecked
there (one warning; "unknown" where a rule does not recognise XLA).

For each (n, precision) it sweeps the `gpu` target (compile and run,
autotuned) and the built-in compile-only target of the same GPU model
(`compile_only_target_for`: "NVIDIA H200" -> h200), then reports the
observed row 0 and its |error| against float64, and whether it lies in the
predicted band (`Prediction.stats.row0` +- `tolerance_abs`): of the GPU
run's own site fates ("explained" / "outside band"), and of the
compile-only fates (what hloprobe predicts without the GPU). The figures go
to a JSON file to commit as test data (schema "hloprobe.gpu_check" 1):

  {"schema": "hloprobe.gpu_check", "schema_version": 1,
   "created": ISO date, "device": str, "device_target": str,
   "compile_only_target": str, "jax": str, "jaxlib": str,
   "warning": str | null,
   "configs": [{"case", "n", "precision",
                "observed": {"row0", "row0_abs_err", "status", "error"},
                "own": <band>, "compile_only": <band>}]}
  <band> = {"fates": str | null, "effective_algorithms": str | null,
            "predicted_row0": float | null, "tolerance_abs": float | null,
            "verdict": str | null,
            "status": "explained" | "outside band" | "n/a"}

On a GPU it also records, beside the JSON file, what a compile-only
replay needs (issue 28): the GPU's GpuTargetConfigProto
(`<device>.target_config.txtpb`, `private_api.gpu_target_config`) and the
autotune results of the sweep's GPU compiles
(`<device>.autotune.textproto`, XLA's own dump:
`--xla_gpu_dump_autotune_results_to`, added to the workers' XLA_FLAGS by
`autotune_record_flags`); `--target_config=<that .txtpb>
--autotune_results=<that .textproto>` then replays them without the GPU,
under the jaxlib that recorded them (`stamp_results` heads the file with
it; `compile.autotune_experiment` refuses another). What was not recorded
is one line ("recording_note"): a CPU standing in records nothing. This
path has not run on a GPU yet: none was lent when it was written.

Without a GPU, `--device_target=cpu --compile_only_target=a100` runs the
same logic with the CPU standing in (how the tests check it).

Private in intent: use the package, `hloprobe.versions`.
"""

from __future__ import annotations

import dataclasses
import datetime
import os
import re

from hloprobe.errors import InvalidArgumentError
from hloprobe.ir import DEFAULT_PRECISIONS

__all__ = [
  "DEFAULT_OUTPUT_DIR",
  "GpuCheck",
  "autotune_record_flags",
  "band_status",
  "check_records",
  "compile_only_target_for",
  "check_gpu",
  "output_path",
  "recording_note",
  "render_check",
  "run_gpu_check",
  "stamp_results",
]

DEFAULT_OUTPUT_DIR = os.path.join("tests", "testdata", "gpu_check")


def compile_only_target_for(device_kind: str) -> str:
  """The built-in compile-only target of a device, e.g. "NVIDIA H200" -> h200.

  Matches each built-in GPU target's name as a word of the device kind
  (A100, H100, H200, T4, L4, A6000, V100).

  Raises:
    InvalidArgumentError: no built-in target matches (give --compile_only_target).
  """
  from hloprobe.compile import target_listing

  for t in target_listing().targets:  # the built-in ones, in order
    if t.compile_only and re.search(
      rf"\b{re.escape(t.name)}\b", device_kind, re.I
    ):
      return t.name
  raise InvalidArgumentError(
    f"no built-in compile-only target for device {device_kind!r}; pass "
    "--compile_only_target=NAME or a .txtpb file"
  )


def band_status(observed_row0: float | None, prediction: dict | None) -> str:
  """ "explained" when |observed - predicted row 0| <= tolerance, "outside
  band" when not, "n/a" without an observation or a prediction."""
  if observed_row0 is None or not prediction:
    return "n/a"
  tol = prediction.get("row0_tolerance_abs")
  if tol is None or prediction.get("row0") is None:
    return "n/a"
  inside = abs(observed_row0 - prediction["row0"]) <= tol
  return "explained" if inside else "outside band"


def _band(config: dict | None, observed_row0: float | None) -> dict:
  if config is None or config["status"] != "ok":
    return {
      "fates": None,
      "effective_algorithms": None,
      "predicted_row0": None,
      "tolerance_abs": None,
      "verdict": None,
      "status": "n/a",
      "error": config and config["error"],
    }
  p = config.get("prediction") or {}
  algorithms = [
    s.get("effective_algorithm") or "unknown" for s in config["dot_sites"]
  ]
  return {
    "fates": config.get("fate_summary"),
    "effective_algorithms": ", ".join(
      f"{a} x{algorithms.count(a)}" for a in dict.fromkeys(algorithms)
    )
    or None,
    "predicted_row0": p.get("row0"),
    "tolerance_abs": p.get("row0_tolerance_abs"),
    "verdict": p.get("verdict"),
    "status": band_status(observed_row0, p),
    "error": None,
  }


def check_records(
  configs: list[dict], device_target: str, compile_only_target: str
) -> list[dict]:
  """Pairs each device config with its compile-only twin (results.json
  configs) and judges the observation against both bands."""
  key = lambda c: (c["case"], c["n"], c["precision"])
  twins = {key(c): c for c in configs if c["target"] == compile_only_target}
  out = []
  for c in (c for c in configs if c["target"] == device_target):
    num = c.get("numerics") or {}
    row0 = num.get("row0")
    out.append(
      {
        "case": c["case"],
        "n": c["n"],
        "precision": c["precision"],
        "observed": {
          "row0": row0,
          "row0_abs_err": num.get("row0_abs_err"),
          "status": c["status"],
          "error": c["error"],
        },
        "own": _band(c, row0),
        "compile_only": _band(twins.get(key(c)), row0),
      }
    )
  return out


def _device_stem(device: str) -> str:
  return re.sub(r"[^a-z0-9]+", "_", device.lower()).strip("_")


def autotune_record_flags(output_dir: str, device: str) -> tuple[str, str]:
  """(XLA_FLAGS word dumping a GPU's autotune results, the file it names).

  The file is `<output_dir>/<device>.autotune.textproto` (text format: XLA
  chooses by the suffix, autotuner_cache.cc `IsTextProtoPath`). XLA writes
  it after each compile that autotuned (a compile-only compile writes
  none), so the sweep's one GPU worker leaves its last, cumulative one.
  """
  path = os.path.abspath(
    os.path.join(output_dir, f"{_device_stem(device)}.autotune.textproto")
  )
  return f"--xla_gpu_dump_autotune_results_to={path}", path


def _record_target_config(output_dir: str, device: str, devices) -> str | None:
  """Writes the GPU's target config next to the check; its path, or None."""
  from hloprobe import private_api

  text = private_api.gpu_target_config(devices)
  if text is None:
    return None
  os.makedirs(output_dir, exist_ok=True)
  path = os.path.join(output_dir, f"{_device_stem(device)}.target_config.txtpb")
  with open(path, "w", encoding="utf-8") as f:
    f.write(text)
  return path


def recording_note(device_target: str, recorded: dict) -> str | None:
  """One line on what a check did not record for a replay, or None.

  Args:
    device_target: the target that ran ("gpu", or "cpu" standing in).
    recorded: the document's "target_config_file" and
      "autotune_results_file" (None where not written).
  """
  if device_target != "gpu":
    return (
      f"gpu-check: no autotune results nor target config recorded: "
      f"--device_target={device_target} is not a GPU (only a GPU's compiles "
      "autotune; run make gpu-check on one to record them)"
    )
  missing = [
    what
    for what, key in (
      (
        "target config (this jax has no get_topology_for_devices)",
        "target_config_file",
      ),
      ("autotune results (XLA dumped none)", "autotune_results_file"),
    )
    if recorded.get(key) is None
  ]
  if not missing:
    return None
  return f"gpu-check: not recorded: {'; '.join(missing)}"


def stamp_results(path: str, jaxlib: str) -> bool:
  """Heads XLA's dumped autotune results with the jaxlib that wrote them.

  The first line becomes `# hloprobe autotune results; jaxlib <V>` (a
  text-format comment XLA's parser skips), the line
  `compile.autotune_experiment` reads to refuse another release's
  results in one line. Returns False where XLA wrote no file.
  """
  try:
    with open(path, encoding="utf-8") as f:
      text = f.read()
  except OSError:
    return False
  head = "# hloprobe autotune results; jaxlib "
  if text.startswith(head):
    text = text.split("\n", 1)[1] if "\n" in text else ""
  with open(path, "w", encoding="utf-8") as f:
    f.write(f"{head}{jaxlib}\n{text}")
  return True


def run_gpu_check(
  device_target: str = "gpu",
  compile_only_target: str | None = None,
  batch_sizes: tuple[int, ...] = tuple(range(1, 10)),
  precisions: tuple[str, ...] = DEFAULT_PRECISIONS,
  case: str = "seed_mlp",
  record_dir: str | None = None,
) -> dict:
  """Runs the check in this process and returns the JSON document (above).

  Starts JAX's backends (the GPU's, for `device_target="gpu"`). With
  `record_dir` and a GPU, also writes its target config and autotune
  results there (module docstring; the results headed by the jaxlib,
  `stamp_results`); the document names them ("target_config_file",
  "autotune_results_file", None where not written) and says in one line
  what was not recorded ("recording_note", `recording_note`: always, for
  a CPU standing in).

  Raises:
    InvalidArgumentError: no compile-only target matches the device.
  """
  import jax

  from hloprobe import engine
  from hloprobe.compile import jaxlib_release, start_backends
  from hloprobe.report import results_json

  if device_target == "gpu":  # the sweep's workers share the GPU
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
  start_backends(None if device_target == "gpu" else "cpu")
  device = jax.devices()[0].device_kind if device_target == "gpu" else "cpu"
  twin = compile_only_target or compile_only_target_for(device)
  recorded = {"target_config_file": None, "autotune_results_file": None}
  if record_dir is not None and device_target == "gpu":
    recorded["target_config_file"] = _record_target_config(
      record_dir, device, jax.devices()
    )
    word, path = autotune_record_flags(record_dir, device)
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {word}"
    recorded["autotune_results_file"] = path
  spec = engine.SweepSpec(
    cases=(case,),
    batch_sizes=batch_sizes,
    precisions=precisions,
    targets=(device_target, twin),
  )
  results = engine.run_sweep(spec)
  versions = jaxlib_release().versions
  path = recorded["autotune_results_file"]
  if path is not None and not stamp_results(path, versions["jaxlib"]):
    recorded["autotune_results_file"] = None
  if record_dir is not None:
    recorded["recording_note"] = recording_note(device_target, recorded)
  configs = results_json(results, versions)["configs"]
  return {
    "schema": "hloprobe.gpu_check",
    "schema_version": 1,
    "created": datetime.date.today().isoformat(),
    "device": device,
    "device_target": device_target,
    "compile_only_target": twin,
    **versions,
    "warning": jaxlib_release().warning,
    "configs": check_records(configs, device_target, twin),
    **(recorded if record_dir is not None else {}),
  }


def render_check(doc: dict) -> str:
  """The check as a table: one row per config."""
  from hloprobe.report import table

  def band(b: dict) -> str:
    if b["predicted_row0"] is None:
      return f"n/a ({b.get('error') or 'no prediction'})"
    return f"{b['predicted_row0']:.7g}±{b['tolerance_abs']:.1e} {b['status']}"

  rows = [
    [
      c["n"],
      c["precision"],
      "n/a"
      if c["observed"]["row0"] is None
      else f"{c['observed']['row0']:.7g}",
      "n/a"
      if c["observed"]["row0_abs_err"] is None
      else f"{c['observed']['row0_abs_err']:.2e}",
      c["own"]["fates"] or c["observed"]["error"],
      band(c["own"]),
      c["compile_only"]["fates"],
      band(c["compile_only"]),
    ]
    for c in doc["configs"]
  ]
  headers = (
    "n",
    "precision",
    f"{doc['device_target']} row0",
    "abs err row0",
    "site fates (run)",
    "own band",
    f"{doc['compile_only_target']} fates",
    "compile-only band",
  )
  head = (
    f"{doc['device']} with jax {doc['jax']} / jaxlib {doc['jaxlib']}, "
    f"{doc['created']}"
  )
  return "\n".join([head, table(rows, headers)])


def output_path(doc: dict, output: str | None) -> str:
  """`output`, or <DEFAULT_OUTPUT_DIR>/<device>-jaxlib<V>.json."""
  if output:
    return output
  device = re.sub(r"[^A-Za-z0-9]+", "_", doc["device"]).strip("_").lower()
  return os.path.join(
    DEFAULT_OUTPUT_DIR, f"{device}-jaxlib{doc['jaxlib']}.json"
  )


@dataclasses.dataclass(frozen=True)
class GpuCheck:
  """`make gpu-check`'s outcome, its JSON file written.

  Attributes:
    doc: the JSON document (module docstring).
    notes: the lines to show apart from the table: the jaxlib warning and
      what was not recorded ("recording_note"), those present.
    text: the table (`render_check`).
    path: the JSON file written (`output_path`).
    ok: whether every config was observed ("status" "ok"), and one was.
  """

  doc: dict
  notes: tuple[str, ...]
  text: str
  path: str
  ok: bool


def check_gpu(
  device_target: str,
  compile_only_target: str | None,
  batch_sizes: str,
  precisions: tuple[str, ...],
  output: str | None,
) -> GpuCheck:
  """`make gpu-check`'s library call: `run_gpu_check` with its flags, the
  document written whole as JSON to `output` (None:
  `<DEFAULT_OUTPUT_DIR>/<device>-jaxlib<V>.json`), what was recorded on a
  GPU beside it, and the table.

  Args:
    device_target: the target that runs ("gpu", or "cpu" standing in).
    compile_only_target: its compile-only twin; None: from the GPU's
      device kind (`compile_only_target_for`).
    batch_sizes: --batch_sizes' words, e.g. "1-9"
      (`engine.parse_batch_sizes`).
    precisions: the matmul precisions.
    output: --output, the JSON file, or None.

  Raises:
    InvalidArgumentError: malformed batch sizes, or no compile-only target
      matches the device.
  """
  from hloprobe.engine import parse_batch_sizes
  from hloprobe.report import atomic_write, dumps_json

  doc = run_gpu_check(
    device_target,
    compile_only_target,
    parse_batch_sizes(batch_sizes),
    tuple(precisions),
    # On a GPU: its target config and autotune results, beside the JSON.
    record_dir=os.path.dirname(output or "") or DEFAULT_OUTPUT_DIR,
  )
  text = render_check(doc)
  path = output_path(doc, output)
  atomic_write(path, dumps_json(doc) + "\n")
  notes = tuple(
    line for line in (doc["warning"], doc.get("recording_note")) if line
  )
  observed = [c for c in doc["configs"] if c["observed"]["status"] == "ok"]
  ok = bool(observed) and len(observed) == len(doc["configs"])
  return GpuCheck(doc, notes, text, path, ok)
