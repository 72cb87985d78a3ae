"""`hloprobe view`'s web server: Model Explorer's web app, and of its API
only what the picked configs need.

Issue 27 (items 2 and 8). Model Explorer's own server (ai-edge-model-
explorer 0.1.34, `model_explorer/server.py`, `start`) answers
`/api/v1/read_text_file?path=` for any file its user can read, converts
any model path (`/api/v1/send_command`), takes uploads and new configs
(`/apipost/v1/upload`, `update_config`), for any Host header (a web page
reaches it by DNS rebinding); its health check loops with a bare
`except:` (at 100% CPU forever on port 0, swallowing Ctrl+C), and it
prints the address it serves on stdout. So hloprobe does not start it:
`ViewServer` serves the same web app (the package's `web_app/` folder,
static files only) on 127.0.0.1 with the standard library's WSGI server,
and answers the API calls the app makes to open the given models, with
Model Explorer's own adapters (`extension_manager.ExtensionManager`):

  every request   the Host header is `127.0.0.1:PORT` or `localhost:PORT`
                  (else 403: DNS rebinding), and it carries the server's
                  random token, as Jupyter's does: in the URL printed
                  (`?token=`), which sets a cookie for this port
                  (HttpOnly, SameSite=Strict) that the app's own requests
                  then carry (else 403)
  /?token=T       the URL printed (short: no paths in it, issue 39 item
                  7): a redirect (302) to the app with its opening view
                  (`?data=...`: the models, overlays and the worst site),
                  the cookie set on the way
  read_text_file  only the node-data files and models of the configs
                  given (paths compared after `os.path.realpath`)
  send_command    only a "convert" of one of the given models, never
                  deleting it afterwards
  get_extensions, check_new_version (answered "none", with no network),
  notify_user_provided_model_path, check_health: as Model Explorer's
  apistream/server_director: 204 (no directives: no config changes)
  every other API path (upload, update_config, refresh_page, ...): 403

A closed browser tab only ends its connections (SIGPIPE is ignored while
serving; the handler's BrokenPipeError ends the request); an interrupt
ends `serve_forever` at once.

Private in intent: use the package, `hloprobe.pictures`.
"""

from __future__ import annotations

import contextlib
import errno
import hmac
import http.cookies
import json
import mimetypes
import os
import secrets
import signal
import socketserver
import threading
import urllib.parse
from collections.abc import Iterable, Iterator
from wsgiref import simple_server

from hloprobe.errors import HloprobeError, InvalidArgumentError

__all__ = ["ViewServer", "ignoring_sigpipe"]

_HOST = "127.0.0.1"
# Model Explorer's rule for its default port: the first free of 8080-8099,
# else any free port (server.py, `start`).
DEFAULT_PORT = 8080
_DEFAULT_TRIES = 20
_MAX_BODY_BYTES = 1 << 20
# What check_new_version answers: no newer release (Model Explorer's
# `_check_new_version` answer when its look-up fails).
_NO_NEW_VERSION = {
  "version": "",
  "runningVersion": "",
  "releaseUrl": "",
  "desktopAppUrl": "",
}


class _Refused(Exception):
  """A request refused: its status and one line why."""

  def __init__(self, status: str, why: str):
    super().__init__(why)
    self.status = status


class _Server(socketserver.ThreadingMixIn, simple_server.WSGIServer):
  daemon_threads = True  # a tab left open does not hold the exit


class _QuietHandler(simple_server.WSGIRequestHandler):
  def log_message(self, format, *args) -> None:  # noqa: A002 (stdlib name)
    del format, args  # no line per request on stderr


