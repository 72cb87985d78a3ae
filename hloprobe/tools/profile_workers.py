"""cProfile of one `hloprobe` command in every process it starts: the
main one and each worker (issue 37: where a real-size explain's time goes;
the stage seconds, `sweep --timings`, say which stage, not which code).

  python -m hloprobe.tools.profile_workers OUT_DIR [--top=N] [--cpu] -- ARGS...

runs `python -m hloprobe ARGS...` under cProfile, writes `main.prof` and
one `<pid>.prof` per worker into OUT_DIR (a new or empty folder), then
prints each process's functions with the most cumulative seconds. A
worker's stats are written after each reply it sends, so a worker the
pool stops still leaves its last one.

How the workers are reached: a `sitecustomize` module written into
OUT_DIR/site, put first on PYTHONPATH; in a process started as `python
-c` (how `runtime.process` starts a worker, `serve.main_code`) with
`HLOPROBE_PROFILE_DIR` set, it turns cProfile on and wraps
`runtime.serve._reply`. The workers are started as `python -c`, not as
forks of `runtime.forked`'s server (HLOPROBE_WORKER_START=spawn: a
fork runs no `sitecustomize`), so each imports jax itself, as before
2026-12-07; nothing else in hloprobe changes. The measuring slows
Python-heavy code (tracing, the numpy executor's bookkeeping) by about
10-30%, not the time spent in XLA or numpy kernels.

--cpu: the workers' profiles count CPU seconds of the whole process (all
its threads: XLA's compile threads, BLAS's), not wall seconds. On a
shared, loaded machine wall seconds stretch with the load, and most where
threads wait on each other (a two-thread float64 gemm); CPU seconds say
what the work costs. They are sampled, not counted: a thread of the
worker reads the main thread's stack every `_SAMPLE_S` seconds
(`sys._current_frames`) and credits the process CPU seconds
(`time.process_time`) since the last sample to each function on it
(own: the innermost). The calls column is then the number of samples
that saw the function. cProfile with `time.process_time` as its clock
cost a system call per function call and return (a whole-process CPU
clock has no vDSO path): issue 37's gpt2_1 explain took 212 s user and
77 s system CPU so profiled, 144-159 s and 10.3-10.9 s unprofiled;
sampled, 175 s and 12.1 s (load 3-10). A sampled function's own seconds
include the native code it called (`{built-in ...}` entries do not
appear). The main process stays cProfile, wall.

Each worker also writes `<pid>.times`, its own user and system CPU
seconds and its children's (os.times) at its last reply, printed with its
profile; the command's whole user and system CPU (its process tree,
`resource.getrusage(RUSAGE_CHILDREN)`) comes last.
"""

from __future__ import annotations

import glob
import io
import os
import pstats
import resource
import subprocess
import sys

from hloprobe.runtime.pool import WORKER_START_ENV

__all__ = ["main", "top_lines"]

_ENV = "HLOPROBE_PROFILE_DIR"
_CPU_ENV = "HLOPROBE_PROFILE_CPU"
# --cpu: seconds between two samples of a worker's main-thread stack.
_SAMPLE_S = 0.01
_SITE = f"""# Written by hloprobe.tools.profile_workers; profiles worker processes.
import os, sys
_d = os.environ.get({_ENV!r})
if _d and sys.argv and sys.argv[0] == "-c":
  import time
  def _times():
    t = os.times()
    return "%.2f %.2f %.2f %.2f" % (t.user, t.system, t.children_user,
                                    t.children_system)
  if os.environ.get({_CPU_ENV!r}):
    import marshal, threading
    _main = threading.main_thread().ident
    _own, _cum, _n = {{}}, {{}}, {{}}
    _lock = threading.Lock()
    def _sample(last):
      now = time.process_time()
      frame = sys._current_frames().get(_main)
      seen, dt = set(), now - last
      with _lock:
        while frame is not None:
          c = frame.f_code
          key = (c.co_filename, c.co_firstlineno, c.co_name)
          if not seen:
            _own[key] = _own.get(key, 0.0) + dt
          if key not in seen:
            seen.add(key)
            _cum[key] = _cum.get(key, 0.0) + dt
            _n[key] = _n.get(key, 0) + 1
          frame = frame.f_back
      return now
    def _loop():
      last = time.process_time()
      while True:
        time.sleep({_SAMPLE_S!r})
        last = _sample(last)
    class _Sampled:
      def disable(self):
        pass
      enable = disable
      def dump_stats(self, path):
        with _lock:
          stats = {{k: (_n[k], _n[k], _own.get(k, 0.0), _cum[k], {{}})
                   for k in _cum}}
        with open(path + ".tmp", "wb") as f:
          marshal.dump(stats, f)
        os.replace(path + ".tmp", path)
    _p = _Sampled()
    threading.Thread(target=_loop, daemon=True).start()
  else:
    import cProfile
    _p = cProfile.Profile()
  try:
    import hloprobe.runtime.serve as _m
    _orig = _m._reply
    def _reply(*a, **k):
      _p.disable()
      _p.dump_stats(os.path.join(_d, "%d.prof" % os.getpid()))
      with open(os.path.join(_d, "%d.times" % os.getpid()), "w") as f:
        f.write(_times())
      try:
        return _orig(*a, **k)
      finally:
        _p.enable()
    _m._reply = _reply
    _p.enable()
  except Exception as e:
    sys.stderr.write("profile_workers: %s\\n" % e)
"""


