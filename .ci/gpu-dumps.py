"""Keeps XLA's dumps of the seed's compiles on a lent GPU machine, for
reading a new jaxlib's kernel names and PTX (run by `.ci/gpu-dumps`).

  PYTHONPATH=. python3 .ci/gpu-dumps.py OUT_DIR [TARGET ...]

For each target (default: gpu h200), n in (1, 2) and precision in
(bfloat16, tensorfloat32, float32) it compiles seed_mlp in this process with
hloprobe's own options, keeps the dump folder, and writes OUT_DIR/dumps.tgz
and OUT_DIR/summary.txt: per config the fates and effective algorithms
hloprobe read, each PTX file's `.entry` names and its distinct mma lines.
"""

import json
import os
import re
import sys
import tarfile
import tempfile

root = tempfile.mkdtemp(prefix="dumps-")
made: list[str] = []


class _KeptDir:  # stands in for tempfile.TemporaryDirectory: not deleted
  def __init__(self, *a, **k):
    self.name = os.path.join(root, f"{len(made):02d}")
    os.makedirs(self.name)
    made.append(self.name)

  def __enter__(self):
    return self.name

  def __exit__(self, *exc):
    return False


def main(out: str, names: list[str]) -> None:
  from hloprobe.compile import lowering, targets
  from hloprobe.compile.cases import get_case
  from hloprobe.engine.compiled import compile_and_run_case

  lowering.tempfile.TemporaryDirectory = _KeptDir
  extra = json.loads(os.environ.get("EXTRA_XLA_OPTIONS", "{}"))
  original = lowering._gpu_compiler_options
  lowering._gpu_compiler_options = lambda t, d: original(t, d) | extra
  lowering.start_backends(None)
  case = get_case("seed_mlp")
  full = case.full_inputs()
  lines = []
  for name in names:
    target = targets.get_target(name)
    for n in (1, 2):
      for precision in ("bfloat16", "tensorfloat32", "float32"):
        got = compile_and_run_case(case, full, target, precision, n, False)
        r = got.result
        lines.append(f"## {name} n={n} {precision} dump {os.path.basename(made[-1])}")
        if r.failure:
          lines.append(f"failed: {r.failure}")
          continue
        for f in r.compilation.fates:
          lines.append(
            f"site {f.site.index}: {f.fate.value} "
            f"{f.effective_algorithm} | {f.algorithm_evidence}"
          )
        if got.outputs is not None:
          lines.append(f"row0: {got.outputs[0].ravel()[:2]}")
  for d in sorted(os.listdir(root)):
    for p in sorted(os.listdir(os.path.join(root, d))):
      if p.endswith(".ptx"):
        text = open(os.path.join(root, d, p)).read()
        entries = re.findall(r"\.entry\s+(\w+)", text)
        mma = sorted(set(re.findall(r"\b(w?gmma[\w.]*|mma[\w.]*)", text)))
        cvt = sorted(set(re.findall(r"cvt\.\w+\.tf32\.f32", text)))
        lines.append(f"{d}/{p}: entries {entries} mma {mma} cvt {cvt}")
  with open(os.path.join(out, "summary.txt"), "w") as f:
    f.write("\n".join(lines) + "\n")
  with tarfile.open(os.path.join(out, "dumps.tgz"), "w:gz") as tar:
    tar.add(root, arcname="dumps")


if __name__ == "__main__":
  main(sys.argv[1], sys.argv[2:] or ["gpu", "h200"])
