"""Row 0's error against batch size, one panel per target, as a PNG.

Needs matplotlib (the `plot` extra: `pip install -e '.[plot]'`), drawn with
its Agg backend (no display). One figure: a panel per target (per case and
target; with XLA_FLAGS experiments, the baseline and each experiment side by
side, one row per case and target). In each panel, for each precision,
|row 0 - float64 row 0| over the swept batch sizes: observed (where the
target ran) solid with markers, predicted (`predict`: each contraction site emulated
at its effective algorithm) dashed; the f32 noise floor as a grey band;
dotted vertical lines where a contraction site's fate changes (from `explain`'s
FateSpan records). The error axis is logarithmic; an error of exactly 0 has
no place on it and is left out, and the panel says so. Every panel shares
one error axis by default (`shared_y`), so a flat 1e-4 on the CPU does not
look as high as the A100's 0.6; `shared_y=False` gives each panel its own.
Each precision has its own colour, marker and dash pattern (filled markers
observed, hollow predicted), drawn widest first, so precisions whose lines
coincide (every precision on the CPU) all show.

Every drawn line carries a gid ("observed:<precision>",
"predicted:<precision>", "fate-change:<n>") so tests and other tools can
read the figure back without pixels.

Private in intent: use the package, `hloprobe.pictures`.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence

from hloprobe.errors import HloprobeError

__all__ = [
  "PANEL_DPI",
  "PANEL_SIZE_IN",
  "panel_keys",
  "row0_figure",
  "row0_png",
]

PANEL_SIZE_IN = (6.4, 4.4)  # width, height of one panel, inches
PANEL_DPI = 100
_LEGEND_IN = 1.0  # room under the panels for the shared legend, inches
# Per precision, in sweep order: a marker and a dash pattern (on, off
# points; None: solid) for the predicted line; observed lines are solid.
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "h")
_DASHES = ((6, 3), (2, 2), (8, 2, 2, 2), (4, 4), (1, 3), (10, 4), (3, 1, 1, 1))
_COLOURS = (
  "tab:blue",
  "tab:orange",
  "tab:green",
  "tab:red",
  "tab:purple",
  "tab:brown",
  "tab:pink",
  "tab:olive",
  "tab:cyan",
)


def _pyplot():
  """matplotlib's pyplot on the Agg backend, or a clear error."""
  try:
    import matplotlib
  except ImportError as e:
    raise HloprobeError(
      "--plot needs matplotlib: pip install 'hloprobe[plot]' (`make run` "
      "installs it)"
    ) from e
  matplotlib.use("Agg", force=True)
  import matplotlib.pyplot as plt

  return plt


def panel_keys(results: Sequence) -> tuple[list, list]:
  """The figure's grid: (row keys, column keys), each in sweep order.

  Without experiments a row per case and a column per target; with them a
  row per (case, target) and a column per experiment ("baseline" first).
  Keys are tuples; a panel holds the results whose (case, target,
  experiment) equals its row key + column key.
  """
  configs = [r.config for r in results]
  experiments = list(dict.fromkeys(c.experiment for c in configs))
  if len(experiments) > 1:
    rows = list(dict.fromkeys((c.case, c.target.name) for c in configs))
    return rows, [(e,) for e in experiments]
  rows = list(dict.fromkeys((c.case,) for c in configs))
  return rows, list(
    dict.fromkeys((c.target.name, c.experiment) for c in configs)
  )


def _panel_key(r) -> tuple[str, str, str]:
  """A result's (case, target, experiment), as `panel_keys` joins them."""
  return r.config.case, r.config.target.name, r.config.experiment


def _fate_changes(explanation) -> list[tuple[int, int, str]]:
  """(n before, n, words) where a contraction site's fate changes, all precisions.

  From `explain.TargetExplanation.spans`: consecutive FateSpans differ in
  some site's fate (or the pass that made it); the words name the sites
  whose fate words differ and what they became.
  """
  found: dict[int, tuple[int, int, str]] = {}
  for spans in (explanation.spans if explanation else {}).values():
    for before, after in zip(spans, spans[1:]):
      old, new = _site_fates(before), _site_fates(after)
      moved: dict[str, list[int]] = {}
      for site, fate in new.items():
        if old.get(site) != fate:
          moved.setdefault(fate, []).append(site)
      words = "; ".join(f"{_site_words(s)} {f}" for f, s in moved.items())
      n = after.batch_sizes[0]
      found.setdefault(n, (before.batch_sizes[-1], n, words or "fates change"))
  return sorted(found.values())


def _site_fates(span) -> dict[int, str]:
  """site index -> fate words in one FateSpan ("failed ..." for no sites)."""
  return {site: fate for sites, fate, _ in span.groups for site in sites}


