"""Autotune keys and files (`hloprobe.compile.autotune`), without compiling.

Expected values are XLA's own: jaxlib 0.12.0.1's CUDA plugin logged, for
hloprobe's a100 target (TF_CPP_VMODULE=autotuner_cache_interface=1,
2026-12-02), the device and codegen lines quoted in `_XLA_LOG`; the two
fusion fingerprints are the ones its config assigner hit on
("Config assigner cache stats: hits=2") for the recorded module in
testdata/autotune (the seed at n = 4096 under bfloat16, dumped before the
config-assigner pass). tests/compile/autotune_replay_test.py compiles.
"""

from __future__ import annotations

import os
import types

import pytest
import recorded
import testutil
from absl.testing import absltest

from hloprobe.compile import get_target
from hloprobe.compile.autotune import (
  CUBLAS_CONFIG,
  AutotuneChoice,
  device_fingerprint,
  device_string,
  gemm_fusion_keys,
  parse_codegen_versions,
  results_textproto,
  triton_config,
  triton_pin,
)
from hloprobe.compile.autotune_replay import (
  MISSING_ENTRY,
  autotune_experiment,
  autotuned_target,
  entry_notes,
  loaded_results,
)
from hloprobe.compile.compat import installed_jaxlib
from hloprobe.errors import TargetError

_TESTDATA = recorded.AUTOTUNE
_XLA_LOG = recorded.AUTOTUNE_XLA_LOG
_A100_DEVICE = (
  "CUDA: 8.0, Cores: 108, GPU clock: 1.41 GHz, Memory bandwidth: 1555 GB/s, "
  "L2 cache: 40 MB"
)
_HIT = {
  "gemm_fusion_dot": "e9afbb251e75298f5b7dad55bebeeead",
  "gemm_fusion_dot.1": "998ae321b50e786c122c49167d6b6b51",
}


def _keys():
  path = os.path.join(
    _TESTDATA, "seed_mlp_a100_bfloat16.config_assigner_input.hlo.txt"
  )
  with open(path, encoding="utf-8") as f:
    return gemm_fusion_keys(f.read())


class DeviceKeyTest(absltest.TestCase):
  def test_a100_device_string_is_xlas(self):
    self.assertEqual(
      device_string(get_target("a100").config_text), _A100_DEVICE
    )

  def test_a100_fingerprint_is_xlas(self):
    fingerprint = device_fingerprint(get_target("a100").config_text)
    self.assertEqual(fingerprint, "4882ef514d13f9de")

  def test_other_targets_differ(self):
    prints = {
      name: device_fingerprint(get_target(name).config_text)
      for name in ("a100", "h100", "h200", "t4")
    }
    self.assertLen(set(prints.values()), 4)


class FusionKeyTest(absltest.TestCase):
  def test_gemm_fusions_and_their_keys(self):
    keys = _keys()
    self.assertEqual(
      [k.name for k in keys],
      ["gemm_fusion_dot", "gemm_fusion_dot.1", "gemm_fusion_dot.2"],
    )
    got = {k.name: k.hlo_fingerprint for k in keys}
    self.assertEqual(got["gemm_fusion_dot"], _HIT["gemm_fusion_dot"])
    self.assertEqual(got["gemm_fusion_dot.1"], _HIT["gemm_fusion_dot.1"])
    # Same computation and shapes: XLA found 5 unique instructions among
    # the module's 7 fusions, these two being one.
    self.assertEqual(got["gemm_fusion_dot.2"], got["gemm_fusion_dot.1"])

  def test_a_changed_shape_changes_the_key(self):
    path = os.path.join(
      _TESTDATA, "seed_mlp_a100_bfloat16.config_assigner_input.hlo.txt"
    )
    with open(path, encoding="utf-8") as f:
      text = f.read().replace("f32[4096,", "f32[4095,")
    self.assertNotEqual(
      gemm_fusion_keys(text)[0].hlo_fingerprint, _HIT["gemm_fusion_dot"]
    )


