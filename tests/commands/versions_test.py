"""`hloprobe versions` with two real jaxlib releases, and its pure parts.

Tests that compile with XLA are marked `compiles` (`make test-fast` skips
them). The pure parts have their modules' files: tests/versions/
compare_test.py (what is compared and counted), commits_test.py (the XLA
commit table), pythons_test.py (which Python makes a venv) and
bisect_test.py (the bisect summary); the rest are in PureTest here.

The cross-version test installs one older jaxlib (0.4.38, CPU-only: jax,
jaxlib, absl-py, tabulate; about 150 MB from the package index, once) into a
venv cache. It lives under HLOPROBE_VERSIONS_TEST_CACHE when set (reused
across test runs), else in a temporary folder; the test is skipped, saying
so, when the package index cannot be reached.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from unittest import mock

import pytest
from absl.testing import absltest, parameterized
from testutil import ROOT, run_hloprobe_here

from hloprobe.commands import versions as versions_command
from hloprobe.compile import compat
from hloprobe.errors import InvalidArgumentError
from hloprobe.versions import (
  bisect,
  driver,
  pythons,
  venvs,
)
from hloprobe.versions import run as version_run
from hloprobe.versions.run import VersionRun

OLD = "0.4.38"
# n = 1, where the two releases' dot counts differ (the one size asserted).
_SWEEP = (
  "--targets=cpu",
  "--batch_sizes=1",
  "--precisions=float32",
)
# An instruction whose opcode is dot, as HloInstruction::ToString prints it.
_DOT_RE = re.compile(r"=\s*\S+\s+dot\(")
_COUNT_DOTS = """
import sys, jax
jax.config.update("jax_platforms", "cpu")
from hloprobe.compile.cases import get_case
case = get_case("seed_mlp")
args = case.inputs_for(case.make_inputs(), int(sys.argv[1]))
print(jax.jit(case.fn).lower(*args).compile().as_text())
"""


def _hlo_dot_count_here(n: int) -> int:
  """_hlo_dot_count for this process's jaxlib, in this process (no second
  jax start): the same script's steps, on the CPU backend."""
  import jax

  from hloprobe.compile.cases import get_case

  case = get_case("seed_mlp")
  args = case.inputs_for(case.make_inputs(), n)
  cpu = jax.devices("cpu")[0]
  with jax.default_device(cpu):  # the CPU's HLO even where a GPU is seen
    args = jax.device_put(args, cpu)
    text = jax.jit(case.fn).lower(*args).compile().as_text()
  return len(_DOT_RE.findall(text))


@pytest.fixture(scope="module")
def served():
  """The jaxlib releases the package index serves for this Python (one
  `pip index versions` for the module's tests); the test is skipped,
  saying so, when the index cannot be reached."""
  try:
    return venvs.index_versions("jaxlib", timeout=60)
  except venvs.VenvError as e:
    pytest.skip(f"the package index cannot be reached: {e}")


@pytest.fixture(scope="module")
def cache_dir(served, tmp_path_factory):
  if OLD not in served:
    pytest.skip(f"the package index serves no jaxlib {OLD} for this Python")
  return os.environ.get("HLOPROBE_VERSIONS_TEST_CACHE") or str(
    tmp_path_factory.mktemp("venvs")
  )


@pytest.fixture(scope="module")
def running_release_once():
  """The running release's sweep (`run.run_version` in its own worker
  process) made once per request for the module's tests that ask for it:
  test_two_versions_differ_and_venvs_are_reused and
  test_a_release_without_wheels_is_not_installed_and_never_a_change
  sweep the same config under it (a second run would compute the same
  records again, two more jax imports). Other venvs' runs are left as
  they are."""
  real, kept = version_run.run_version, {}
  mine = venvs.running_venv().python

  def once(venv, request, requirements=(), *args, **kwargs):
    if venv.python != mine:
      return real(venv, request, requirements, *args, **kwargs)
    key = (json.dumps(request, sort_keys=True), tuple(requirements))
    if key not in kept:
      kept[key] = real(venv, request, requirements, *args, **kwargs)
    return kept[key]

  with mock.patch.object(version_run, "run_version", once):
    yield


