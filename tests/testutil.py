"""Shared by the tests: the command line run as a user would; TF32 rounding."""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
from absl.testing import parameterized

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_hloprobe(
  *args: str,
  env: dict | None = None,
  drop=(),
  timeout: float = 600,
  cwd: str | None = None,
) -> subprocess.CompletedProcess:
  """`python -m hloprobe ARGS` in a fresh process, this checkout importable.

  Args:
    args: command-line words.
    env: extra environment variables.
    drop: environment variables to remove (e.g. to see the CLI set them).
    cwd: the folder to run in (default: this one).
  """
  full = {k: v for k, v in os.environ.items() if k not in drop}
  full.update(env or {})
  full["PYTHONPATH"] = os.pathsep.join(
    filter(None, [ROOT, full.get("PYTHONPATH")])
  )
  return subprocess.run(
    [sys.executable, "-m", "hloprobe", *args],
    capture_output=True,
    text=True,
    env=full,
    timeout=timeout,
    check=False,
    cwd=cwd,
  )


class HangError(Exception):
  """run_hloprobe_here's command outlived its `timeout_s`; no OSError, so
  the command line does not report it as its own failure."""


def run_hloprobe_here(
  *args: str, timeout_s: int = 60
) -> subprocess.CompletedProcess:
  """`hloprobe ARGS` in this process, for tests of flag parsing and input
  checks that end before any work: the flags parsed as the command line
  parses them (`cli._parse_flags`: one line, exit 2) then restored (absl
  `flagsaver`), stdout and stderr captured. A command that goes on to
  compile fails its test unless marked `compiles` (tests/conftest.py);
  `run_hloprobe` runs one whole.

  Args:
    args: command-line words, the command first.
    timeout_s: seconds before HangError ends a command stuck in a call
      (e.g. opening a FIFO), by SIGALRM.

  Returns:
    A CompletedProcess whose returncode is main's status or sys.exit's.
  """
  from absl.testing import flagsaver

  from hloprobe.cli import _main as cli

  def hang(signum, frame):
    raise HangError(f"hloprobe {' '.join(args)}: over {timeout_s} s")

  out, err = io.StringIO(), io.StringIO()
  old = signal.signal(signal.SIGALRM, hang)
  signal.alarm(timeout_s)
  try:
    with (
      flagsaver.flagsaver(),
      contextlib.redirect_stdout(out),
      contextlib.redirect_stderr(err),
    ):
      try:
        status = cli.main(cli._parse_flags(["hloprobe", *args]))
      except SystemExit as e:
        status = e.code
  finally:
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)
  return subprocess.CompletedProcess(
    ["hloprobe", *args], status, out.getvalue(), err.getvalue()
  )


def run_hloprobe_json(test, *args: str, **kwargs) -> dict:
  """run_hloprobe(ARGS, **KWARGS), asserted on TEST to exit 0: its JSON."""
  proc = run_hloprobe(*args, **kwargs)
  test.assertEqual(proc.returncode, 0, proc.stderr)
  return json.loads(proc.stdout)


def record_cache() -> str:
  """The record cache the command line uses in this test run (under
  conftest's temporary XDG_CACHE_HOME, one for all of `make test`'s xdist
  workers), for in-process sweeps to share: a config one test computed is
  a hit for the next (the cache's own tests show a hit equals a computed
  record)."""
  from hloprobe.runtime import RecordCache

  return RecordCache.default_dir()


class SweepPool:
  """One pool of worker processes for a test module's in-process sweeps
  (`run`), so that each sweep reuses the workers (one per XLA_FLAGS set)
  instead of starting Pythons that import jax again. A worker resolves
  each case once, by name, and compiles each config with its own dump
  folder (compile/lowering.py), as a sweep's many configs share one.
  Workers start on the first sweep; the module's tearDownModule calls
  `close`."""

  def __init__(self):
    self._pool = None

  def run(self, spec) -> list:
    """`engine.run_sweep(spec)` on this pool's workers."""
    from hloprobe import engine
    from hloprobe.runtime import WorkerPool

    if self._pool is None:
      self._pool = WorkerPool()
    try:
      return engine.run_sweep(spec, pool=self._pool)
    except BaseException:  # run_sweep may have closed it: the next is new
      self.close()
      raise

  def close(self) -> None:
    """Ends the workers (a later `run` starts new ones)."""
    pool, self._pool = self._pool, None
    if pool is not None:
      pool.close(kill=True)