class ResultsFileTest(absltest.TestCase):
  def test_codegen_versions_from_xlas_log(self):
    versions = parse_codegen_versions(_XLA_LOG)
    self.assertEqual(versions.codegen_version, "070b7c91256c4093")
    self.assertEqual(dict(versions.per_backend)["CUBLASLT_FISSION"], "12.8.0")
    self.assertIsNone(parse_codegen_versions("nothing here"))

  def test_textproto_entries(self):
    keys = {k.name: k for k in _keys()}
    text = results_textproto(
      "4882ef514d13f9de",
      parse_codegen_versions(_XLA_LOG),
      [
        AutotuneChoice(
          keys["gemm_fusion_dot"], "CUBLASLT_FISSION", CUBLAS_CONFIG
        ),
        AutotuneChoice(
          keys["gemm_fusion_dot.1"], "TRITON", triton_config(64, 32, 32, 2, 4)
        ),
      ],
    )
    self.assertRegex(text, r"\A# hloprobe autotune results; jaxlib \S+\n")
    self.assertIn('device_scope: "4882ef514d13f9de"', text)
    self.assertEqual(text.count("entries {"), 2)
    self.assertIn(f'hlo_fingerprint: "{_HIT["gemm_fusion_dot"]}"', text)
    self.assertIn('optimal_backend_version: "12.8.0"', text)
    self.assertIn("block_m: 64 block_n: 32 block_k: 32 num_stages: 2", text)

  def test_fusions_without_an_entry_are_named(self):
    keys = _keys()
    text = results_textproto(
      "4882ef514d13f9de",
      parse_codegen_versions(_XLA_LOG),
      [AutotuneChoice(keys[0], "CUBLASLT_FISSION", CUBLAS_CONFIG)],
    )
    self.assertEqual(
      entry_notes(keys, text, "4882ef514d13f9de"),
      (
        ("gemm_fusion_dot", "CUBLASLT_FISSION: gemm { algorithm: -1 }"),
        ("gemm_fusion_dot.1", MISSING_ENTRY),
        ("gemm_fusion_dot.2", MISSING_ENTRY),
      ),
    )
    # Another device's entry is not this target's.
    self.assertEqual(
      entry_notes(keys[:1], text, "0123456789abcdef"),
      (("gemm_fusion_dot", MISSING_ENTRY),),
    )

  def test_unknown_backend_is_one_line(self):
    key = _keys()[0]
    with self.assertRaisesRegex(TargetError, "backend 'NOPE' is not one of"):
      results_textproto(
        "4882ef514d13f9de",
        parse_codegen_versions(_XLA_LOG),
        [AutotuneChoice(key, "NOPE", CUBLAS_CONFIG)],
      )


class TritonPinTest(absltest.TestCase):
  def test_every_triton_gemm_of_every_n_one_entry_per_key(self):
    # The fixture's three __triton_gemm fusions (read by hand), two of one
    # key (FusionKeyTest), at n = 2 and 8 with the same module: four
    # entries would repeat; the file holds the two keys once each.
    path = os.path.join(
      _TESTDATA, "seed_mlp_a100_bfloat16.config_assigner_input.hlo.txt"
    )
    with open(path, encoding="utf-8") as f:
      dumps = [("m.before.txt", f.read()), ("m.after_config-assigner.txt", "")]
    compiled = {
      8: types.SimpleNamespace(pass_dumps=dumps, xla_log=""),
      2: types.SimpleNamespace(pass_dumps=dumps, xla_log=_XLA_LOG),
    }
    pin = triton_pin(compiled, get_target("a100").config_text, 16, 16, 64, 1, 2)
    names = ["gemm_fusion_dot", "gemm_fusion_dot.1", "gemm_fusion_dot.2"]
    self.assertEqual(
      [(n, k.name) for n, k in pin.fusions],
      [(2, name) for name in names] + [(8, name) for name in names],
    )
    self.assertEqual(pin.text.count("entries {"), 2)
    self.assertIn('device_scope: "4882ef514d13f9de"', pin.text)
    self.assertIn(f'hlo_fingerprint: "{_HIT["gemm_fusion_dot.1"]}"', pin.text)
    self.assertIn("block_m: 16 block_n: 16 block_k: 64 num_stages: 1", pin.text)

  def test_no_codegen_versions_is_one_line(self):
    with self.assertRaisesRegex(TargetError, "XLA logged no codegen versions"):
      triton_pin(
        {2: types.SimpleNamespace(pass_dumps=[], xla_log="")},
        get_target("a100").config_text,
        16,
        16,
        64,
        1,
        2,
      )


