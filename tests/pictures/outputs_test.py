"""The pictures: the row-0 error plot, the HTML report, the Model Explorer
overlay, the first-screen table and the progress line.

One small sweep (the seed at n = 1, 2 on cpu and a100, bfloat16 and
float32, passes named) is shared by every test. Expected facts come from
outside hloprobe: the seed MLP [2, 48, 48, 48, 1] has four matmuls; the CPU
runs, a100 is compile-only; XLA's dot strength reduction
(algebraic_simplifier / DotStrengthReduction) turns the n = 1 matrix-vector
dots into multiply+reduce, so the fates change between n = 1 and n = 2;
the PNG header layout is the PNG specification's (signature, IHDR width and
height as big-endian uint32 at bytes 16-24). Tests of an optional extra skip
when it is not installed.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import html.parser
import importlib.util
import json
import os
import re
import socket
import struct
import subprocess
import sys
import time

import pytest
import testutil
from absl.testing import absltest
from testutil import ROOT, record_cache, run_hloprobe_here

from hloprobe import engine, records
from hloprobe.commands import common
from hloprobe.compile import cases, targets
from hloprobe.errors import InvalidArgumentError
from hloprobe.report import explain, tables

# Compiles with XLA (`make test-fast` skips it).
pytestmark = pytest.mark.compiles

_HAVE_PLOT = importlib.util.find_spec("matplotlib") is not None
_HAVE_EXPLORER = importlib.util.find_spec("model_explorer") is not None
_NO_PLOT = "matplotlib not installed (the `plot` extra; make installs it)"
_NO_EXPLORER = (
  "ai-edge-model-explorer not installed (the `explorer` extra; make "
  "installs it)"
)
_TARGETS = ("cpu", "a100")
_SEED_DOTS = 4  # MLP [2, 48, 48, 48, 1]: four layers, four matmuls

RESULTS: list = []
EXPLANATIONS: list = []
PROGRESS: list = []


_WORKERS = contextlib.ExitStack()


def tearDownModule():  # pytest calls it (not unittest's module cleanups)
  _WORKERS.close()


def setUpModule():
  # The module's sweep and in-process commands share warm workers.
  _WORKERS.enter_context(testutil.shared_workers())
  # Through the test run's record cache: explain's sweep of these sizes
  # and targets (tests/report/explain_answer_test.py, bfloat16) makes the
  # same records.
  spec = engine.SweepSpec(
    cases=("seed_mlp",),
    batch_sizes=(1, 2),
    precisions=("bfloat16", "float32"),
    targets=_TARGETS,
    explain_passes=True,
    cache_dir=record_cache(),
  )
  RESULTS[:] = engine.run_sweep(spec, PROGRESS.append)
  EXPLANATIONS[:] = explain.explain_results(RESULTS, [cases.seed_mlp])


def _config(target: str, n: int, precision: str):
  (r,) = [
    r
    for r in RESULTS
    if (r.config.target.name, r.config.n, r.config.precision)
    == (target, n, precision)
  ]
  return r


def _png_size(png: bytes) -> tuple[int, int]:
  """(width, height) from a PNG's IHDR chunk."""
  if png[:8] != b"\x89PNG\r\n\x1a\n" or png[12:16] != b"IHDR":
    raise AssertionError(f"not a PNG: {png[:16]!r}")
  return struct.unpack(">II", png[16:24])


class ProgressTest(absltest.TestCase):
  def test_sweep_reports_each_config_then_done(self):
    self.assertEqual([p.done for p in PROGRESS], list(range(9)))
    self.assertEqual({p.total for p in PROGRESS}, {8})
    self.assertEqual(PROGRESS[0].current, "cpu seed_mlp n=1 bfloat16")
    self.assertEqual(PROGRESS[-1].current, "")

  def test_line_only_on_a_terminal(self):
    class Stream:
      def __init__(self, tty):
        self.tty, self.text = tty, ""

      def isatty(self):
        return self.tty

      def write(self, text):
        self.text += text

      def flush(self):
        pass

    self.assertIsNone(common.progress_printer(Stream(False)))
    tty = Stream(True)
    show = common.progress_printer(tty)
    for p in PROGRESS[:2]:
      show(p)
    # tqdm's bar (tests/engine/engine_progress_test.py: its ETA on a pty).
    self.assertRegex(
      tty.text, r"\r\[1/8\] cpu seed_mlp n=2 bfloat16 \|.*\| \d\d:\d\d<\S+$"
    )
    show(PROGRESS[-1])
    self.assertRegex(tty.text, r"\r *\r?$")  # erased


