"""The Flask upstream of testrouter: Flask routes served by Werkzeug's
development server, with ProxyFix trusting one proxy for the client address,
scheme and host.

Werkzeug routes on PATH_INFO, which its server has percent-decoded, and
upper-cases the request method; its server turns every header name into a
WSGI key by replacing "-" with "_", so X_Forwarded_For and X-Forwarded-For
arrive as the same HTTP_X_FORWARDED_FOR, which ProxyFix then trusts.

Usage: python3 app.py PORT
"""

import os
import sys
import threading

from flask import Flask, jsonify, request
from werkzeug.middleware.proxy_fix import ProxyFix

CONTROL = "/__router/"
REPORTED = (
    "X-Forwarded-For",
    "X-Forwarded-Host",
    "X-Forwarded-Proto",
    "X-Real-Ip",
    "X-Http-Method-Override",
    "Forwarded",
)

app = Flask(__name__)
app.wsgi_app = ProxyFix(app.wsgi_app, x_for=1, x_proto=1, x_host=1)

lock = threading.Lock()  # guards state: the development server is threaded
state = {"hits": 0, "last": None}


@app.before_request
def record():
    # Runs for unrouted requests too: Flask matches the URL first and raises
    # its 404 or 405 only when dispatching.
    if request.path.startswith(CONTROL):
        return
    seen = {
        "method": request.method,
        "path": request.path,
        "raw": request.environ.get("RAW_URI", ""),
        "headers": {h: request.headers[h] for h in REPORTED if h in request.headers},
        "remote_addr": request.remote_addr,
        "scheme": request.scheme,
        "host": request.host,
    }
    with lock:
        state["last"] = seen


def text(body):
    return body, 200, {"Content-Type": "text/plain; charset=utf-8"}


@app.get("/l/<id>")
def limited(id):
    with lock:
        state["hits"] += 1
    return text(f"limited {id}\n")


def read_credential():
    """The credential as Flask apps usually read it: request.authorization,
    Werkzeug's parse, for Basic; for other schemes its token, or, from a
    Werkzeug before 2.3, which parses only Basic and Digest, what follows
    the scheme, as Flask-HTTPAuth reads it there."""
    auth = request.authorization
    if auth is not None and auth.type == "basic":
        return f"{auth.username}:{auth.password}"
    token = getattr(auth, "token", None)
    if token:
        return token
    try:
        scheme, token = request.headers["Authorization"].split(None, 1)
    except (KeyError, ValueError):
        return None
    if scheme.lower() == "basic":
        return None  # a Basic credential Werkzeug could not read
    return token


@app.get("/a")
def credential():
    got = read_credential()
    if got is None:
        return "no credential\n", 401, {"Content-Type": "text/plain; charset=utf-8"}
    with lock:
        state["hits"] += 1
    return text(f"credential {got}\n")


@app.get("/u/<path:rest>")
def unlimited(rest):
    return text(f"unlimited {request.path}\n")


@app.get(CONTROL + "hits")
def hits():
    with lock:
        # The process id tells the harness that this app, not another that
        # took its port, is answering.
        return jsonify(hits=state["hits"], pid=os.getpid())


@app.post(CONTROL + "reset")
def reset():
    with lock:
        state["hits"] = 0
        state["last"] = None
    return jsonify(hits=0)


@app.get(CONTROL + "last")
def last():
    with lock:
        return jsonify(state["last"] or {})


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: app.py PORT")
    app.run(host="127.0.0.1", port=int(sys.argv[1]), threaded=True, debug=False, use_reloader=False)