def _hlo_dot_count(python: str, n: int, tmp_path) -> int:
  """Dots in the optimized CPU HLO of seed_mlp at batch n, counted in the
  text that jax itself prints (no hloprobe parsing)."""
  link = tmp_path / f"path-{os.path.basename(os.path.dirname(python))}"
  link.mkdir(exist_ok=True)
  if not (link / "hloprobe").exists():
    os.symlink(os.path.join(ROOT, "hloprobe"), link / "hloprobe")
  env = dict(os.environ, PYTHONPATH=str(link), JAX_PLATFORMS="cpu")
  out = subprocess.run(
    [python, "-c", _COUNT_DOTS, str(n)],
    env=env,
    capture_output=True,
    text=True,
    check=True,
    timeout=300,
  ).stdout
  return len(_DOT_RE.findall(out))


def _versions_json_and_table(*flags: str):
  """`hloprobe versions FLAGS` in this process, --format=json then the
  table, from one run of the versions (the second call prints the first's
  runs: both formats render the same records). Returns the two
  CompletedProcesses."""
  real, runs = versions_command.versions, []

  def once(args, spec):
    if not runs:
      runs.append(real(args, spec))
    return runs[0]

  with mock.patch.object(versions_command, "versions", once):
    doc = run_hloprobe_here("versions", *flags, "--format=json", timeout_s=900)
    table = run_hloprobe_here("versions", *flags, timeout_s=900)
  return doc, table


def _site_fates(doc: dict, jaxlib: str, n: int) -> list[str]:
  (entry,) = [c for c in doc["configs"] if c["n"] == n]
  return [s["fate"] for s in entry["cells"][jaxlib]["dot_sites"]]


@pytest.mark.compiles
def test_two_versions_differ_and_venvs_are_reused(
  cache_dir, tmp_path, running_release_once
):
  new = compat.installed_jaxlib()
  venv_dir = os.path.join(cache_dir, "venvs")  # --cache_dir's venvs/
  cached = venvs.find_venv(OLD, venv_dir, cuda=False) is not None
  flags = (f"--jaxlib={OLD},{new}", f"--cache_dir={cache_dir}", *_SWEEP)
  first, table = _versions_json_and_table(*flags)
  assert first.returncode == 0, first.stderr
  # A venv found in the cache is reused (HLOPROBE_VERSIONS_TEST_CACHE's,
  # from an earlier run), else made.
  if cached:
    assert f"jaxlib {OLD}: venv reused" in first.stderr
    assert "venv made" not in first.stderr
  else:
    assert f"jaxlib {OLD}: venv made" in first.stderr
  doc = json.loads(first.stdout)
  assert [v["jaxlib"] for v in doc["versions"]] == [OLD, new]
  assert doc["versions"][0]["warning"] and new in doc["versions"][0]["warning"]
  assert doc["versions"][1]["warning"] is None

  # The real difference, counted in each jaxlib's own optimized HLO text:
  # at n = 1 one jaxlib keeps every dot, the other strength-reduces one.
  old_venv = venvs.find_venv(OLD, venv_dir, cuda=False)

  counts = {
    OLD: _hlo_dot_count(old_venv.python, 1, tmp_path),
    new: _hlo_dot_count_here(1),
  }
  assert counts[OLD] != counts[new], counts
  for jaxlib, count in counts.items():
    assert _site_fates(doc, jaxlib, 1).count("dot") == count
  (n1,) = [c for c in doc["configs"] if c["n"] == 1]
  assert "fates" in n1["changed"]

  # The table of the same run marks the change.
  assert table.returncode == 0, table.stderr
  header = table.stdout.splitlines()[0]
  assert f"jaxlib {OLD}" in header and f"jaxlib {new}" in header
  row = next(l for l in table.stdout.splitlines() if "n=1 float32" in l)
  assert row.rstrip().endswith("*")

  # The venv made (or found) above is found again, untouched.
  before = sorted(os.listdir(venv_dir))
  marker = os.path.join(old_venv.path, venvs.MARKER)
  stamp = os.stat(marker).st_mtime_ns
  again = venvs.ensure_venv(
    OLD, venv_dir, sys.executable, venvs.this_python(), cuda=False
  )
  assert (again.path, again.created) == (old_venv.path, False)
  assert sorted(os.listdir(venv_dir)) == before
  assert os.stat(marker).st_mtime_ns == stamp


def _fake_venv(venv_dir, jaxlib: str, script: str) -> None:
  """A cached CPU venv of `jaxlib` whose python is `script` (sh)."""
  path = venv_dir / f"jaxlib-{jaxlib}-py{venvs.this_python()}-cpu"
  (path / "bin").mkdir(parents=True)
  python = path / "bin" / "python"
  python.write_text("#!/bin/sh\n" + script)
  python.chmod(0o755)
  marker = {"recipe": venvs.RECIPE, "packages": [], "cuda_plugin": False}
  (path / venvs.MARKER).write_text(json.dumps(marker))