class FileShapesTest(absltest.TestCase):
  def test_an_entry_first_in_the_file_is_read(self):
    # A file of entries alone (no comment, no device_scope line before
    # them): the first entry counts as the others do.
    keys = _keys()
    text = results_textproto(
      "4882ef514d13f9de",
      parse_codegen_versions(_XLA_LOG),
      [AutotuneChoice(keys[0], "CUBLASLT_FISSION", CUBLAS_CONFIG)],
    )
    bare = text[text.index("entries {") :]
    self.assertEqual(
      entry_notes(keys[:1], bare, "4882ef514d13f9de"),
      (("gemm_fusion_dot", "CUBLASLT_FISSION: gemm { algorithm: -1 }"),),
    )


def _scan(name: str) -> str:
  """A recorded module of a jax.lax.scan of x @ w[i] (tanh after) for the
  a100 under bfloat16 (testdata/autotune/README.md)."""
  with open(os.path.join(_TESTDATA, name), encoding="utf-8") as f:
    return f.read()


_AT_256 = "scan_a100_bfloat16_n256.config_assigner_input.hlo.txt"


class WhileBodyFusionTest(absltest.TestCase):
  def test_a_site_in_a_while_body_names_its_gemm_fusion(self):
    # The HLO, read by hand: the scan's dot is %gemm_fusion_dot inside the
    # while body (region_0); the results file holds no entry, so XLA uses
    # its default config for it (MISSING_ENTRY).
    from hloprobe.compile.autotune_replay import LoadedResults
    from hloprobe.engine.compiled import _autotuned_sites
    from hloprobe.ir import parse_stablehlo_dots

    before = _scan("scan_a100_bfloat16_n64.config_assigner_input.hlo.txt")
    sites = parse_stablehlo_dots(_scan("scan_a100_bfloat16_n64.stablehlo.mlir"))
    dumps = [("m.before.txt", before), ("m.after_config-assigner.txt", "")]
    loaded = LoadedResults(
      "/r/a100.textproto",
      'device_scope: "4882ef514d13f9de"\n',
      "4882ef514d13f9de",
      "NVIDIA A100-SXM4-40GB",
    )
    self.assertEqual(
      [k.name for k in gemm_fusion_keys(before)], ["gemm_fusion_dot"]
    )
    self.assertEqual(
      _autotuned_sites(dumps, sites, loaded),
      ({0: f"{MISSING_ENTRY} (a100.textproto: XLA heuristic)"}, None),
    )
    # At n = 256 the keys cannot be read (below): the why comes back for
    # the compile's notes, not a bare None (review finding 17).
    at_256 = [
      ("m.before.txt", _scan(_AT_256)),
      ("m.after_config-assigner.txt", ""),
    ]
    per_site, why = _autotuned_sites(at_256, sites, loaded)
    self.assertIsNone(per_site)
    self.assertRegex(why, r"operand %arg_tuple\.1#1 ")

  def test_a_tuple_elements_operand_is_refused_not_guessed(self):
    # At n = 256 the while body's gemm fusion reads %arg_tuple.1#1, an
    # element of the body's tuple parameter: its key is not computed (a
    # KeyError failed the config before).
    before = _scan(_AT_256)
    with self.assertRaisesRegex(ValueError, r"operand %arg_tuple\.1#1 "):
      gemm_fusion_keys(before)


