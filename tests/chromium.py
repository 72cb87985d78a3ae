"""Headless Chromium for the tests that check pages in a browser: a page
file's DOM after a probe script (`dump_dom`), and a served page driven
over the DevTools protocol (`Tab`: evaluate JavaScript, take screenshots).

Debian's `chromium` (/usr/bin/chromium; `.ci/run` installs it). A test
using it FAILS, never skips, when it is missing. `Tab` speaks the
DevTools protocol over `--remote-debugging-pipe` (file descriptors 3 and
4, NUL-terminated JSON messages), so it needs no websocket library; WebGL
(Model Explorer's graph) draws in software (ANGLE's SwiftShader).
"""

from __future__ import annotations

import base64
import fcntl
import html
import json
import os
import re
import shlex
import subprocess
import tempfile
import time

__all__ = ["CHROMIUM", "FLAGS", "Tab", "dump_dom", "require_chromium"]

CHROMIUM = "/usr/bin/chromium"
# The machine kind's notes: no sandbox (root), no GPU, nothing fetched.
FLAGS = (
  "--headless",
  "--no-sandbox",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
)


def require_chromium() -> None:
  """Raises AssertionError (never a skip) when Chromium is missing."""
  if not os.access(CHROMIUM, os.X_OK):
    raise AssertionError(
      f"headless Chromium not found at {CHROMIUM}: install Debian's "
      "chromium (`apt-get install -y chromium`, as .ci/run does); the "
      "browser tests do not skip"
    )


def dump_dom(
  page: str,
  probe: str,
  probe_id: str = "hloprobe-probe",
  width: int | None = None,
) -> dict:
  """The JSON a probe script wrote into `<pre id=PROBE_ID>`, with `page`
  (HTML text) opened from a file in headless Chromium, the probe added at
  the end of its body; `width`: the window's width in CSS pixels (height
  900), else Chromium's default.

  Raises:
    AssertionError: Chromium is missing, or did not run the probe.
  """
  require_chromium()
  with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "report.html")
    with open(path, "w", encoding="utf-8") as f:
      f.write(page.replace("</body>", f"<script>{probe}</script></body>"))
    profile = os.path.join(tmp, "profile")
    os.mkdir(profile)
    proc = subprocess.run(
      [
        CHROMIUM,
        *FLAGS,
        "--disable-gpu",
        *([f"--window-size={width},900"] if width else []),
        f"--user-data-dir={profile}",
        "--dump-dom",
        f"file://{path}",
      ],
      capture_output=True,
      text=True,
      timeout=120,
    )
  found = re.findall(rf'<pre id="{probe_id}">(.*?)</pre>', proc.stdout, re.S)
  if proc.returncode != 0 or not found:
    raise AssertionError(
      f"chromium exited {proc.returncode} without the probe's output: "
      f"{proc.stderr[-2000:]}"
    )
  return json.loads(html.unescape(found[-1]))


def _high(fds: tuple[int, int]) -> tuple[int, int]:
  """The pipe's ends moved to descriptors 10 and up (inheritable), so the
  shell's `3<&A 4>&B` cannot overwrite one before it is read."""
  moved = tuple(fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in fds)
  for fd in fds:
    os.close(fd)
  for fd in moved:
    os.set_inheritable(fd, True)
  return moved


class Tab:
  """One headless Chromium with one tab, driven over the DevTools
  protocol; a context manager that ends the browser.

  Args:
    width, height: the window's size, CSS pixels (device scale 1).
  """

  def __init__(self, width: int = 1000, height: int = 750):
    require_chromium()
    self._profile = tempfile.TemporaryDirectory()
    self._log = open(os.path.join(self._profile.name, "stderr"), "w+b")  # noqa: SIM115
    to_chrome, self._out = _high(os.pipe())
    self._in, from_chrome = _high(os.pipe())
    args = [
      CHROMIUM,
      *FLAGS,
      "--use-angle=swiftshader",
      "--enable-unsafe-swiftshader",
      f"--window-size={width},{height}",
      f"--user-data-dir={self._profile.name}",
      "--remote-debugging-pipe",
    ]
    # Chromium reads commands on fd 3 and answers on fd 4.
    shell = f"exec 3<&{to_chrome} 4>&{from_chrome}; exec {shlex.join(args)}"
    self._proc = subprocess.Popen(
      ["bash", "-c", shell],
      pass_fds=(to_chrome, from_chrome),
      stdout=subprocess.DEVNULL,
      stderr=self._log,
    )
    os.close(to_chrome)
    os.close(from_chrome)
    self._buffer, self._id, self._session = b"", 0, None
    try:
      target = self._send("Target.createTarget", {"url": "about:blank"})
      attached = self._send(
        "Target.attachToTarget",
        {"targetId": target["targetId"], "flatten": True},
      )
    except BaseException:
      self.close()
      raise
    self._session = attached["sessionId"]

  def __enter__(self) -> Tab:
    return self

  def __exit__(self, *exc) -> None:
    self.close()

  def _send(self, method: str, params: dict | None = None) -> dict:
    """One command's result (events in between are dropped).

    Raises:
      AssertionError: the browser answered an error or went away.
    """
    self._id += 1
    message = {"id": self._id, "method": method, "params": params or {}}
    if self._session:
      message["sessionId"] = self._session
    try:
      os.write(self._out, json.dumps(message).encode() + b"\0")
    except BrokenPipeError:
      raise AssertionError(
        f"chromium went away before {method}: {self._stderr()}"
      ) from None
    while True:
      while b"\0" not in self._buffer:
        chunk = os.read(self._in, 1 << 16)
        if not chunk:
          raise AssertionError(
            f"chromium went away during {method}: {self._stderr()}"
          )
        self._buffer += chunk
      raw, self._buffer = self._buffer.split(b"\0", 1)
      answer = json.loads(raw)
      if answer.get("id") == self._id:
        if "error" in answer:
          raise AssertionError(f"{method}: {answer['error']}")
        return answer["result"]

  def _stderr(self) -> str:
    """The last lines Chromium wrote on stderr."""
    self._log.seek(0)
    return self._log.read().decode(errors="replace")[-2000:]

  def open(self, url: str) -> None:
    self._send("Page.navigate", {"url": url})

  def evaluate(self, expression: str):
    """The value of a JavaScript expression in the page (JSON-able)."""
    found = self._send(
      "Runtime.evaluate", {"expression": expression, "returnByValue": True}
    )
    return found["result"].get("value")

  def wait_for(self, expression: str, timeout_s: float = 90.0):
    """Polls `expression` every half second until it is truthy; returns
    its value.

    Raises:
      AssertionError: still falsy after `timeout_s`.
    """
    deadline = time.monotonic() + timeout_s
    while True:
      value = self.evaluate(expression)
      if value:
        return value
      if time.monotonic() > deadline:
        raise AssertionError(f"after {timeout_s} s, still false: {expression}")
      time.sleep(0.5)

  def screenshot(self) -> bytes:
    """The window as PNG bytes (the first waits for a drawn frame)."""
    shot = self._send("Page.captureScreenshot", {"format": "png"})
    return base64.b64decode(shot["data"])

  def close(self) -> None:
    """Ends the browser (it ends its own processes), then waits for it."""
    if self._proc.poll() is None:
      try:
        os.write(self._out, b'{"id": 0, "method": "Browser.close"}\0')
        self._proc.wait(timeout=30)
      except (OSError, subprocess.TimeoutExpired):
        self._proc.kill()
        self._proc.wait()
    for fd in (self._in, self._out):
      try:
        os.close(fd)
      except OSError:
        pass
    self._log.close()
    self._profile.cleanup()