@pytest.mark.compiles
def test_versions_run_side_by_side_in_order(tmp_path):
  """Two versions (this interpreter behind two cached venvs) run at once,
  a third that fails costs only its own column, and the output keeps the
  order asked. Each good venv's python waits, up to a minute, until the
  other has started too, and writes down whether it saw it."""
  venv_dir, meet = tmp_path / "venvs", tmp_path / "meet"
  meet.mkdir()
  for name in ("0.0.1", "0.0.2"):
    _fake_venv(
      venv_dir,
      name,
      f"touch {meet}/{name}\n"
      f"i=0; while [ $(ls {meet} | wc -l) -lt 2 ] && [ $i -lt 600 ]; do "
      "sleep 0.1; i=$((i+1)); done\n"
      f"ls {meet} > {tmp_path}/saw-{name}\n"
      f'exec {sys.executable} "$@"\n',
    )
  _fake_venv(venv_dir, "0.0.3", "echo no such jaxlib >&2; exit 3\n")
  # In this process (the versions run in processes of their own).
  got = run_hloprobe_here(
    "versions",
    "--jaxlib=0.0.1,0.0.3,0.0.2",
    "--jobs=2",
    f"--cache_dir={tmp_path}",
    "--targets=cpu",
    "--batch_sizes=1",
    "--precisions=float32",
    "--format=json",
    timeout_s=600,
  )
  assert got.returncode == 1, got.stderr  # one version failed
  doc = json.loads(got.stdout)
  assert [(v["jaxlib"], v["status"]) for v in doc["versions"]] == [
    ("0.0.1", "ok"),
    ("0.0.3", "failed"),
    ("0.0.2", "ok"),
  ]
  assert "no such jaxlib" in doc["versions"][1]["error"]
  for name in ("0.0.1", "0.0.2"):  # both were running at once
    assert (tmp_path / f"saw-{name}").read_text().split() == ["0.0.1", "0.0.2"]
  (config,) = doc["configs"]
  # The same jax computed both: equal cells, but for the source paths (each
  # worker runs this tree from its own temporary folder).
  one, two = (
    _without_locations(config["cells"][v]) for v in ("0.0.1", "0.0.2")
  )
  assert one == two and one["status"] == "ok"
  # The failed worker compared nothing: no change, and not counted.
  assert (config["changed"], config["compared_in"]) == ([], ["0.0.1", "0.0.2"])


def _without_locations(cell: dict) -> dict:
  sites = [
    {k: v for k, v in s.items() if k != "location"} for s in cell["dot_sites"]
  ]
  return {**cell, "dot_sites": sites}


@pytest.mark.compiles
def test_an_interrupt_ends_every_version_running(tmp_path):
  """SIGTERM while two versions' workers run: both are killed, the third
  never starts, and hloprobe exits 143."""
  venv_dir, pids = tmp_path / "venvs", tmp_path / "pids"
  pids.mkdir()
  for name in ("0.0.1", "0.0.2", "0.0.3"):
    _fake_venv(venv_dir, name, f"echo $$ > {pids}/{name}\nexec sleep 600\n")
  proc = subprocess.Popen(
    [
      sys.executable,
      "-m",
      "hloprobe",
      "versions",
      "--jaxlib=0.0.1,0.0.2,0.0.3",
      "--jobs=2",
      f"--cache_dir={tmp_path}",
      "--targets=cpu",
    ],
    env=dict(os.environ, PYTHONPATH=ROOT),
    stdout=subprocess.PIPE,
    stderr=subprocess.PIPE,
    text=True,
    start_new_session=True,
  )
  try:
    for _ in range(1200):  # until both workers have started (2 min at most)
      started = [p for p in pids.iterdir() if p.read_text().strip()]
      if len(started) == 2 or proc.poll() is not None:
        break
      time.sleep(0.1)
    proc.terminate()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err
    assert sorted(p.name for p in started) == ["0.0.1", "0.0.2"]
    assert not (pids / "0.0.3").exists()
    for p in started:
      with pytest.raises(ProcessLookupError):
        os.kill(int(p.read_text()), 0)
  finally:  # on a failure, leave no process of the test behind
    try:
      os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
      pass
    proc.communicate()