class AutotunedTargetTest(absltest.TestCase):
  _TEXT = 'device_scope: "4882ef514d13f9de"\n'

  def test_matching_device_loads_the_file(self):
    target = autotuned_target(get_target("a100"), "r.textproto", self._TEXT)
    self.assertEqual(
      target.compiler_options["xla_gpu_load_autotune_results_from"],
      "r.textproto",
    )

  def test_other_device_is_refused_in_one_line(self):
    with self.assertRaises(TargetError) as e:
      autotuned_target(get_target("h100"), "r.textproto", self._TEXT)
    message = str(e.exception)
    self.assertNotIn("\n", message)
    self.assertIn("recorded for device 4882ef514d13f9de", message)
    self.assertIn("target 'h100'", message)

  def test_attached_or_cpu_target_is_refused(self):
    with self.assertRaisesRegex(TargetError, "not a compile-only GPU target"):
      autotuned_target(get_target("cpu"), "r.textproto", self._TEXT)


class AutotuneExperimentTest(absltest.TestCase):
  def _file(self, name: str, text: str) -> str:
    return self.create_tempfile(name, content=text).full_path

  def test_an_experiment_of_its_own_loading_the_file(self):
    path = self._file("rec.textproto", 'device_scope: "4882ef514d13f9de"\n')
    e = autotune_experiment(path, [get_target("cpu"), get_target("a100")])
    self.assertEqual(e.name, "autotuned-rec")
    self.assertEqual(
      e.xla_flags, (f"--xla_gpu_load_autotune_results_from={path}",)
    )
    self.assertIn("(for a100)", e.description)

  def test_no_matching_target_is_one_line(self):
    path = self._file("rec.textproto", 'device_scope: "4882ef514d13f9de"\n')
    with self.assertRaises(TargetError) as e:
      autotune_experiment(path, [get_target("h100"), get_target("t4")])
    self.assertNotIn("\n", str(e.exception))
    self.assertRegex(str(e.exception), r"no compile-only target .*\(h100 ")

  def test_another_jaxlibs_results_are_refused(self):
    text = results_textproto(
      "4882ef514d13f9de", parse_codegen_versions(_XLA_LOG), [], "0.11.2"
    )
    path = self._file("old.textproto", text)
    with self.assertRaisesRegex(
      TargetError, r"written for jaxlib 0\.11\.2, this is jaxlib "
    ):
      autotune_experiment(path, [get_target("a100")])

  def test_another_jaxlib_is_refused_below_a_first_line(self):
    # The comment is hloprobe's mark of the release, wherever it stands: a
    # blank line (or another comment) before it does not turn it off.
    text = "\n# edited\n" + results_textproto(
      "4882ef514d13f9de", parse_codegen_versions(_XLA_LOG), [], "0.11.2"
    )
    path = self._file("old.textproto", text)
    with self.assertRaisesRegex(TargetError, r"written for jaxlib 0\.11\.2"):
      autotune_experiment(path, [get_target("a100")])

  def test_a_byte_order_mark_is_refused_in_one_line(self):
    # XLA's text parser fails every compile on it (jaxlib 0.12.0.1:
    # "Failed to parse autotune results string"); refused up front.
    path = self._file(
      "bom.textproto", '\ufeffdevice_scope: "4882ef514d13f9de"\n'
    )
    with self.assertRaises(TargetError) as e:
      autotune_experiment(path, [get_target("a100")])
    self.assertNotIn("\n", str(e.exception))
    self.assertIn("byte order mark", str(e.exception))

  def test_a_path_with_whitespace_is_refused_in_one_line(self):
    # XLA_FLAGS is split at whitespace: jaxlib 0.12.0.1 failed every
    # compile with "Autotune results file does not exist: .../my".
    folder = self.create_tempdir("my dir").full_path
    path = os.path.join(folder, "a100.textproto")
    with open(path, "w", encoding="utf-8") as f:
      f.write('device_scope: "4882ef514d13f9de"\n')
    with self.assertRaises(TargetError) as e:
      autotune_experiment(path, [get_target("a100")])
    self.assertNotIn("\n", str(e.exception))
    self.assertIn("the path holds whitespace", str(e.exception))

  def test_an_xla_autotune_results_file_is_refused(self):
    # xla/autotune_results.proto's text format, as older XLAs dump it.
    path = self._file(
      "old.textproto",
      'version: 3\nresults {\n  device: "CUDA: 8.0, Cores: 108"\n'
      '  hlo: "(f32[2,2]{1,0}) fusion(...)"\n}\n'
      'device_scope: "4882ef514d13f9de"\n',
    )
    with self.assertRaises(TargetError) as e:
      autotune_experiment(path, [get_target("a100")])
    self.assertNotIn("\n", str(e.exception))
    self.assertIn("an xla.AutotuneResults file", str(e.exception))

  def test_another_triton_commit_is_refused(self):
    versions = parse_codegen_versions(
      _XLA_LOG.replace("b575c0c38d428a609e25487db64051a5fa7bfab8", "f" * 40)
    )
    key = _keys()[1]
    text = results_textproto(
      "4882ef514d13f9de",
      versions,
      [AutotuneChoice(key, "TRITON", triton_config(64, 32, 32))],
    )
    path = self._file("other.textproto", text)
    with self.assertRaisesRegex(
      TargetError, f"TRITON codegen version {'f' * 40} is not this jaxlib"
    ):
      autotune_experiment(path, [get_target("a100")])

  def test_a_fifo_is_refused_not_read(self):
    # Issue 41 item 3: --autotune_results, and a results file named in
    # XLA_FLAGS (`loaded_results`), are read only as regular files.
    path = os.path.join(self.create_tempdir().full_path, "a100.textproto")
    os.mkfifo(path)
    with self.assertRaises(TargetError) as e:
      autotune_experiment(path, [get_target("a100")])
    self.assertNotIn("\n", str(e.exception))
    self.assertIn("a FIFO, not a regular file", str(e.exception))
    flags = f"--xla_gpu_load_autotune_results_from={path}"
    self.assertIsNone(loaded_results(flags, get_target("a100")))

  def test_binary_results_are_refused(self):
    path = self._file("rec.pb", "")
    with self.assertRaisesRegex(TargetError, "text-format results only"):
      autotune_experiment(path, [get_target("a100")])