@contextlib.contextmanager
def shared_workers():
  """Within it, every sweep of this process (the command line run here,
  `run_hloprobe_here`, and the library) gets one warm `WorkerPool` per
  (JAX_PLATFORMS, memory bound, XLA_FLAGS) from `engine.worker_pool`,
  kept open between commands and ended on leaving, as explain's fix tries
  share its sweep's workers: each command then starts no Python that
  imports jax again. A pool retires the workers of flag sets the last
  sweep did not use (`WorkerPool.retire`); what a sweep computes does not
  depend on its workers being warm (pool_test's JobsAndRetireTest). For
  a test module's or class's many in-process commands; Ray pools are
  left as they are."""
  from unittest import mock

  from hloprobe import engine
  from hloprobe.engine import engine as engine_module
  from hloprobe.engine import executor
  from hloprobe.invariance import pin_file
  from hloprobe.runtime import WorkerPool
  from hloprobe.verify import outcome

  real, kept = executor.worker_pool, {}

  def worker_pool(spec):
    pool = real(spec)
    if not isinstance(pool, WorkerPool):
      return pool
    key = (pool._platforms, pool.max_worker_mb, pool.user_xla_flags)
    if key in kept:
      pool.close()  # started no worker
      return kept[key]
    pool.close = lambda kill=False: None  # `with` leaves it open
    kept[key] = pool
    return pool

  with contextlib.ExitStack() as stack:
    for module in (engine, engine_module, pin_file, outcome):
      stack.enter_context(mock.patch.object(module, "worker_pool", worker_pool))
    try:
      yield
    finally:
      for pool in kept.values():
        WorkerPool.close(pool, kill=True)


@contextlib.contextmanager
def shared_case_loader():
  """Within it, every plan of this process loads user cases (`--case=
  path.py:factory`) in one kept loader `WorkerPool` (in place of
  `engine.plan.case_loader`'s, which a plan closes after a failure): a
  test class's many bad cases then start one Python that imports jax,
  not one each. Its worker loads each case by its own words (a new
  source each time, none memoized); one that dies or runs past its
  timeout is started again on the next call. Yields the pool (`started`
  counts its worker starts); its worker ends on leaving."""
  from unittest import mock

  from hloprobe.engine import plan as engine_plan
  from hloprobe.runtime import WorkerPool

  class Kept(WorkerPool):
    def close(self, kill: bool = False) -> None:
      del kill

  kept = Kept()

  @contextlib.contextmanager
  def case_loader():
    yield kept

  try:
    with mock.patch.object(engine_plan, "case_loader", case_loader):
      yield kept
  finally:
    WorkerPool.close(kept, kill=True)


def python_c(test, script: str, **popen_kwargs) -> subprocess.Popen:
  """`python -c script` started, its stdout a text pipe; `test` closes
  that pipe and kills the process if it still runs, as it cleans up."""
  proc = subprocess.Popen(
    [sys.executable, "-c", script],
    stdout=subprocess.PIPE,
    text=True,
    **popen_kwargs,
  )
  test.addCleanup(proc.stdout.close)
  test.addCleanup(lambda: proc.poll() is None and proc.kill())
  return proc


def process_running(pid: int) -> bool:
  """Whether process `pid` exists and is not a zombie (Linux /proc)."""
  try:
    with open(f"/proc/{pid}/stat") as f:
      return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
  except FileNotFoundError:
    return False


def process_ends(pid: int, timeout_s: float) -> bool:
  """Whether process `pid` has ended (`process_running`) within
  `timeout_s` seconds, looking every 0.1 s."""
  deadline = time.monotonic() + timeout_s
  while process_running(pid) and time.monotonic() < deadline:
    time.sleep(0.1)
  return not process_running(pid)


def jaxlib_at_least(version: str, jaxlib: str | None = None) -> bool:
  """Whether `jaxlib` (default: this process's) is `version` or newer
  ("0.11.1")."""
  from hloprobe.versions.venvs import version_key

  if jaxlib is None:
    import jaxlib as installed

    jaxlib = installed.__version__
  return version_key(jaxlib) >= version_key(version)


