"""Where a jaxlib puts the kernels' PTX (run on a lent GPU machine).

  PYTHONPATH=. python3 .ci/gpu-ptx-probe.py OUT_DIR [TARGET ...]

Compiles seed_mlp at n=2 under bfloat16 for each target (default: h200
gpu) with hloprobe's options plus each extra dump option set below, and
writes OUT_DIR/probe.txt: the files each set adds, whether any holds a PTX
`.entry`, and what `serialize_executable` and the runtime executable offer;
OUT_DIR/ptx_<target>.txt gets the first PTX text found.
"""

import os
import re
import sys
import tempfile

EXTRA = {
  "base": {},
  "hlo_as_text": {"xla_dump_hlo_as_text": True},
  "llvmir": {"xla_gpu_dump_llvmir": True},
  "emitter_re": {"xla_dump_emitter_re": ".*"},
  "module_re": {"xla_dump_hlo_module_re": ".*"},
}
# jaxlib 0.11.2 on an H200 dumps PTX only with xla_dump_emitter_re (seen
# 2026-11-30); which emitter names turn it on:
EMITTER_RES = ("ptx", "llvm", "triton", "gpu", "fusion", "kernel")
EXTRA |= {f"emitter_re={r}": {"xla_dump_emitter_re": r} for r in EMITTER_RES}


def files_with_entry(folder):
  found = {}
  for name in sorted(os.listdir(folder)):
    try:
      text = open(os.path.join(folder, name), errors="replace").read()
    except (IsADirectoryError, OSError):
      continue
    if re.search(r"\.entry\s+\w+", text):
      found[name] = text
  return found


def main(out, names):
  from jax.experimental import serialize_executable

  from hloprobe.compile import lowering, targets
  from hloprobe.compile.cases import get_case

  lowering.start_backends(None)
  case = get_case("seed_mlp")
  args = case.inputs_for(case.full_inputs(), 2)
  original = lowering._gpu_compiler_options
  lines = []
  for name in names:
    target = targets.get_target(name)
    base_files = None
    for label, extra in EXTRA.items():
      folder = tempfile.mkdtemp(prefix=f"{name}-{label}-")

      def options(t, _dump_dir, extra=extra, folder=folder):
        return original(t, folder) | extra  # noqa: B023

      lowering._gpu_compiler_options = options
      try:
        cc = lowering.compile_case(case, args, "bfloat16", target)
      except Exception as e:  # noqa: BLE001 - a probe reports everything
        lines.append(f"{name} {label}: failed: {type(e).__name__}: {e}"[:400])
        continue
      files = set(os.listdir(folder))
      if base_files is None:
        base_files = files
      added = sorted(files - base_files)
      kinds = sorted({re.sub(r"^module_\d+\.", "", f) for f in added})
      entry = files_with_entry(folder)
      lines.append(
        f"{name} {label}: {len(files)} files, ptx via hloprobe "
        f"{len(cc.ptx)}, added {kinds[:60]}, with .entry {sorted(entry)}"
      )
      for f_name, text in entry.items():
        names_found = re.findall(r"\.entry\s+(\w+)", text)
        lines.append(f"    {f_name}: entries {names_found}")
      if label == "base":
        ex = cc.compiled.runtime_executable()
        lines.append(
          f"  runtime_executable {type(ex).__name__}: "
          f"{[a for a in dir(ex) if not a.startswith('_')]}"
        )
        try:
          blob = serialize_executable.serialize(cc.compiled)[0]
          starts = [m.start() for m in re.finditer(rb"\.entry\s+\w+", blob)]
          lines.append(
            f"  serialized {len(blob)} bytes, .entry at {starts[:10]}, "
            f".version at {blob.find(b'.version')}"
          )
          v = blob.find(b"//\n// Generated")
          v = v if v >= 0 else blob.find(b".version")
          if starts and v >= 0:
            with open(os.path.join(out, f"serialized_{name}.txt"), "wb") as f:
              f.write(blob[v : v + 2_000_000])
        except Exception as e:  # noqa: BLE001
          lines.append(f"  serialize failed: {type(e).__name__}: {e}"[:400])
  lowering._gpu_compiler_options = original
  with open(os.path.join(out, "probe.txt"), "w") as f:
    f.write("\n".join(lines) + "\n")
  print("\n".join(lines))


if __name__ == "__main__":
  main(sys.argv[1], sys.argv[2:] or ["h200", "gpu"])
