"""The command line under bad environments, bad inputs and interrupts
(issue 13): one line and exit 2 for bad input, nothing lost, nothing left."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time

import pytest
import testutil
from absl.testing import absltest, parameterized
from testutil import run_hloprobe, run_hloprobe_here

from hloprobe.golden import format
from hloprobe.ir import textfile


@pytest.mark.compiles  # XLA reads XLA_FLAGS in a process of its own
class EnvironmentXlaFlagsTest(testutil.BadInputCase):
  @parameterized.named_parameters(
    (
      "unknown_flag",
      "--xla_cpu_enabel_fast_math=false",
      "XLA rejected flag --xla_cpu_enabel_fast_math=false",
    ),
    (
      "bad_value",
      "--xla_cpu_enable_fast_math=maybe",
      "XLA rejected flag --xla_cpu_enable_fast_math: cannot read the value "
      "'maybe'",
    ),
  )
  def test_named_in_one_line(self, xla_flags, message):
    proc = run_hloprobe(
      "sweep", "--batch_sizes=1", env={"XLA_FLAGS": xla_flags}
    )
    self.assertUsageError(proc, message)
    self.assertIn("XLA_FLAGS of the environment", proc.stderr)


class BoundedInputTest(testutil.BadInputCase):
  @parameterized.named_parameters(
    ("huge_range", "1-1000000000", "bad batch size '1-1000000000'"),
    ("overflowing_range", "1-100000000000000000000", "bad batch size '1-1"),
    ("too_many_sizes", "1-5000", "more than 4096 sizes"),
  )
  def test_batch_ranges_checked_before_building(self, sizes, message):
    self.assertUsageError(
      run_hloprobe_here("sweep", f"--batch_sizes={sizes}"), message
    )

  @pytest.mark.compiles  # checked as the sweep starts its workers
  def test_batch_size_larger_than_the_case_is_a_usage_error(self):
    # seed_mlp's input grid is 64 x 64 = 4096 rows (its docstring).
    self.assertUsageError(
      run_hloprobe_here(
        "sweep", "--batch_sizes=2,4097", "--precisions=float32", timeout_s=300
      ),
      "batch size 4097 exceeds the 4096 rows of case 'seed_mlp'",
    )

  def _fifo(self) -> str:
    path = os.path.join(self.create_tempdir().full_path, "fifo.txtpb")
    os.mkfifo(path)
    return path

  def test_fifo_and_device_are_refused_not_read(self):
    fifo = self._fifo()
    for flag, path, kind in (
      ("--target_config", fifo, "a FIFO"),
      ("--target_config", "/dev/zero", "a character device"),
      ("--experiments_file", fifo, "a FIFO"),
      ("--experiments_file", "/dev/zero", "a character device"),
    ):
      with self.subTest(flag=flag, path=path):
        proc = run_hloprobe_here("sweep", f"{flag}={path}")
        self.assertUsageError(proc, f"{kind}, not a regular file")

  def test_manifest_target_fifo_is_refused(self):
    golden = self.create_tempdir().full_path
    fifo = os.path.join(golden, "fifo.txtpb")
    os.mkfifo(fifo)
    manifest = {
      "schema": "hloprobe-golden-manifest",
      "schema_version": format.MANIFEST_SCHEMA_VERSION,
      "jax": "0.10.2",
      "jaxlib": "0.10.2",
      "date": "2026-01-01",
      "sweep": {
        "cases": ["seed_mlp"],
        "targets": [fifo],
        "batch_sizes": [1],
        "precisions": ["float32"],
      },
    }
    with open(os.path.join(golden, "MANIFEST.json"), "w") as f:
      json.dump(manifest, f)
    proc = run_hloprobe_here("golden", "check", f"--golden_dir={golden}")
    self.assertNotEqual(proc.returncode, 0)
    self.assertLen(testutil.error_lines(proc), 1, proc.stderr)
    self.assertIn("a FIFO, not a regular file", proc.stderr)

  def test_oversized_file_is_refused(self):
    big = self.create_tempfile("big.txt", "#" * (textfile.MAX_INPUT_BYTES + 1))
    self.assertUsageError(
      run_hloprobe_here("sweep", f"--experiments_file={big.full_path}"),
      "larger than the 16777216-byte limit",
    )


def _processes_with(token: str) -> list[int]:
  """Pids of live processes whose environment holds `token`."""
  found = []
  for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
      with open(f"/proc/{pid}/environ", "rb") as f:
        if token.encode() in f.read():
          found.append(int(pid))
    except OSError:
      continue  # ended meanwhile, or not ours
  return found


@pytest.mark.compiles  # the command line in processes of its own
class PipesTest(absltest.TestCase):
  """SIGPIPE: the command line's own streams end it quietly when their
  reader goes away; a worker's pipe whose process ended does not
  (`startup.EscapingStream`)."""

  def test_a_reader_that_went_away_ends_it_quietly(self):
    # `hloprobe cases | head` where head has gone before the first line:
    # killed by SIGPIPE, as at its default action, and nothing printed.
    read, write = os.pipe()
    env = dict(os.environ, PYTHONPATH=testutil.ROOT)
    proc = subprocess.Popen(
      [sys.executable, "-m", "hloprobe", "cases"],
      stdout=write,
      stderr=subprocess.PIPE,
      env=env,
    )
    os.close(write)
    os.close(read)
    _, err = proc.communicate(timeout=300)
    self.assertEqual(proc.returncode, -signal.SIGPIPE)
    self.assertEqual(err, b"")

  def test_a_stream_the_shell_closed_loses_only_its_words(self):
    # `2>&-` and `>&-`: Python's sys.stderr or sys.stdout is None; the
    # other stream and the exit status are as ever (a traceback or exit 1
    # with nothing printed before 2026-12-08).
    env = dict(os.environ, PYTHONPATH=testutil.ROOT)
    argv = [sys.executable, "-m", "hloprobe", "sweep", "--case=seed_mlp"]
    argv += ["--targets=cpu", "--batch_sizes=1", "--precisions=float32"]
    for closed in (2, 1):
      with self.subTest(closed=closed):
        # The shell closes it (no preexec_fn: a fork of this process,
        # which runs jax, warns).
        shell = f'exec "$0" "$@" {closed}>&-'
        proc = subprocess.run(
          ["sh", "-c", shell, *argv],
          capture_output=True,
          env=env,
          timeout=300,
        )
        self.assertEqual(proc.returncode, 0, proc.stderr[-2000:])
        if closed == 2:  # the table as ever
          self.assertIn(b"seed_mlp  cpu", proc.stdout)
        self.assertNotIn(b"Traceback", proc.stdout + proc.stderr)

  def test_a_worker_whose_fork_ended_is_started_again(self):
    # The pin file's worker asks for TF_CPP_MIN_LOG_LEVEL=0 (its VLOG),
    # which a fork of the server (whose jax set another) cannot take: it
    # ends NOT_FORKED before reading the request, and the request's
    # write to its pipe must fall back to a `python -c` worker. With
    # SIGPIPE at its default, that write killed the command: exit 141,
    # nothing printed (the README's pin search on tm_mm at a100).
    proc = run_hloprobe(
      "explain",
      "--case=tm_mm",
      "--targets=a100",
      "--batch_sizes=2,8",
      "--precisions=float32",
      "--only=invariance",
      "--invariance=pin",
      "--nocache",
    )
    self.assertEqual(proc.returncode, 0, proc.stderr[-2000:])
    self.assertIn(
      "Do: pin tm_mm on a100 under float32 with XLA_FLAGS=", proc.stdout
    )


@pytest.mark.compiles  # sweeps through the CLI, interrupted
class InterruptTest(absltest.TestCase):
  """SIGINT/SIGTERM mid-sweep: finished configs on disk, nothing left over.

  A soak: three interrupts at points drawn with a fixed seed, on a small
  sweep with a compile-only target (so a worker process is running).
  """

  _ARGS = ("--targets=cpu,t4", "--batch_sizes=1-3", "--precisions=float32")

  def _start(self, out: str, tmp: str, token: str) -> subprocess.Popen:
    env = dict(os.environ, TMPDIR=tmp, HLOPROBE_SOAK_TOKEN=token)
    env["PYTHONPATH"] = os.pathsep.join(
      filter(None, [testutil.ROOT, env.get("PYTHONPATH")])
    )
    return subprocess.Popen(
      [
        sys.executable,
        "-m",
        "hloprobe",
        "sweep",
        *self._ARGS,
        f"--output_dir={out}",
      ],
      env=env,
      stdout=subprocess.PIPE,
      stderr=subprocess.PIPE,
      text=True,
    )

  def _lines(self, out: str, running: bool = False) -> list[dict]:
    """results.jsonl's lines. Once the sweep has ended each must be whole
    (one ending without a newline fails the test); while it runs, the
    line being written may show in part and is left out."""
    path = os.path.join(out, "results.jsonl")
    if not os.path.exists(path):
      return []
    with open(path) as f:
      text = f.read()
    if running:
      text = text[: text.rfind("\n") + 1]
    self.assertTrue(not text or text.endswith("\n"), text[-200:])
    return [json.loads(line) for line in text.splitlines()]

  def _stop(self, proc: subprocess.Popen) -> None:
    """Kills a sweep still running and closes its pipes."""
    if proc.poll() is None:
      proc.kill()
    proc.communicate()

  def _interrupt_once(self, rng: random.Random, signum: int, i: int) -> None:
    out, tmp = (self.create_tempdir().full_path for _ in range(2))
    token = f"soak-{os.getpid()}-{i}"
    proc = self._start(out, tmp, token)
    # A failed assertion below must not leave the sweep running: its
    # Popen would be collected in a later test (a ResourceWarning there).
    self.addCleanup(self._stop, proc)
    deadline = time.monotonic() + 300
    # Into the sweep: a finished config, or (last) the t4 worker started.
    started = (
      (lambda: self._lines(out, running=True))
      if i < 2
      else (lambda: len(_processes_with(token)) > 1)
    )
    while not started() and proc.poll() is None:
      self.assertLess(time.monotonic(), deadline)
      time.sleep(0.1)
    time.sleep(rng.uniform(0.0, 4.0))
    proc.send_signal(signum)
    _, stderr = proc.communicate(timeout=300)
    kept = self._lines(out)
    if proc.returncode == 0:  # it finished first: everything is there
      self.assertLen(kept, 6)
    else:
      self.assertEqual(proc.returncode, 128 + signum, stderr)
      m = re.fullmatch(
        r"hloprobe: interrupted(?: after (\d+) of 6 configs; results so far "
        r"in \S+results\.jsonl)?",
        stderr.splitlines()[-1],
      )
      self.assertNotIn("Traceback", stderr)
      self.assertIsNotNone(m, stderr)
      self.assertEqual(int(m.group(1) or 0), len(kept))
    for line in kept:
      self.assertEqual(line["status"], "ok", line)
    self.assertEqual(
      [(r["target"], r["n"]) for r in kept],
      [("cpu", 1), ("cpu", 2), ("cpu", 3), ("t4", 1), ("t4", 2), ("t4", 3)][
        : len(kept)
      ],
    )
    for _ in range(50):  # a worker ends on SIGKILL from the kernel
      if not _processes_with(token):
        break
      time.sleep(0.1)
    self.assertEqual(_processes_with(token), [])
    self.assertEqual(os.listdir(tmp), [])

  def test_soak(self):
    rng = random.Random(20261130)
    for i, signum in enumerate((signal.SIGINT, signal.SIGTERM, signal.SIGTERM)):
      with self.subTest(i=i, signal=signum):
        self._interrupt_once(rng, signum, i)


class TargetNameTest(testutil.BadInputCase):
  def _config(self, folder: str, name: str) -> str:
    src = os.path.join(testutil.ROOT, "hloprobe/compile/gpu_specs/t4.txtpb")
    path = os.path.join(self.create_tempdir(folder).full_path, name)
    with open(src) as f, open(path, "w") as g:
      g.write(f.read())
    return path

  def test_config_named_like_a_builtin_target(self):
    path = self._config("x", "cpu.txtpb")
    self.assertUsageError(
      run_hloprobe_here("sweep", "--targets=cpu", f"--target_config={path}"),
      f"targets 'cpu' and '{path}' are both named 'cpu'",
    )

  def test_two_configs_with_one_file_name(self):
    a, b = self._config("a", "gpu1.txtpb"), self._config("b", "gpu1.txtpb")
    self.assertUsageError(
      run_hloprobe_here(
        "sweep", "--targets=", f"--target_config={a}", f"--target_config={b}"
      ),
      "are both named 'gpu1'",
    )


class OneLineTest(testutil.BadInputCase):
  @parameterized.named_parameters(
    ("superscript", "\u00b2"),
    ("arabic_indic", "\u0661"),
    ("fullwidth", "\uff11"),
    ("five_thousand_digits", "9" * 5000),
  )
  def test_batch_size_not_ascii_or_huge(self, size):
    self.assertUsageError(
      run_hloprobe_here("sweep", f"--batch_sizes=1,{size}"),
      f"bad batch size {size[:20]!r}"[:-1],
    )

  def test_non_utf8_experiments_file(self):
    path = self.create_tempfile("exp.txt", b"x:--xla_a=\xff\n", mode="wb")
    self.assertUsageError(
      run_hloprobe_here("sweep", f"--experiments_file={path.full_path}"),
      "not UTF-8 text (byte 0xff at offset 10)",
    )


if __name__ == "__main__":
  absltest.main()