def goldens_from_this_jaxlib() -> bool:
  """Whether golden/ was made by this process's jaxlib: a golden check
  compares full texts then, the dot summaries alone otherwise
  (hloprobe/golden/snapshot.py)."""
  import jaxlib

  with open(os.path.join(ROOT, "golden", "MANIFEST.json")) as f:
    return json.load(f)["jaxlib"] == jaxlib.__version__


def triton_tf32_under_high(jaxlib: str | None = None) -> bool:
  """Whether XLA's Triton gemm rounds to TF32 under Precision.HIGH, in
  `jaxlib` (a release such as "0.10.2"; default: this process's).

  XLA commit 251becc5 ("Allow TF32 in Triton when precision is HIGH",
  `IsTf32Allowed` in xla/backends/gpu/codegen/triton/transforms/
  stablehlo_lower_to_triton.cc: `== DEFAULT` became `<= HIGH`), first in
  jaxlib 0.11.1; seen in the PTX of 0.11.2 (a real H200) and 0.12.0.1
  (compile-only A100), absent from 0.10.2's.
  """
  return jaxlib_at_least("0.11.1", jaxlib)


def xla_compiles(run) -> int:
  """How many XLA compiles `run()` made in this process (jax's public
  event `/jax/core/compile/backend_compile_duration`, one per compile)."""
  import jax

  seen = []

  def on_compile(event, duration_s, **kwargs):
    del duration_s, kwargs
    if event == "/jax/core/compile/backend_compile_duration":
      seen.append(event)

  jax.monitoring.register_event_duration_secs_listener(on_compile)
  try:
    run()
  finally:
    jax.monitoring.unregister_event_duration_listener(on_compile)
  return len(seen)


def tf32_rna(x: np.ndarray) -> np.ndarray:
  """f32 -> TF32 (10 mantissa bits), ties away from zero, in numpy."""
  bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
  bits = (bits + (1 << 12)) & ~np.uint64((1 << 13) - 1)
  return bits.astype(np.uint32).view(np.float32)


SEED_INPUTS = os.path.join(ROOT, "tests", "testdata", "seed_mlp_inputs.npz")


def seed_mlp_inputs() -> tuple:
  """seed_mlp's `make_inputs()`, read from SEED_INPUTS without XLA.

  Recorded from jax.random under jaxlib 0.12.0.1 (bit-exact on every CPU,
  builtin_cases.py); tests/compile/cases_test.py checks they are still
  what `make_inputs` draws. Returns (xy: f32[4096, 2], (weights, biases,
  gammas, mus)), each a list of f32 arrays, as `make_inputs` does.
  """
  with np.load(SEED_INPUTS) as f:
    group = lambda key: [f[k] for k in sorted(f.files) if k[0] == key]
    return f["xy"], tuple(group(key) for key in "wbgm")


def numpy_seed_row0(tf32_sites=(), f32_between=False, to_tf32=None) -> float:
  """Row 0 of the seed MLP in numpy float64, written from the issue's code
  (independent of hloprobe's emulation), from the case's own inputs.

  Args:
    tf32_sites: the dot sites (0-3) whose operands are rounded to TF32
      first (`to_tf32`); products exact, sums in float64.
    f32_between: round each layer's pre-activation and activation to
      float32, as a kernel that stores f32 does.
    to_tf32: f32 array -> TF32 values (f32); None: `tf32_rna`.
  """
  to_tf32 = to_tf32 or tf32_rna
  xy, params = seed_mlp_inputs()
  weights, biases, gammas, mus = (
    [np.asarray(a, np.float64) for a in group] for group in params
  )
  f32 = (lambda a: np.float64(np.float32(a))) if f32_between else (lambda a: a)
  x = np.asarray(xy[0], np.float64)
  for i, w in enumerate(weights):
    if i in tf32_sites:
      w, x = (to_tf32(a).astype(np.float64) for a in (w, x))
    x = w @ x + biases[i]
    if i < len(gammas):
      x = f32(x)
      x = np.exp(-(gammas[i] ** 2) * np.square(x - mus[i])) * np.sin(16 * x)
      x = f32(x)
  return float(x.mean())