def _site_words(sites) -> str:
  if not sites:
    return "all"
  return ("site " if len(sites) == 1 else "sites ") + ",".join(map(str, sites))


def _series(configs, precision: str):
  """(ns, observed, predicted, noise) of one precision, in sweep order."""
  rows = [r for r in configs if r.config.precision == precision]
  pred = [r.prediction for r in rows]
  seen = [r.execution and r.execution.stats for r in rows]
  return (
    [r.config.n for r in rows],
    [s.row0_abs if s else None for s in seen],
    [p.stats.row0_abs if p else None for p in pred],
    [p.noise.row0_abs if p else None for p in pred],
  )


def _positive(ns, values):
  """The (n, value) pairs a log axis can show: value known, finite, > 0."""
  pairs = [
    (n, v) for n, v in zip(ns, values) if v is not None and 0 < v < math.inf
  ]
  return [n for n, _ in pairs], [v for _, v in pairs]


def _styles(i: int, lw: float, ms: float) -> dict[str, dict]:
  """The i-th precision's observed and predicted line styles."""
  marker, dashes = _MARKERS[i % len(_MARKERS)], _DASHES[i % len(_DASHES)]
  mark = {"marker": marker, "lw": lw, "ms": ms}
  return {
    "observed": {"ls": "-", **mark},
    "predicted": {"ls": (0, dashes), "fillstyle": "none", "mew": 1.6, **mark},
  }


def _draw_panel(ax, configs, explanation, colours, ylim=None) -> None:
  """One panel: lines per precision, noise band, fate-change marks; the
  error axis' limits `ylim` (bottom, top), or the panel's own."""
  drawn, noise = [], {}
  hidden_zero = False
  for i, (precision, colour) in enumerate(colours.items()):
    ns, observed, predicted, floor = _series(configs, precision)
    # Equal errors (e.g. every precision on the CPU) draw on top of each
    # other: earlier precisions are wider, so each stays visible.
    lw, ms = max(3.2 - 1.0 * i, 1.2), max(10.0 - 2.5 * i, 4.0)
    styles = _styles(i, lw, ms)
    for kind, values in (("observed", observed), ("predicted", predicted)):
      xs, ys = _positive(ns, values)
      hidden_zero |= 0.0 in values
      if xs:
        ax.plot(xs, ys, color=colour, gid=f"{kind}:{precision}", **styles[kind])
        drawn += ys
    for n, v in zip(*_positive(ns, floor)):
      noise[n] = max(v, noise.get(n, 0.0))
  bottom = _limits(ax, configs, drawn + list(noise.values()), ylim)
  _draw_noise(ax, noise, bottom)
  for before, n, words in _fate_changes(explanation):
    x = math.sqrt(before * n) if ax.get_xscale() == "log" else (before + n) / 2
    ax.axvline(x, color="0.35", ls=":", lw=1.2, gid=f"fate-change:{n}")
    ax.annotate(
      f"n={n}: {words}",
      xy=(x, 0.98),
      xycoords=("data", "axes fraction"),
      xytext=(3, 0),
      textcoords="offset points",
      rotation=90,
      va="top",
      fontsize=7,
      color="0.2",
      bbox={"fc": "white", "ec": "none", "alpha": 0.8, "pad": 1},
    )
  if hidden_zero:
    ax.text(
      0.99,
      0.01,
      "error 0 (exact): not drawn on a log axis",
      transform=ax.transAxes,
      ha="right",
      va="bottom",
      fontsize=7,
    )


def _plotted(results) -> list[float]:
  """Every value a panel of `results` draws on its error axis."""
  values = []
  for precision in dict.fromkeys(r.config.precision for r in results):
    ns, *series = _series(results, precision)
    for s in series:
      values += _positive(ns, s)[1]
  return values


def _shared_ylim(results) -> tuple[float, float]:
  """One error axis for every panel: a decade below the smallest value
  drawn to a decade above the largest."""
  values = _plotted(results)
  low, high = (min(values), max(values)) if values else (1e-8, 1.0)
  return low / 10, high * 10


def _limits(ax, configs, values: list[float], ylim=None) -> float:
  """Sets the axes' scales and limits (the error axis' to `ylim` where
  given); returns the error axis' bottom."""
  ns = sorted({r.config.n for r in configs})
  ax.set_yscale("log")
  if ns[-1] / ns[0] > 32:
    ax.set_xscale("log", base=2)
    ax.set_xlim(ns[0] / 1.4, ns[-1] * 1.4)
  else:
    ax.set_xlim(ns[0] - 0.5, ns[-1] + 0.5)
  if len(ns) <= 16:
    ax.set_xticks(ns, [str(n) for n in ns])
  if ylim is None:
    low, high = (min(values), max(values)) if values else (1e-8, 1.0)
    ylim = (low / 10, high * 10)
  ax.set_ylim(*ylim)
  return ylim[0]


