"""The wsgiref upstream of testrouter: a plain WSGI app on the standard
library's wsgiref.simple_server, kept alive between requests as the
servers built on it are, and as careless with HEAD as a WSGI app is.

WSGI leaves HEAD to the app, and wsgiref sends whatever the app returns:
the app below answers HEAD as GET, so the GET's body follows the head. For
HEAD /page/<anything> the body is a page an attacker wrote, which looks
like an HTTP answer, and it comes late: after the head, once the next
request arrives on the connection or the connection closes. A proxy that
reuses the connection reads that page as the next request's answer.

Usage: python3 app.py PORT
"""

import io
import json
import os
import select
import sys
import threading
from socketserver import ThreadingMixIn
from wsgiref.simple_server import ServerHandler, WSGIRequestHandler, WSGIServer, make_server

CONTROL = "/__router/"
REPORTED = (
    "X-Forwarded-For",
    "X-Forwarded-Host",
    "X-Forwarded-Proto",
    "X-Real-Ip",
    "X-Http-Method-Override",
    "Forwarded",
)
# The attacker's page: an answer of its own.
PAGE = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 13\r\n\r\nattacker page"

lock = threading.Lock()  # guards state: the server is threaded
state = {"hits": 0, "last": None}


def app(environ, start_response):
    method, path = environ["REQUEST_METHOD"], environ["PATH_INFO"]
    if path.startswith(CONTROL):
        return control(method, path[len(CONTROL):], start_response)
    seen = {
        "method": method,
        "path": path,
        "raw": environ.get("RAW_URI", path),
        "headers": {h: environ["HTTP_" + h.upper().replace("-", "_")]
                    for h in REPORTED if "HTTP_" + h.upper().replace("-", "_") in environ},
        "remote_addr": environ.get("REMOTE_ADDR", ""),
        "scheme": environ["wsgi.url_scheme"],
        "host": environ.get("HTTP_HOST", ""),
    }
    with lock:
        state["last"] = seen
    if method not in ("GET", "HEAD"):
        return answer(start_response, "405 Method Not Allowed", b"method not allowed\n")
    parts = path.split("/")
    if len(parts) == 3 and parts[1] == "l" and parts[2]:
        with lock:
            state["hits"] += 1
        return answer(start_response, "200 OK", f"limited {parts[2]}\n".encode())
    if len(parts) >= 3 and parts[1] == "u" and parts[2]:
        return answer(start_response, "200 OK", f"unlimited {path}\n".encode())
    if len(parts) >= 3 and parts[1] == "page" and method == "HEAD":
        start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(PAGE)))])
        return late(environ["testrouter.connection"])
    return answer(start_response, "404 Not Found", b"not found\n")


def late(connection):
    """Yields the head alone, then the page once the connection has bytes
    to read (the next request) or has closed."""
    yield b""
    select.select([connection], [], [], 10)
    yield PAGE


def answer(start_response, status, body):
    start_response(status, [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body)))])
    return [body]


def control(method, name, start_response):
    with lock:
        if name == "hits":
            # The process id tells the harness that this app, not another
            # that took its port, is answering.
            body = {"hits": state["hits"], "pid": os.getpid()}
        elif name == "reset" and method == "POST":
            state["hits"], state["last"] = 0, None
            body = {"hits": 0}
        elif name == "last":
            body = state["last"] or {}
        else:
            return answer(start_response, "404 Not Found", b"not found\n")
    out = json.dumps(body).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(out)))])
    return [out]


class Handler(ServerHandler):
    http_version = "1.1"


class KeepAlive(WSGIRequestHandler):
    """wsgiref's handler, serving every request of a connection until the
    client asks to close."""

    protocol_version = "HTTP/1.1"

    def handle(self):
        self.close_connection = True
        self.handle_one()
        while not self.close_connection:
            self.handle_one()

    def handle_one(self):
        self.raw_requestline = self.rfile.readline(65537)
        if not self.raw_requestline or len(self.raw_requestline) > 65536 or not self.parse_request():
            self.close_connection = True
            return
        environ = self.get_environ()
        environ["testrouter.connection"] = self.connection
        # The body is read whole before the app runs, so that what the app
        # leaves unread is not taken for the next request.
        body = io.BytesIO(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        handler = Handler(body, self.wfile, self.get_stderr(), environ, multithread=True)
        handler.request_handler = self
        handler.run(self.server.get_app())
        self.wfile.flush()

    def log_message(self, *args):
        pass


class Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: app.py PORT")
    make_server("127.0.0.1", int(sys.argv[1]), app, server_class=Server, handler_class=KeepAlive).serve_forever()
