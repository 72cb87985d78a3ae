"""The CPU this process computes on, as XLA's CPU backend sees it.

Observed CPU numbers (a `cpu` target's row 0) and every emulation depend on
the f32 summation order of XLA's CPU kernels, which follows the vector ISA
XLA compiles for: on jaxlib 0.10.2 the seed's row 0 at n = 2 moves by about
2e-5 between AVX-512 and `--xla_cpu_max_isa=AVX`. So results record which
CPU and which ISA they were computed with.

The ISA rule is XLA's (xla/backends/cpu/codegen/cpu_features.cc,
`CpuFeatureFromString` and `ShouldEnableX86CpuFeature`, checked for jaxlib
0.10.2): XLA compiles for the host's features, minus those newer than
`--xla_cpu_max_isa` when that flag is set. FMA goes with AVX2.

Private in intent: use the package, `hloprobe.runtime`.
"""

from __future__ import annotations

import dataclasses
import os
import platform
import re

__all__ = ["HostCpu", "X86_ISAS", "usable_cores"]

# XLA's `--xla_cpu_max_isa` values for x86, oldest first, each with the
# /proc/cpuinfo flag that shows the host has it.
X86_ISAS = (
  ("SSE4_2", "sse4_2"),
  ("AVX", "avx"),
  ("AVX2", "avx2"),
  ("AVX512", "avx512f"),
  ("AVX512_VNNI", "avx512_vnni"),
  ("AVX512_BF16", "avx512_bf16"),
  ("AMX", "amx_bf16"),
  ("AMX_FP16", "amx_fp16"),
)
_MAX_ISA_RE = re.compile(r"--xla_cpu_max_isa=(\S+)")


@dataclasses.dataclass(frozen=True, slots=True)
class HostCpu:
  """Which CPU, and which ISA XLA's CPU code uses on it.

  Attributes:
    model: the CPU's model name (/proc/cpuinfo), or "unknown".
    machine: `platform.machine()`, e.g. "x86_64".
    host_isa: the newest `X86_ISAS` level the CPU has, or "unknown" (not
      x86, or no /proc/cpuinfo).
    max_isa: the `--xla_cpu_max_isa` value in effect (the last one in
      XLA_FLAGS), or None.
    isa: what XLA compiles for: the older of `host_isa` and `max_isa`;
      "unknown" when either is unknown.
  """

  model: str
  machine: str
  host_isa: str
  max_isa: str | None
  isa: str

  def describe(self) -> str:
    """One line, e.g. "AMD EPYC 9B14, XLA CPU ISA AVX (host AVX512)"."""
    host = f" (host {self.host_isa})" if self.isa != self.host_isa else ""
    return f"{self.model}, XLA CPU ISA {self.isa}{host}"

  def as_json(self) -> dict:
    """The record as a JSON object (results.json `host`)."""
    return dataclasses.asdict(self)

  @classmethod
  def of(cls, xla_flags: str | None, cpuinfo: str | None = None) -> HostCpu:
    """Reads the host CPU and the ISA XLA uses under `xla_flags`.

    Args:
      xla_flags: the XLA_FLAGS the computing process runs with (None: unset).
      cpuinfo: /proc/cpuinfo's text; read from the file when None (and taken
        as empty where it cannot be read).
    """
    if cpuinfo is None:
      cpuinfo = _read_cpuinfo()
    model = re.search(r"^model name\s*:\s*(.+)$", cpuinfo, re.M)
    flags = re.search(r"^flags\s*:\s*(.+)$", cpuinfo, re.M)
    have = set(flags[1].split()) if flags else set()
    names = [name for name, _ in X86_ISAS]
    host = [name for name, flag in X86_ISAS if flag in have]
    host_isa = host[-1] if host else "unknown"
    caps = _MAX_ISA_RE.findall(xla_flags or "")
    max_isa = caps[-1].upper() if caps else None
    isa = host_isa
    if max_isa is not None and host_isa != "unknown":
      isa = (
        min(host_isa, max_isa, key=names.index)
        if max_isa in names
        else "unknown"
      )
    return cls(
      model=model[1].strip() if model else "unknown",
      machine=platform.machine() or "unknown",
      host_isa=host_isa,
      max_isa=max_isa,
      isa=isa,
    )


def _read_cpuinfo() -> str:
  try:
    with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
      return f.read(1 << 20)
  except OSError:
    return ""


def usable_cores() -> int:
  """The CPU cores this process may run on (its affinity mask, e.g. under
  `taskset` or a container's cpuset), else `os.cpu_count()`; at least 1."""
  try:
    return max(1, len(os.sched_getaffinity(0)))
  except (AttributeError, OSError):  # no affinity call on this platform
    return os.cpu_count() or 1