def configs_json(results) -> list[dict]:
  """results.json's configs, without the timings (which always differ)."""
  from hloprobe.report import results_schema

  out = []
  for r in results:
    doc = results_schema.config_json(r)
    doc.pop("timing_s")
    out.append(doc)
  return out


def interrupted_at(k: int, fn, files: tuple[str, ...] = ()) -> bool:
  """Runs `fn()`, raising KeyboardInterrupt at its k-th point where a
  signal handler may run; True if it was interrupted, False if it finished
  first.

  The points are where CPython 3.11 runs pending handlers: as a Python
  function starts (a "call" event) and as a call returns to its caller (a
  "return" event). Not at any line: a line event also falls between a
  `with` block and its `__exit__`, where no handler runs.

  Args:
    files: count only calls made by or into code from these files (all
      when empty).
  """
  count = 0

  def counted(frame) -> bool:
    if not files:
      return True
    caller = frame.f_back
    return frame.f_code.co_filename in files or (
      caller is not None and caller.f_code.co_filename in files
    )

  def tracer(frame, event, arg):
    nonlocal count
    if event in ("call", "return") and counted(frame):
      count += 1
      if count == k:
        raise KeyboardInterrupt
    return tracer

  sys.settrace(tracer)
  try:
    fn()
  except KeyboardInterrupt:
    return True
  finally:
    sys.settrace(None)
  return False


def explanation(**fields):
  """A compile-only `report.TargetExplanation` with nothing in it but
  `fields` (case "c" on target "a100" under DEFAULT unless given)."""
  from hloprobe.report.explain_records import TargetExplanation

  return TargetExplanation(
    **{
      "case": "c",
      "target": "a100",
      "experiment": "baseline",
      "compile_only": True,
      "precisions": {"default": "default (DEFAULT)"},
      "spans": {},
      "algorithms": (),
      "changes": (),
      "row0": (),
      "predicted": (),
      "alternatives": (),
      "selection": None,
      "reported": None,
      "notes": (),
      **fields,
    }
  )


def error_lines(proc) -> list[str]:
  """The `hloprobe:` lines of a finished command's stderr."""
  return [l for l in proc.stderr.splitlines() if l.startswith("hloprobe:")]


class BadInputCase(parameterized.TestCase):
  """Asserts one `hloprobe: error:` line, exit 2 and no output."""

  def assertUsageError(self, proc, message: str) -> None:
    self.assertEqual(proc.returncode, 2, proc.stderr)
    errors = error_lines(proc)
    self.assertLen(errors, 1, proc.stderr)
    self.assertIn(message, errors[0])
    self.assertNotIn("Traceback", proc.stderr)
    self.assertEqual(proc.stdout, "")


# One output, a sum over every row: f32[] at every n (hand-written, as XLA
# prints a compiled module's header; `.format(n=N)`). No kernel of it
# computes a row.
SUM_OVER_ROWS_HLO = """HloModule m, entry_computation_layout={{(f32[{n},8]{{1,0}})->f32[]}}

%add (a: f32[], b: f32[]) -> f32[] {{
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}}

ENTRY %main (x: f32[{n},8]) -> f32[] {{
  %x = f32[{n},8]{{1,0}} parameter(0)
  %z = f32[] constant(0)
  ROOT %r = f32[] reduce(%x, %z), dimensions={{0,1}}, to_apply=%add
}}
"""


# A user case file (`path.py:make_case`) whose rows are exact in f32
# (integer-valued x @ w + 1), so every batch size gives the same bits.
EXACT_MM_CASE = textwrap.dedent("""
  import numpy as np
  import hloprobe

  def _fn(x, w):
    return x @ w + 1.0

  def _inputs():
    g = np.random.default_rng(7)
    x = g.integers(-4, 5, (8, 16)).astype(np.float32)
    w = g.integers(-4, 5, (16, 4)).astype(np.float32)
    return x, w

  def make_case():
    return hloprobe.Case(
      name="exact_mm",
      description="integer-valued x @ w + 1",
      fn=_fn,
      make_inputs=_inputs,
      in_axes=(0, None),
    )
""")
