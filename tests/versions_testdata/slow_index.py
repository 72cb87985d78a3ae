"""A local package index for `hloprobe versions` tests: no network.

`python slow_index.py PORT_FILE MODE`: serves a PEP 503 "simple" index on
127.0.0.1 (its port written to PORT_FILE once it listens) that lists one
wheel, `<name>-0.10.2-py3-none-any.whl`, for every project, so that pip's
`index versions` and uv's resolution find jaxlib 0.10.2. A request for a
wheel then sleeps an hour (MODE "sleep": an install that hangs mid-build,
to be interrupted) or is answered 404 (MODE "missing": an install that
fails at once). Every path asked is appended to PORT_FILE + ".log".
"""

import http.server
import os
import sys
import time

_PAGE = (
  "<!DOCTYPE html><html><body>"
  '<a href="/files/{name}-0.10.2-py3-none-any.whl">'
  "{name}-0.10.2-py3-none-any.whl</a></body></html>"
)


class _Handler(http.server.BaseHTTPRequestHandler):
  def do_GET(self):  # noqa: N802 (http.server's name)
    with open(self.server.log_path, "a") as f:
      f.write(self.path + "\n")
    parts = [p for p in self.path.split("/") if p]
    if len(parts) >= 2 and parts[0] == "simple":
      body = _PAGE.format(name=parts[1].replace("-", "_")).encode()
      self.send_response(200)
      self.send_header("Content-Type", "text/html")
      self.send_header("Content-Length", str(len(body)))
      self.end_headers()
      self.wfile.write(body)
      return
    if self.server.mode == "sleep" and parts[:1] == ["files"]:
      time.sleep(3600)
    self.send_error(404)

  do_HEAD = do_GET  # noqa: N815 (uv asks HEAD before a range request)

  def log_message(self, *args):
    del args


def main(port_file: str, mode: str) -> None:
  server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
  server.daemon_threads = True
  server.mode, server.log_path = mode, port_file + ".log"
  with open(port_file + ".part", "w") as f:
    f.write(str(server.server_address[1]))
  os.rename(port_file + ".part", port_file)
  server.serve_forever()


if __name__ == "__main__":
  main(sys.argv[1], sys.argv[2])