def top_lines(path: str, top: int) -> list[str]:
  """The `top` functions of a cProfile stats file by cumulative seconds,
  one line each: "<cumulative s> <own s> <calls> <file:line(function)>"
  (paths shortened after `site-packages/` or the checkout's `hloprobe/`).

  Raises:
    OSError: the file cannot be read.
  """
  stats = pstats.Stats(path, stream=io.StringIO())
  found = sorted(stats.stats.items(), key=lambda kv: kv[1][3], reverse=True)[
    :top
  ]
  out = []
  for (file, line, name), (_, calls, own, cum, _) in found:
    for cut in ("site-packages/", "/hloprobe/"):
      if cut in file:
        file = file.split(cut, 1)[1]
        break
    out.append(f"{cum:9.1f} {own:9.1f} {calls:8d}  {file}:{line}({name})")
  return out


def main(argv: list[str]) -> None:
  """Runs `hloprobe ARGS` profiled (module docstring); bad arguments exit
  with one line."""
  if "--" not in argv or argv.index("--") < 1:
    sys.exit(
      "profile_workers: usage: OUT_DIR [--top=N] [--cpu] -- HLOPROBE_ARGS..."
    )
  split = argv.index("--")
  mine, args = argv[:split], argv[split + 1 :]
  out, top, cpu = mine[0], 30, False
  for a in mine[1:]:
    if a == "--cpu":
      cpu = True
    elif a.startswith("--top=") and a[6:].isdigit():
      top = int(a[6:])
    else:
      sys.exit(f"profile_workers: unknown argument {a!r}")
  if os.path.exists(out) and os.listdir(out):
    sys.exit(f"profile_workers: {out} is not empty")
  site = os.path.join(out, "site")
  os.makedirs(site)
  with open(os.path.join(site, "sitecustomize.py"), "w") as f:
    f.write(_SITE)
  path = os.environ.get("PYTHONPATH")
  env = dict(
    os.environ,
    **{_ENV: os.path.abspath(out)},
    **({_CPU_ENV: "1"} if cpu else {}),
    # Every worker its own `python -c`, whose start runs the profiler
    # (a fork of `runtime.forked`'s server would not).
    **{WORKER_START_ENV: "spawn"},
    PYTHONPATH=os.path.abspath(site) + (os.pathsep + path if path else ""),
  )
  main_prof = os.path.join(out, "main.prof")
  rc = subprocess.call(
    [sys.executable, "-m", "cProfile", "-o", main_prof, "-m", "hloprobe"]
    + args,
    env=env,
  )
  workers = sorted(glob.glob(os.path.join(out, "*.prof")))
  what = "CPU s, own CPU s, samples" if cpu else "s, own s, calls"
  for prof in [main_prof] + [p for p in workers if p != main_prof]:
    if not os.path.exists(prof):
      print(f"== {prof}: not written (the command ended before it)")
      continue
    if prof == main_prof:
      print(f"== {prof} (cumulative s, own s, calls, function)")
    else:
      print(f"== {prof} (cumulative {what}, function)")
      print(_times_line(prof[: -len(".prof")] + ".times"))
    print("\n".join(top_lines(prof, top)))
  used = resource.getrusage(resource.RUSAGE_CHILDREN)
  print(
    f"== the command, all its processes: user {used.ru_utime:.1f} s, "
    f"system {used.ru_stime:.1f} s CPU"
  )
  sys.exit(rc)


def _times_line(path: str) -> str:
  """One line of a worker's CPU seconds from its `.times` file."""
  try:
    with open(path) as f:
      user, system, c_user, c_system = (float(x) for x in f.read().split())
  except (OSError, ValueError):
    return "   (its CPU seconds: not written)"
  return (
    f"   process CPU: user {user:.1f} s, system {system:.1f} s; "
    f"its children's: user {c_user:.1f} s, system {c_system:.1f} s"
  )


if __name__ == "__main__":
  main(sys.argv[1:])
