"""Tests of hloprobe.runtime.host: which CPU and ISA the CPU numbers come from."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import testutil
from absl.testing import absltest, parameterized
from testutil import run_hloprobe

from hloprobe.runtime import host

_CPUINFO = """processor\t: 0
model name\t: Example CPU 9000
flags\t\t: fpu sse4_2 avx avx2 fma avx512f avx512dq
"""


class HostCpuTest(parameterized.TestCase):
  @parameterized.named_parameters(
    ("no_cap", None, "AVX512", None),
    ("avx", "--xla_cpu_max_isa=AVX", "AVX", "AVX"),
    ("lower_case", "--xla_cpu_max_isa=avx2", "AVX2", "AVX2"),
    (
      "last_wins",
      "--xla_cpu_max_isa=AVX --xla_cpu_max_isa=AVX2",
      "AVX2",
      "AVX2",
    ),
    # A cap above the host changes nothing (cpu_features.cc only disables).
    ("cap_above_host", "--xla_cpu_max_isa=AMX", "AVX512", "AMX"),
    ("unknown_cap", "--xla_cpu_max_isa=MMX", "unknown", "MMX"),
  )
  def test_isa_is_the_older_of_host_and_cap(self, flags, isa, max_isa):
    cpu = host.HostCpu.of(flags, _CPUINFO)
    self.assertEqual(cpu.model, "Example CPU 9000")
    self.assertEqual(cpu.host_isa, "AVX512")
    self.assertEqual(cpu.isa, isa)
    self.assertEqual(cpu.max_isa, max_isa)

  def test_no_cpuinfo_is_unknown(self):
    cpu = host.HostCpu.of("--xla_cpu_max_isa=AVX", "")
    self.assertEqual((cpu.model, cpu.host_isa, cpu.isa), ("unknown",) * 3)

  def test_describe_names_the_cap(self):
    cpu = host.HostCpu.of("--xla_cpu_max_isa=AVX", _CPUINFO)
    self.assertEqual(
      cpu.describe(), "Example CPU 9000, XLA CPU ISA AVX (host AVX512)"
    )


@pytest.mark.compiles
class UsableCoresTest(absltest.TestCase):
  def test_follows_the_affinity_mask(self):
    # `--jobs` defaults to these cores: under taskset or a cpuset, not the
    # machine's count.
    one = min(os.sched_getaffinity(0))
    code = (
      f"import os; os.sched_setaffinity(0, {{{one}}}); "
      "from hloprobe.runtime import host; print(host.usable_cores())"
    )
    out = subprocess.run(
      [sys.executable, "-c", code],
      capture_output=True,
      text=True,
      check=True,
      env=dict(os.environ, PYTHONPATH=testutil.ROOT),
    ).stdout
    self.assertEqual(out.split(), ["1"])


@pytest.mark.compiles  # an explain through the CLI
class CliRecordsHostTest(absltest.TestCase):
  def test_results_json_and_explain_name_the_isa(self):
    # One fresh process (XLA_FLAGS is read as its backend starts): explain
    # writes results.json (the sweep's records, as `sweep --format=json`
    # prints them) and names the ISA under --verbose.
    out = self.create_tempdir().full_path
    proc = run_hloprobe(
      "explain",
      "--batch_sizes=1",
      "--precisions=float32",
      "--verbose",
      f"--output_dir={out}",
      env={"XLA_FLAGS": "--xla_cpu_max_isa=AVX"},
    )
    self.assertEqual(proc.returncode, 0, proc.stderr)
    with open(os.path.join(out, "results.json")) as f:
      doc = json.load(f)
    self.assertEqual(doc["host"]["isa"], "AVX")
    self.assertEqual(doc["host"]["max_isa"], "AVX")
    self.assertIn("XLA CPU ISA AVX", proc.stdout)


if __name__ == "__main__":
  absltest.main()