@pytest.mark.compiles
def test_gpu_check_logic_with_the_cpu_standing_in(tmp_path):
  out = tmp_path / "check.json"
  got = subprocess.run(
    [
      sys.executable,
      "-m",
      "hloprobe.commands.gpu_check",
      "--device_target=cpu",
      "--compile_only_target=a100",
      "--batch_sizes=1,2",
      "--precisions=bfloat16",
      f"--output={out}",
    ],
    env=dict(os.environ, PYTHONPATH=ROOT),
    cwd=ROOT,
    capture_output=True,
    text=True,
    timeout=600,
    check=False,
  )
  assert got.returncode == 0, got.stderr
  doc = json.loads(out.read_text())
  assert doc["schema"] == "hloprobe.gpu_check"
  assert (doc["device"], doc["compile_only_target"]) == ("cpu", "a100")
  assert doc["jaxlib"] == compat.installed_jaxlib()
  by_n = {c["n"]: c for c in doc["configs"]}
  assert sorted(by_n) == [1, 2]
  # The CPU computes in f32: its own (F32) band holds it at both sizes.
  assert [by_n[n]["own"]["status"] for n in (1, 2)] == ["explained"] * 2
  # An A100 runs F32 at n = 1 (dot strength reduction) but TF32 gemms at
  # n = 2 under bfloat16 (README: PTX mma ... tf32), an error of ~0.6 that
  # an f32 observation lies far outside.
  assert by_n[1]["compile_only"]["status"] == "explained"
  assert by_n[2]["compile_only"]["status"] == "outside band"
  assert "TF32_TF32_F32" in by_n[2]["compile_only"]["effective_algorithms"]
  # Nothing to record for a replay without a GPU: one line says so.
  assert doc["autotune_results_file"] is None
  assert doc["recording_note"].startswith("gpu-check: no autotune results")
  assert [ln for ln in got.stderr.splitlines() if "gpu-check:" in ln] == [
    doc["recording_note"]
  ]
  assert sorted(p.name for p in tmp_path.iterdir()) == ["check.json"]


_RUNNING = compat.installed_jaxlib()
_SWEEP_ONE = ("--targets=cpu", "--batch_sizes=1", "--precisions=float32")


@pytest.mark.compiles
def test_a_bogus_python_leaves_every_release_not_installed(tmp_path):
  """--python that is no interpreter: every release, the running one too
  (it is not that Python), is "not installed: ..." on its rows, nothing is
  compared nor counted as a change, and the exit status is 1."""
  bogus = str(tmp_path / "no-such-python3")
  flags = (
    f"--jaxlib={_RUNNING},0.4.38",
    f"--python={bogus}",
    f"--cache_dir={tmp_path}",
    *_SWEEP_ONE,
  )
  got = run_hloprobe_here("versions", *flags, timeout_s=600)
  assert got.returncode == 1, got.stderr
  rows = [l for l in got.stdout.splitlines() if "site fates" in l]
  assert rows == [], got.stdout  # no release swept a config
  assert f"jaxlib {_RUNNING}: not installed: --python={bogus}" in got.stdout
  assert "jaxlib 0.4.38: not installed: --python=" in got.stdout
  assert not (tmp_path / "venvs").exists()  # nothing was made


@pytest.mark.compiles
def test_a_release_without_wheels_is_not_installed_and_never_a_change(
  served, tmp_path, running_release_once
):
  """0.4.1 has no wheel for this Python (the package index says so; the
  test is skipped when it cannot be reached): its cells say "not
  installed: ..." and the running release's configs are not compared."""
  assert "0.4.1" not in served
  flags = (
    f"--jaxlib=0.4.1,{_RUNNING}",
    f"--python={sys.executable}",
    f"--cache_dir={tmp_path}",
    *_SWEEP_ONE,
  )
  got, table = _versions_json_and_table(*flags)
  assert got.returncode == 1, got.stderr  # documented: not every release ran
  doc = json.loads(got.stdout)
  old, new = doc["versions"]
  assert (old["status"], old["installed"]) == ("not installed", False)
  mine = venvs.this_python()
  assert old["error"].startswith(
    f"not installed: the package index has no jaxlib 0.4.1 wheel for "
    f"Python {mine} (--python="
  )
  assert (new["status"], new["python"]) == ("ok", mine)
  (config,) = doc["configs"]
  assert config["cells"]["0.4.1"]["status"] == "not installed"
  assert (config["changed"], config["compared_in"]) == ([], [_RUNNING])
  assert table.returncode == 1, table.stderr
  row = next(l for l in table.stdout.splitlines() if "site fates" in l)
  assert "not installed: the package index has no jaxlib 0.4.1" in row
  assert not row.rstrip().endswith("*")
  assert (
    "0 of 0 configs compared in two or more versions changed (*); 1 of 1 "
    "ran under fewer than two versions and is not compared."
  ) in table.stdout


