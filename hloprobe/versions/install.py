"""Making one venv: uv (`uv venv` + `uv pip install`) or `venv` + pip.

The installer half of `venvs` (see its docstring for why uv): the
commands, their environment, and one line on a failure. `build` writes
the marker it is given last, so a folder with it is complete.

Private in intent: use the package, `hloprobe.versions`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess

from hloprobe.errors import HloprobeError
from hloprobe.versions.children import Children

__all__ = [
  "INSTALLERS",
  "NO_MATCH_RE",
  "VenvError",
  "unreachable_index",
  "build",
  "last_line",
  "pip",
  "uv_binary",
]

NO_MATCH_RE = re.compile(r"No matching distribution found for (\S+)")
# uv's words for a requirement no wheel satisfies, e.g. "Because
# jaxlib==0.4.1 has no wheels with a matching Python ABI tag" or "Because
# there is no version of jaxlib==0.4.1".
_UV_NO_MATCH_RE = re.compile(
  r"Because (?:there is no version of )?(\S+) (?:has no wheels|and you)"
)
# An index that could not be reached: pip's (urllib3's) "NewConnectionError
# ... Failed to establish a new connection", "Max retries exceeded",
# "ProxyError", a name that does not resolve; uv's "Failed to fetch ...",
# "error sending request", "tcp connect error", "dns error". pip then says
# "No matching distribution" too (pip 25, uv 0.9, checked 2026-12-02).
_UNREACHABLE_RE = re.compile(
  r"NewConnectionError|Failed to establish a new connection|Max retries "
  r"exceeded|ProxyError|ConnectTimeoutError|Temporary failure in name "
  r"resolution|Name or service not known|Network is unreachable|Failed to "
  r"fetch|error sending request|tcp connect error|dns error"
)
# pip's index settings in the environment -> uv's names for them.
_PIP_TO_UV = {
  "PIP_INDEX_URL": "UV_INDEX_URL",
  "PIP_EXTRA_INDEX_URL": "UV_EXTRA_INDEX_URL",
  "PIP_FIND_LINKS": "UV_FIND_LINKS",
}
INSTALLERS = ("uv", "pip")


class VenvError(HloprobeError):
  """Raised when a version's virtualenv cannot be made or queried."""


def pip(
  python: str,
  *args: str,
  timeout: float,
  children: Children | None = None,
  extra_env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess:
  """Runs `python -m pip ARGS` (without PYTHONPATH, pip's version check
  off) and returns the finished process, whatever its exit status.

  Args:
    python: the interpreter whose pip runs.
    args: pip's arguments, e.g. ("install", "jax==0.10.2").
    timeout: seconds it may take.
    children: where the process is tracked (so an interrupt ends it);
      None: a `Children` of its own.
    extra_env: variables added to its environment.

  Raises:
    VenvError: pip ran past `timeout`.
  """
  env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
  env.update(extra_env or {})
  env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
  try:
    return (children or Children()).run(
      [python, "-m", "pip", *args], timeout=timeout, env=env
    )
  except subprocess.TimeoutExpired as e:
    raise VenvError(f"pip {args[0]} timed out after {timeout:.0f} s") from e


def last_line(text: str) -> str:
  """The last non-blank line of a tool's output, stripped ("no output")."""
  lines = [l for l in (text or "").strip().splitlines() if l.strip()]
  return lines[-1].strip() if lines else "no output"


def uv_binary() -> str | None:
  """The uv executable of the `uv` package, or None without it."""
  try:
    import uv
  except ImportError:
    return None
  try:
    return uv.find_uv_bin()
  except FileNotFoundError:
    return None


def _uv_env() -> dict[str, str]:
  """The environment uv runs in: hloprobe's PYTHONPATH dropped, pip's
  index settings under uv's names (where uv's own are not set)."""
  env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
  for pip_name, uv_name in _PIP_TO_UV.items():
    if pip_name in env and uv_name not in env:
      env[uv_name] = env[pip_name]
  return env


def _run(
  argv: list[str], timeout_s: float, children: Children | None, env=None
) -> subprocess.CompletedProcess:
  try:
    return (children or Children()).run(argv, timeout=timeout_s, env=env)
  except subprocess.TimeoutExpired as e:
    raise VenvError(
      f"{os.path.basename(argv[0])} {argv[1]} timed out after {timeout_s:.0f} s"
    ) from e


def unreachable_index(stderr: str) -> VenvError | None:
  """One line naming an unreachable package index, when the installer's
  `stderr` says it could not reach one; else None."""
  m = _UNREACHABLE_RE.search(stderr)
  if m is None:
    return None
  return VenvError(
    f"the package index could not be reached ({m.group()}; check the "
    "network, a proxy or PIP_INDEX_URL / UV_INDEX_URL); no version was "
    "looked up"
  )


def _install_failed(
  stderr: str, reqs: tuple[str, ...], py: str, tool: str
) -> VenvError:
  """One line on why an install failed: the requirement no wheel
  satisfies where the installer names one."""
  said = last_line(stderr)
  unreachable = unreachable_index(stderr)
  if unreachable is not None:  # not "no wheel": the index was never read
    return unreachable
  m = NO_MATCH_RE.search(stderr) or _UV_NO_MATCH_RE.search(stderr)
  if m:
    return VenvError(
      f"no {m.group(1)} wheel for Python {py} on the package index "
      f"({tool}: {said})"
    )
  return VenvError(f"{tool} install {' '.join(reqs[:2])} failed: {said}")


def build(
  path: str,
  reqs: tuple[str, ...],
  python: tuple[str, str],
  timeout_s: float,
  children: Children | None,
  installer: str,
  marker: dict,
  marker_name: str,
  tmp_dir: str | None = None,
) -> None:
  """The venv (made by `python`: (path, version)) and `reqs` installed
  into `path`, by `installer` ("uv" or "pip"); then `marker` (with the
  installer added) as `marker_name`, last. `tmp_dir`: the installer's
  TMPDIR (removed by the caller, so an interrupt leaves no temp files).

  Raises:
    VenvError: the venv or the install failed.
  """
  base, py = python
  venv_python = os.path.join(path, "bin", "python")
  extra = {"TMPDIR": tmp_dir} if tmp_dir else {}
  if installer == "uv":
    uv, env = uv_binary(), {**_uv_env(), **extra}
    if uv is None:
      raise VenvError("the uv package is not installed (pip install uv)")
    proc = _run(
      [uv, "venv", "--quiet", "--no-project", "--python", base, path],
      timeout_s,
      children,
      env,
    )
    if proc.returncode != 0:
      raise VenvError(
        f"uv venv --python {base} failed: {last_line(proc.stderr)}"
      )
    proc = _run(
      [uv, "pip", "install", "--quiet", "--python", venv_python, *reqs],
      timeout_s,
      children,
      env,
    )
  else:
    proc = subprocess.run(
      [base, "-m", "venv", path], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
      raise VenvError(f"{base} -m venv failed: {last_line(proc.stderr)}")
    proc = pip(
      venv_python,
      "install",
      "-q",
      *reqs,
      timeout=timeout_s,
      children=children,
      extra_env=extra,
    )
  if proc.returncode != 0:
    raise _install_failed(proc.stderr, reqs, py, installer)
  with open(os.path.join(path, marker_name), "w", encoding="utf-8") as f:
    json.dump({**marker, "installer": installer}, f, indent=1)