class ViewServer:
  """The gate and server of `hloprobe view`, bound on construction.

  Args:
    models: the .mlir files to open (absolute or relative paths).
    node_data: the node-data JSON files of those models.
    port: 8080: the first free port of 8080-8099, else any; 0: any free
      port (the OS's choice); else that port.
    web_app: Model Explorer's web_app/ folder (its static files).
    extensions: Model Explorer's `ExtensionManager`, extensions loaded.
    opening: the app's query that opens the view (Model Explorer's
      `data=...`), where `/?token=` redirects; "" for none.

  Attributes:
    port: the port bound (int).
    token: the random access token (32 hex digits).

  Raises:
    InvalidArgumentError: a port outside 0-65535.
    HloprobeError: the port is in use, or cannot be bound.
  """

  def __init__(
    self,
    models: Iterable[str],
    node_data: Iterable[str],
    port: int,
    web_app: str,
    extensions,
    opening: str = "",
  ):
    self._models = frozenset(os.path.realpath(p) for p in models)
    self._readable = self._models | {os.path.realpath(p) for p in node_data}
    self._web_app = os.path.realpath(web_app)
    self._extensions = extensions
    self._opening = opening
    self.token = secrets.token_hex(16)
    self._server = _bind(port, self._app)
    self.port = self._server.server_address[1]
    self._cookie = f"hloprobe_view_{self.port}"
    self._hosts = {f"{_HOST}:{self.port}", f"localhost:{self.port}"}

  def url(self) -> str:
    """The address to open, as Jupyter prints its own: the port and the
    token, nothing else (under 80 characters); the server redirects it to
    the opening view."""
    return f"http://{_HOST}:{self.port}/?token={self.token}"

  def serve_forever(self) -> None:
    """Serves until interrupted (SIGINT/SIGTERM), then closes the socket."""
    try:
      with ignoring_sigpipe():
        self._server.serve_forever(poll_interval=0.5)
    finally:
      self._server.server_close()

  def close(self) -> None:
    """Closes the listening socket (a server never served)."""
    self._server.server_close()

  def _app(self, environ, start_response) -> list[bytes]:
    """The WSGI application: the gate, then the route."""
    headers = [("Cache-Control", "no-store")]
    try:
      self._check_origin(environ, headers)
      if self._opens(environ):
        headers.append(("Location", f"/?{self._opening}"))
        start_response("302 Found", headers)
        return [b""]
      status, kind, body = self._route(environ)
    except _Refused as e:
      status, kind = e.status, "application/json"
      body = json.dumps({"error": f"hloprobe view: {e}"}).encode()
    headers.append(("Content-Type", kind))
    start_response(status, headers)
    return [body]

  def _opens(self, environ) -> bool:
    """Whether the request is the printed URL's (`/?token=` alone), which
    redirects to the opening view."""
    query = urllib.parse.parse_qs(environ.get("QUERY_STRING", ""))
    return (
      bool(self._opening)
      and environ.get("PATH_INFO", "/") in ("", "/")
      and set(query) == {"token"}
    )

  def _check_origin(self, environ, headers: list) -> None:
    if environ.get("HTTP_HOST", "") not in self._hosts:
      raise _Refused("403 Forbidden", "refused: Host header is not this server")
    query = urllib.parse.parse_qs(environ.get("QUERY_STRING", ""))
    given = query.get("token", [""])[0]
    if given and hmac.compare_digest(given, self.token):
      headers.append(
        (
          "Set-Cookie",
          f"{self._cookie}={self.token}; Path=/; HttpOnly; SameSite=Strict",
        )
      )
      return
    jar = http.cookies.SimpleCookie()
    with contextlib.suppress(http.cookies.CookieError):
      jar.load(environ.get("HTTP_COOKIE", ""))
    held = jar.get(self._cookie)
    if held is None or not hmac.compare_digest(held.value, self.token):
      raise _Refused(
        "403 Forbidden", "refused: open the URL `hloprobe view` printed"
      )

  def _route(self, environ) -> tuple[str, str, bytes]:
    path = environ.get("PATH_INFO", "/")
    query = urllib.parse.parse_qs(environ.get("QUERY_STRING", ""))
    answer = {
      "/api/v1/get_extensions": lambda: (
        self._extensions.get_extensions_metadata()
      ),
      "/api/v1/check_new_version": lambda: _NO_NEW_VERSION,
      "/api/v1/notify_user_provided_model_path": lambda: {"status": "ok"},
      "/api/v1/read_text_file": lambda: self._read(query),
      "/api/v1/send_command": lambda: self._convert(
        query.get("json", ["{}"])[0]
      ),
      "/apipost/v1/send_command": lambda: self._convert(_body(environ)),
    }.get(path)
    if answer is not None:
      return "200 OK", "application/json", json.dumps(answer()).encode()
    if path == "/check_health":
      return "200 OK", "text/plain", b"model_explorer_ok"
    if path == "/apistream/server_director":
      return "204 No Content", "text/plain", b""
    if path.startswith(("/api", "/apipost", "/apistream")):
      raise _Refused("403 Forbidden", f"refused: {path} is not served")
    return self._static(path)

  def _read(self, query) -> dict:
    path = query.get("path", [""])[0]
    real = os.path.realpath(os.path.expanduser(path)) if path else ""
    if real not in self._readable:
      raise _Refused(
        "403 Forbidden", f"refused: {path!r} is not a file of this view"
      )
    try:
      with open(real, encoding="utf-8") as f:
        return {"content": f.read()}
    except (OSError, UnicodeDecodeError) as e:
      return {"error": str(e)}

  def _convert(self, text: str) -> dict:
    try:
      cmd = json.loads(text)
    except ValueError:
      raise _Refused("400 Bad Request", "refused: not JSON") from None
    model = cmd.get("modelPath") if isinstance(cmd, dict) else None
    if (
      not isinstance(model, str)
      or cmd.get("cmdId") != "convert"
      or os.path.realpath(model) not in self._models
    ):
      raise _Refused("403 Forbidden", "refused: not a model of this view")
    cmd["deleteAfterConversion"] = False
    from hloprobe.pictures.model_explorer import quiet_adapter

    try:
      with quiet_adapter():
        return self._extensions.run_cmd(cmd)
    except Exception as e:  # Model Explorer's answer: the error, in JSON
      return {"error": f"{type(e).__name__}: {e}"}

  def _static(self, path: str) -> tuple[str, str, bytes]:
    rel = "index.html" if path in ("", "/") else path.lstrip("/")
    real = os.path.realpath(os.path.join(self._web_app, rel))
    if not real.startswith(self._web_app + os.sep) or not os.path.isfile(real):
      raise _Refused("404 Not Found", f"no {path}")
    kind = mimetypes.guess_type(real)[0] or "application/octet-stream"
    with open(real, "rb") as f:
      return "200 OK", kind, f.read()