class FirstScreenTest(absltest.TestCase):
  def test_default_table_fits_120_columns_and_tells_the_story(self):
    text = tables.render(RESULTS, "table", {})
    self.assertLessEqual(max(map(len, text.splitlines())), 120)
    for word in ("case", "target", "precision", "fates", "verdict", "pred"):
      self.assertIn(word, text.split("\n--")[0])
    self.assertNotIn("compile s", text)
    rows = [l for l in text.splitlines() if l.startswith("seed_mlp")]
    self.assertLen(rows, len(RESULTS))
    # Wrapped or not, the a100 bfloat16 n = 2 row names TF32 at three sites.
    self.assertIn("TF32_TF32_F32 x3", text)

  def test_failed_configs_get_a_status_column_and_errors_below(self):
    error = "XlaRuntimeError: " + "no kernel for this shape " * 6
    a100 = targets.get_target("a100")
    failed = [
      records.ConfigResult(
        records.Config("seed_mlp", a100, n, "bfloat16"),
        failure=records.Failure("compile", error),
      )
      for n in (1, 2)
    ]
    table, below = tables.render(RESULTS + failed, "table", {}).split(
      "\n\nfailed:\n"
    )
    self.assertIn("status", table.split("\n--")[0])
    rows = [l for l in table.splitlines() if l.startswith("seed_mlp")]
    self.assertLen(rows, len(RESULTS) + 2)
    self.assertTrue(rows[-1].rstrip().endswith("FAILED (compile)"))
    self.assertTrue(rows[0].rstrip().endswith("ok"))
    self.assertRegex(
      below, r"^  a100 seed_mlp n=1 bfloat16: compile failed: XlaRuntimeError"
    )
    self.assertEqual(
      " ".join(below.split()).count("no kernel for this shape"), 12
    )
    self.assertLessEqual(max(map(len, below.splitlines())), 120)

  def test_wide_and_columns(self):
    wide = tables.render(RESULTS, "table", {}, wide=True)
    self.assertIn("compile s", wide)
    self.assertLen(wide.splitlines(), len(RESULTS) + 2)
    picked = tables.render(RESULTS, "table", {}, ["n", "target", "verdict"])
    self.assertRegex(picked.splitlines()[0], r"^n +target +verdict *$")
    markdown = tables.render(RESULTS, "markdown", {})
    self.assertIn("| compile s ", markdown)
    with self.assertRaisesRegex(
      InvalidArgumentError, "unknown --columns speed"
    ):
      tables.render(RESULTS, "table", {}, ["n", "speed"])


@absltest.skipUnless(_HAVE_PLOT, _NO_PLOT)
class PlotTest(absltest.TestCase):
  def _lines(self, ax) -> list[str]:
    return sorted(line.get_gid() for line in ax.get_lines())

  def test_lines_per_panel(self):
    from hloprobe.pictures import plot

    fig = plot.row0_figure(RESULTS, EXPLANATIONS)
    cpu, a100 = fig.axes  # a panel per target, in sweep order
    self.assertIn("cpu", cpu.get_title())
    self.assertIn("a100", a100.get_title())
    # The CPU ran: observed and predicted per precision. a100 is compile
    # only: predicted alone. Both change fates at n = 2.
    self.assertEqual(
      self._lines(cpu),
      [
        "fate-change:2",
        "observed:bfloat16",
        "observed:float32",
        "predicted:bfloat16",
        "predicted:float32",
      ],
    )
    self.assertEqual(
      self._lines(a100),
      ["fate-change:2", "predicted:bfloat16", "predicted:float32"],
    )
    for ax in fig.axes:
      self.assertEqual(ax.get_yscale(), "log")
      self.assertIn("noise-floor", [c.get_gid() for c in ax.collections])
      self.assertIn("batch size", ax.get_xlabel())
    observed = [l for l in cpu.get_lines() if l.get_gid().startswith("obs")]
    self.assertTrue(all(l.get_linestyle() == "-" for l in observed))
    self.assertEqual(list(observed[0].get_xdata()), [1, 2])
    self.assertTrue(fig.legends)

  def test_png_size(self):
    from hloprobe.pictures import plot

    # Two panels of 6.4 x 4.4 inches side by side and 1 inch of legend, at
    # 100 dots per inch.
    self.assertEqual(
      _png_size(plot.row0_png(RESULTS, EXPLANATIONS)), (1280, 540)
    )

  def test_experiments_side_by_side(self):
    from hloprobe.pictures import plot

    other = [
      dataclasses.replace(
        r, config=dataclasses.replace(r.config, experiment="nodsr")
      )
      for r in RESULTS
    ]
    fig = plot.row0_figure(RESULTS + other, EXPLANATIONS)
    titles = [ax.get_title() for ax in fig.axes]
    self.assertLen(titles, 4)  # rows: cpu, a100; columns: baseline, nodsr
    self.assertIn("nodsr", titles[1])
    self.assertNotIn("nodsr", titles[0])
    self.assertEqual(
      _png_size(plot.row0_png(RESULTS + other, EXPLANATIONS)), (1280, 980)
    )