# What each release's XLA reads (checked in its CUDA plugin, whose
# embedded descriptors name the messages): jaxlib 0.12.0.1 keys an
# xla.autotuner.AutotuneCache (xla/autotune_cache.proto; config_assigner
# pass), jaxlib 0.10.2 has no such message nor pass.
def _reads_autotune_cache() -> bool:
  return testutil.jaxlib_at_least("0.12.0.1")


def _sweep_error(test, path: str, targets: str) -> str:
  """`hloprobe sweep --autotune_results=PATH`'s one line (exit 2, before
  any compile)."""
  proc = testutil.run_hloprobe_here(
    "sweep", f"--targets={targets}", "--batch_sizes=4096",
    f"--autotune_results={path}",
  )  # fmt: skip
  test.assertEqual(proc.returncode, 2, proc.stderr)
  lines = proc.stderr.strip().splitlines()
  test.assertLen(lines, 1, proc.stderr)
  test.assertTrue(lines[0].startswith("hloprobe: error: "), lines[0])
  return lines[0]


@pytest.mark.release_rules
class ReleaseTest(absltest.TestCase):
  """Results of another release refused in one line, under either jaxlib
  (`make test-old` reruns these under 0.10.2)."""

  def _file(self, jaxlib: str) -> str:
    text = results_textproto(
      "4882ef514d13f9de", parse_codegen_versions(_XLA_LOG), [], jaxlib
    )
    return self.create_tempfile("rec.textproto", content=text).full_path

  def test_this_jaxlibs_own_results(self):
    path = self._file(installed_jaxlib())
    if _reads_autotune_cache():
      e = autotune_experiment(path, [get_target("a100")])
      self.assertEqual(e.name, "autotuned-rec")
      return
    with self.assertRaises(TargetError) as e:
      autotune_experiment(path, [get_target("a100")])
    self.assertIn("has no xla.autotuner.AutotuneCache", str(e.exception))

  def test_sweep_refuses_another_releases_results_in_one_line(self):
    line = _sweep_error(self, self._file("0.11.2"), "a100")
    if _reads_autotune_cache():
      self.assertIn("written for jaxlib 0.11.2, this is jaxlib", line)
    else:
      self.assertIn("has no xla.autotuner.AutotuneCache", line)


