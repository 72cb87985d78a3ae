"""User cases that misbehave (issue 27 items 4-7, 14) or whose outputs are
not floats (item 5): each a tiny `factory()` the tests name as
`tests/guard_testdata/cases.py:NAME`.

Each runs its misbehaviour where the user's program runs: in `fn` (traced
and run by every stage) or in `make_inputs`. Nothing here is imported by
the tests themselves: the file is only ever a case of the command line.
"""

from __future__ import annotations

import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

from hloprobe import Case


def _hang():
  """Never returns. It sleeps rather than spins: hloprobe's timeout and an
  interrupt stop the worker from outside (runtime/process.py kills it), so
  a sleeping hang is met as a busy one is, and burns no CPU-second of the
  suite while the tests wait out --case_timeout."""
  while True:
    time.sleep(0.05)


def _x():
  return (np.arange(8, dtype=np.float32).reshape(4, 2),)


def _case(name, fn, make_inputs=_x, **kw):
  return Case(name, f"issue 27: {name}", fn, make_inputs, **kw)


def loops():
  """`fn` never returns (a `while True` where it is traced)."""

  def fn(x):
    _hang()

  return _case("g_loops", fn)


def aborts():
  """A host callback that aborts the process that runs it."""

  def fn(x):
    jax.debug.callback(lambda v: os.abort(), x)
    return x * 2

  return _case("g_aborts", fn)


def exits0():
  """`os._exit(0)` where `fn` is traced: a silent, successful-looking end."""

  def fn(x):
    os._exit(0)

  return _case("g_exits0", fn)


def prints():
  """Prints to stdout where traced; its result is fine (x * 2, exact)."""

  def fn(x):
    print("hello from the case", flush=True)
    return x * 2

  return _case("g_prints", fn)


def int32_out():
  """An int32 output that is not a dot: x + 1, exact."""
  return _case(
    "g_int32",
    lambda x: x + 1,
    lambda: (np.arange(8, dtype=np.int32).reshape(4, 2),),
  )


def bool_out():
  """A bool output: x > 2, exact."""
  return _case("g_bool", lambda x: x > 2)


def complex_out():
  """A complex64 output: x * (1 + 2j); its imaginary part is compared."""
  return _case("g_complex", lambda x: x.astype(jnp.complex64) * (1 + 2j))


def inputs_int():
  """`make_inputs` returns an int, not a tuple of arrays."""
  return _case("g_inputs_int", lambda x: x, lambda: 3)


def inputs_raise():
  """`make_inputs` raises."""

  def make():
    raise ValueError("no inputs today")

  return _case("g_inputs_raise", lambda x: x, make)


def name_none():
  return _case(None, lambda x: x)


def name_int():
  return _case(7, lambda x: x)


def name_nul():
  return _case("g_\0nul", lambda x: x)


def returns_none():
  """`fn` returns None: no output to compare."""
  return _case("g_none", lambda x: None)


def factory_base_exception():
  """The factory raises a BaseException that is not an Exception."""
  raise GeneratorExit("factory gave up")


def factory_exits():
  """The factory calls sys.exit(3)."""
  sys.exit(3)


def factory_loops():
  """The factory never returns (a hang where the case loads)."""
  _hang()


def factory_os_exit0():
  """The factory ends the process that loads it with status 0."""
  os._exit(0)