def _body(environ) -> str:
  try:
    size = int(environ.get("CONTENT_LENGTH") or 0)
  except ValueError:
    size = -1
  if not 0 <= size <= _MAX_BODY_BYTES:
    raise _Refused("400 Bad Request", "refused: body length")
  return environ["wsgi.input"].read(size).decode("utf-8", "replace")


def _bind(port: int, app) -> _Server:
  """A server on 127.0.0.1 at `port` (see `ViewServer`)."""
  if not 0 <= port <= 65535:
    raise InvalidArgumentError(
      f"--port must be 0-65535 (0: any free port), got {port}"
    )
  tries = (
    [*range(DEFAULT_PORT, DEFAULT_PORT + _DEFAULT_TRIES), 0]
    if port == DEFAULT_PORT
    else [port]
  )
  for p in tries:
    try:
      server = _Server((_HOST, p), _QuietHandler)
    except OSError as e:
      if e.errno == errno.EADDRINUSE and p != tries[-1]:
        continue
      raise HloprobeError(
        f"cannot serve on {_HOST} port {p}: {e.strerror}; choose another "
        "with --port (0: any free port)"
      ) from None
    server.set_app(app)
    return server
  raise AssertionError("unreachable: the last try returns or raises")


@contextlib.contextmanager
def ignoring_sigpipe() -> Iterator[None]:
  """SIGPIPE ignored inside (a write to a closed tab's socket raises
  BrokenPipeError instead of killing the process; the command line
  sets SIG_DFL for `| head`), restored after. In another thread (where
  signal handlers cannot be set) it changes nothing."""
  if threading.current_thread() is not threading.main_thread():
    yield
    return
  old = signal.signal(signal.SIGPIPE, signal.SIG_IGN)
  try:
    yield
  finally:
    signal.signal(signal.SIGPIPE, old)