class WroteLineTest(absltest.TestCase):
  def test_one_file_is_singular(self):
    from hloprobe.pictures import outputs

    self.assertEqual(
      outputs.wrote_line(["out/results.json"], "out"),
      "wrote 1 file (results.json) under out",
    )
    self.assertEqual(
      outputs.wrote_line(["out/a.mlir", "out/results.json"], "out"),
      "wrote 2 files (results.json) under out",
    )


class _Page(html.parser.HTMLParser):
  """Rows of each table and the images of a page."""

  def __init__(self):
    super().__init__()
    self.tables, self.images, self._cell = [], [], None

  def handle_starttag(self, tag, attrs):
    if tag == "table":
      self.tables.append([])
    elif tag == "tr":
      self.tables[-1].append([])
    elif tag in ("td", "th"):
      self._cell = ""
    elif tag == "img":
      self.images.append(dict(attrs)["src"])

  def handle_data(self, data):
    if self._cell is not None:
      self._cell += data

  def handle_endtag(self, tag):
    if tag in ("td", "th"):
      self.tables[-1][-1].append(self._cell)
      self._cell = None


class HtmlTest(absltest.TestCase):
  def test_page_has_table_rows_and_embedded_plot(self):
    from hloprobe.pictures import outputs

    text = outputs.html_page(RESULTS, EXPLANATIONS, {"jax": "0.10.2"})
    page = _Page()
    page.feed(text)
    page.close()
    header, *rows = page.tables[0]
    self.assertLen(rows, len(RESULTS))
    col = {h: i for i, h in enumerate(header)}
    self.assertEqual(
      [(r[col["target"]], r[col["n"]], r[col["precision"]]) for r in rows],
      [
        (r.config.target.name, str(r.config.n), r.config.precision)
        for r in RESULTS
      ],
    )
    sites = page.tables[1][1:]
    self.assertLen(sites, _SEED_DOTS * len(RESULTS))
    self.assertIn("What this cannot settle without a real device", text)
    if not _HAVE_PLOT:
      self.assertIn("No plot: ", text)
      return
    (src,) = page.images
    self.assertTrue(src.startswith("data:image/png;base64,"))
    png = base64.b64decode(src.split(",", 1)[1])
    self.assertEqual(_png_size(png), (1280, 540))