class PureTest(parameterized.TestCase):
  def test_requirements(self):
    plugins = ("0.4.35", "0.10.2")
    self.assertIn("numpy<2", venvs.requirements_for("0.4.23", plugins))
    old = venvs.requirements_for("0.4.35", plugins)
    self.assertIn("jax-cuda12-plugin==0.4.35", old)
    self.assertIn("nvidia-cuda-nvcc-cu12<12.9", old)
    self.assertNotIn(
      "jax-cuda12-plugin==0.4.13", venvs.requirements_for("0.4.13", plugins)
    )
    cpu = venvs.requirements_for("0.10.2", plugins, cuda=False)
    self.assertFalse([r for r in cpu if "cuda" in r or "numpy" in r])

  def test_version_key(self):
    self.assertLess(venvs.version_key("0.9.0.1"), venvs.version_key("0.10.0"))
    with self.assertRaises(venvs.VenvError):
      venvs.version_key("0.4.38rc1")

  def test_releases_between(self):
    releases = ("0.4.34", "0.4.35", "0.5.0", "0.10.2")
    self.assertEqual(
      bisect.releases_between(releases, "0.10.2", "0.4.35"),
      ("0.4.35", "0.5.0", "0.10.2"),
    )
    with self.assertRaisesRegex(InvalidArgumentError, "--good=0.4.23"):
      bisect.releases_between(releases, "0.4.23", "0.10.2")

  def test_verdicts(self):
    def run(status="ok", passed=True):
      reply = {
        "results": {"configs": [{"status": status}]},
        "requirements": [{"name": "consistent", "passed": passed}],
      }
      return VersionRun("0.5.0", reply=reply)

    self.assertEqual(bisect.verdict(run()), "PASS")
    self.assertEqual(bisect.verdict(run(passed=False)), "FAIL")
    self.assertEqual(bisect.verdict(run(status="failed")), "unknown")
    self.assertEqual(bisect.verdict(VersionRun("0.5.0", error="x")), "unknown")

  def test_bisect_asks_the_index_once(self):
    # The index and the workers are stand-ins (no venvs, no network): what
    # is checked is how often bisect asks for the plugin versions, and that
    # every probe gets that one answer.
    releases = ("0.5.0", "0.5.1", "0.5.2", "0.5.3", "0.5.4")
    asked, given = [], []
    config = {"case": "seed_mlp", "target": "a100", "n": 2, "precision": "f"}

    def index_versions(name, python_version=None):
      asked.append((name, python_version))
      return ("0.5.2",)

    def run_one(v, where, request, cache_dir, requirements, plugins, log):
      given.append(plugins)
      passed = venvs.version_key(v) < venvs.version_key("0.5.3")
      reply = {
        "results": {"configs": [dict(config, status="ok", dot_sites=[])]},
        "requirements": [{"name": "accurate", "passed": passed}],
      }
      return VersionRun(v, reply=reply)

    cache = self.create_tempdir().full_path
    # Every venv is still to be made, with one (never started) Python.
    where = {
      v: pythons.Interpreter("/nowhere/python3", "3.13") for v in releases
    }
    with (
      mock.patch.object(venvs, "index_versions", index_versions),
      mock.patch.object(driver, "run_one", run_one),
    ):
      result = bisect.bisect_releases(
        releases, {"targets": ["a100"]}, ("accurate",), cache, where=where
      )
    self.assertEqual((result.before, result.after), ("0.5.2", "0.5.3"))
    self.assertEqual(asked, [("jax-cuda12-plugin", "3.13")])
    self.assertLen(given, 4)  # both ends, then 0.5.2 and 0.5.3
    self.assertEqual(given, [{"3.13": ("0.5.2",)}] * 4)

  def test_bad_jaxlib_is_usage_error(self):
    got = run_hloprobe_here("versions", "--jaxlib=latest", "--targets=cpu")
    self.assertEqual(got.returncode, 2)
    self.assertIn("hloprobe: error: --jaxlib", got.stderr)


if __name__ == "__main__":
  absltest.main()