def _draw_noise(ax, noise: dict[int, float], bottom: float) -> None:
  """The f32 noise floor: a grey band from the axis' bottom up to it."""
  if not noise:
    return
  ns = sorted(noise)
  left, right = ax.get_xlim()
  xs = [left] + ns + [right]
  ys = [noise[ns[0]]] + [noise[n] for n in ns] + [noise[ns[-1]]]
  ax.fill_between(xs, bottom, ys, color="0.88", gid="noise-floor", zorder=0)


def _title(configs, explanation) -> str:
  first = configs[0].config
  runs = explanation is not None and not explanation.compile_only
  mode = "compiled and run" if runs else "compile only: predicted"
  exp = "" if first.experiment == "baseline" else f", {first.experiment}"
  return f"{first.case} on {first.target.name}{exp} ({mode})"


def _legend(fig, colours) -> None:
  from matplotlib.lines import Line2D
  from matplotlib.patches import Patch

  handles = [
    Line2D([], [], color=c, lw=3, marker=_MARKERS[i % len(_MARKERS)], label=p)
    for i, (p, c) in enumerate(colours.items())
  ] + [
    Line2D([], [], color="k", ls="-", marker="o", label="observed (ran)"),
    Line2D(
      [],
      [],
      color="k",
      ls="--",
      marker="o",
      fillstyle="none",
      label="predicted (contraction sites emulated at their effective algorithm)",
    ),
    Patch(
      color="0.85", label="f32 noise floor (all sites F32, 4 summation orders)"
    ),
    Line2D(
      [], [], color="0.35", ls=":", label="a contraction site's fate changes"
    ),
  ]
  fig.legend(
    handles=handles,
    loc="outside lower center",
    ncols=4,
    fontsize=8,
    frameon=False,
  )


def row0_figure(
  results: Sequence, explanations: Sequence = (), shared_y: bool = True
):
  """The figure (a `matplotlib.figure.Figure`, not shown).

  Args:
    results: a sweep's `records.ConfigResult`s.
    explanations: `explain.explain_results(results, ...)`'s records, for the
      fate-change marks and whether a target ran; without them no marks
      are drawn and every target counts as compile-only.
    shared_y: one error axis (the same limits) for every panel; False:
      each panel's own, from its values.

  Returns:
    A Figure of len(columns) x len(rows) panels (`panel_keys`), each
    PANEL_SIZE_IN inches at PANEL_DPI, plus _LEGEND_IN inches of legend.

  Raises:
    HloprobeError: matplotlib is not installed, or no results.
  """
  if not results:
    raise HloprobeError("nothing to plot: the sweep has no results")
  plt = _pyplot()
  rows, cols = panel_keys(results)
  width, height = PANEL_SIZE_IN
  fig, axes = plt.subplots(
    len(rows),
    len(cols),
    squeeze=False,
    layout="constrained",
    figsize=(width * len(cols), height * len(rows) + _LEGEND_IN),
    dpi=PANEL_DPI,
  )
  colours = {
    p: _COLOURS[i % len(_COLOURS)]
    for i, p in enumerate(dict.fromkeys(r.config.precision for r in results))
  }
  by_key = {(e.case, e.target, e.experiment): e for e in explanations}
  ylim = _shared_ylim(results) if shared_y else None
  for i, row in enumerate(rows):
    for j, col in enumerate(cols):
      ax = axes[i][j]
      key = row + col  # (case, target, experiment), see panel_keys
      configs = [r for r in results if _panel_key(r) == key]
      if not configs:
        ax.set_axis_off()
        continue
      _draw_panel(ax, configs, by_key.get(key), colours, ylim)
      _label(ax, _title(configs, by_key.get(key)))
  fig.suptitle("|row 0 − float64 row 0| against batch size, per precision")
  _legend(fig, colours)
  return fig


def _label(ax, title: str) -> None:
  ax.set_xlabel("batch size n (rows of the vmapped input)")
  ax.set_ylabel("|row 0 − float64 row 0| (output units)")
  ax.set_title(title, fontsize=10)
  ax.grid(True, which="major", alpha=0.3)


def row0_png(
  results: Sequence, explanations: Sequence = (), shared_y: bool = True
) -> bytes:
  """`row0_figure` as PNG bytes (size: see `row0_figure`)."""
  plt = _pyplot()
  fig = row0_figure(results, explanations, shared_y)
  try:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=PANEL_DPI)
    return buf.getvalue()
  finally:
    plt.close(fig)