@absltest.skipUnless(_HAVE_EXPLORER, _NO_EXPLORER)
class ModelExplorerTest(absltest.TestCase):
  def test_every_seed_a100_n2_site_has_node_data_on_an_adapter_node(self):
    from hloprobe.pictures import model_explorer

    out = self.create_tempdir().full_path
    r = _config("a100", 2, "bfloat16")
    model_explorer.write_overlay([r], out)
    (entry,) = model_explorer.load_index(out)
    self.assertEqual(entry["unmapped"], [])
    # The adapter, run again here on the written file, is the authority.
    nodes = model_explorer.adapter_dot_nodes(os.path.join(out, entry["model"]))
    adapter_ids = {(g, str(n["id"])) for g, ns in nodes.items() for n in ns}
    self.assertLen(adapter_ids, _SEED_DOTS)
    sites = {int(i): (s["graph"], s["node"]) for i, s in entry["sites"].items()}
    self.assertEqual(sorted(sites), list(range(_SEED_DOTS)))
    self.assertEqual(set(sites.values()), adapter_ids)
    for name, path in entry["node_data"].items():
      with open(os.path.join(out, path)) as f:
        data = json.load(f)
      keyed = {(g, n) for g, d in data.items() for n in d["results"]}
      self.assertEqual(keyed, adapter_ids, name)
    with open(os.path.join(out, entry["node_data"]["fate"])) as f:
      fates = json.load(f)["main"]["results"]
    self.assertEqual(
      sorted(v["value"] for v in fates.values()),
      ["Triton gemm"] * 3 + ["multiply+reduce"],
    )

  def test_precision_is_compared_exactly(self):
    # HIGH is a substring of HIGHEST: a node at HIGHEST is not a HIGH site.
    from hloprobe.pictures import model_explorer

    site = dataclasses.replace(
      _config("a100", 2, "float32").compilation.fates[0].site,
      precision=("HIGH", "HIGH"),
    )
    dims = "x".join(map(str, site.result.dims))
    node = {
      "outputsMetadata": [
        {"attrs": [{"key": "tensor_shape", "value": f"tensor<{dims}xf32>"}]}
      ],
      "attrs": [{"key": "precision_config", "value": ""}],
    }
    for text, want in (
      ("[#stablehlo<precision HIGH>, #stablehlo<precision HIGH>]", True),
      ("[#stablehlo<precision HIGHEST>, #stablehlo<precision HIGHEST>]", False),
    ):
      node["attrs"][0]["value"] = text
      self.assertEqual(model_explorer._matches(site, node), want, text)

  def test_view_binds_to_localhost_only(self):
    from hloprobe.pictures import model_explorer

    out = self.create_tempdir().full_path
    model_explorer.write_overlay([_config("a100", 2, "float32")], out)
    with socket.socket() as s:
      s.bind(("127.0.0.1", 0))
      port = s.getsockname()[1]
    env = dict(os.environ, PYTHONPATH=ROOT)
    proc = subprocess.Popen(
      [
        sys.executable,
        "-m",
        "hloprobe",
        "view",
        out,
        f"--port={port}",
        "--nobrowser",
      ],
      env=env,
      stdout=subprocess.DEVNULL,
      stderr=subprocess.DEVNULL,
    )
    try:
      addresses = self._listening(proc.pid, port)
    finally:
      proc.terminate()
      proc.wait(timeout=30)
    self.assertEqual(addresses, {"127.0.0.1"})

  def test_view_picks_configs_by_the_sweep_flags_given(self):
    from hloprobe.pictures import model_explorer

    out = self.create_tempdir().full_path
    model_explorer.write_overlay([_config("a100", 2, "float32")], out)
    # The precision matches; each of the other flags does not.
    for flag in ("--targets=cpu,t4", "--batch_sizes=1,3"):
      # A view that ignored the flag would serve: the timeout ends it.
      proc = run_hloprobe_here(
        "view", out, flag, "--precisions=float32", "--nobrowser", timeout_s=120
      )
      self.assertEqual(proc.returncode, 2, proc.stderr)
      self.assertEqual(
        proc.stderr,
        f"hloprobe: error: no config in {out} matches the flags given\n",
      )

  def _listening(self, pid: int, port: int, timeout: float = 60) -> set[str]:
    import psutil

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
      found = {
        c.laddr.ip
        for c in psutil.Process(pid).net_connections(kind="tcp")
        if c.status == psutil.CONN_LISTEN and c.laddr.port == port
      }
      if found:
        return found
      time.sleep(0.2)
    raise AssertionError(f"nothing listened on port {port}")


class CommandLineTest(absltest.TestCase):
  def test_html_format_and_files(self):
    out = self.create_tempdir().full_path
    # In this process (stderr no terminal here either); a fresh process's
    # CLI run with --output_dir: tests/runtime/host_test.py.
    proc = run_hloprobe_here(
      "sweep",
      "--targets=cpu",
      "--batch_sizes=1",
      "--precisions=float32",
      "--format=html",
      f"--output_dir={out}",
      timeout_s=600,
    )
    self.assertEqual(proc.returncode, 0, proc.stderr)
    page = _Page()
    page.feed(proc.stdout)
    self.assertLen(page.tables[0], 2)  # header and the one config
    with open(os.path.join(out, "report.html")) as f:
      self.assertIn("<title>hloprobe: seed_mlp</title>", f.read())
    self.assertNotIn("\r", proc.stderr)  # not a terminal: no progress line
    self.assertRegex(
      proc.stderr.splitlines()[-1],
      rf"^wrote \d+ files \(.*\) under {re.escape(out)}$",
    )

  def test_view_usage_errors(self):
    empty = self.create_tempdir().full_path
    for args, message in (
      ([], r"`view` takes one folder"),
      ([empty], r"holds no Model Explorer overlay"),
    ):
      proc = run_hloprobe_here("view", *args)
      self.assertEqual(proc.returncode, 2, proc.stderr)
      self.assertRegex(proc.stderr, rf"^hloprobe: error: .*{message}.*\n$")
    proc = run_hloprobe_here("sweep", "--columns=n,speed")
    self.assertEqual(proc.returncode, 2, proc.stderr)
    self.assertIn("'speed': value should be one of <", proc.stderr)


if __name__ == "__main__":
  absltest.main()