class DeviceMismatchTest(absltest.TestCase):
  def test_sweep_with_another_devices_results_is_one_line(self):
    path = self.create_tempfile(
      "h100.textproto", content='device_scope: "0123456789abcdef"\n'
    ).full_path
    line = _sweep_error(self, path, "a100,h100")
    self.assertIn("recorded for device 0123456789abcdef", line)
    self.assertIn("a100 4882ef514d13f9de", line)


class SelectionTest(absltest.TestCase):
  def test_loaded_results_of_the_targets_device_are_named(self):
    path = self.create_tempfile(
      "rec.textproto", content='device_scope: "4882ef514d13f9de"\n'
    ).full_path
    flags = f"--xla_dump_to=/x --xla_gpu_load_autotune_results_from={path}"
    self.assertEqual(
      loaded_results(flags, get_target("a100")).selection,
      "autotune results rec.textproto (autotuned on NVIDIA A100-SXM4-40GB) "
      "where they hold the fusion, else XLA heuristic",
    )
    self.assertIsNone(loaded_results(flags, get_target("h100")))
    self.assertIsNone(loaded_results(flags, get_target("cpu")))
    self.assertIsNone(loaded_results("", get_target("a100")))


class GpuCheckRecordTest(absltest.TestCase):
  """The recording half runs only on a GPU; its file naming is checked here."""

  def test_dump_flag_names_a_text_file_beside_the_check(self):
    from hloprobe.versions.gpu_check import autotune_record_flags

    word, path = autotune_record_flags("out", "NVIDIA H200")
    self.assertEqual(
      path, os.path.abspath("out/nvidia_h200.autotune.textproto")
    )
    self.assertEqual(word, f"--xla_gpu_dump_autotune_results_to={path}")

  def test_results_are_headed_by_the_jaxlib_that_recorded_them(self):
    from hloprobe.versions.gpu_check import stamp_results

    path = self.create_tempfile(
      "gpu.textproto", content='device_scope: "4882ef514d13f9de"\n'
    ).full_path
    self.assertTrue(stamp_results(path, "0.11.2"))
    self.assertTrue(stamp_results(path, "0.11.2"))  # once, not twice
    with open(path, encoding="utf-8") as f:
      self.assertEqual(
        f.read(),
        "# hloprobe autotune results; jaxlib 0.11.2\n"
        'device_scope: "4882ef514d13f9de"\n',
      )
    # Replayed under another jaxlib: refused, the release named.
    if installed_jaxlib() != "0.11.2" and testutil.jaxlib_at_least("0.12.0.1"):
      with self.assertRaisesRegex(TargetError, "written for jaxlib 0.11.2"):
        autotune_experiment(path, [get_target("a100")])
    self.assertFalse(stamp_results(path + ".none", "0.11.2"))

  def test_what_was_not_recorded_is_one_line(self):
    from hloprobe.versions.gpu_check import recording_note

    none = {"target_config_file": None, "autotune_results_file": None}
    cpu = recording_note("cpu", none)
    self.assertIn("--device_target=cpu is not a GPU", cpu)
    self.assertIn(
      "autotune results (XLA dumped none)", recording_note("gpu", none)
    )
    both = {"target_config_file": "a", "autotune_results_file": "b"}
    self.assertIsNone(recording_note("gpu", both))


if __name__ == "__main__":
  absltest.main()
