"""The Tornado upstream of testrouter: Tornado's own HTTP server with
xheaders=True, as its documentation says to run it behind a proxy.

With xheaders, Tornado believes from any peer X-Real-Ip (or the last
X-Forwarded-For element) as the client's address, and X-Scheme (or
X-Forwarded-Proto) as the scheme: request.remote_ip and request.protocol,
which the app reports.

Usage: python3 app.py PORT
"""

import os
import sys

import tornado.httpserver
import tornado.ioloop
import tornado.web

CONTROL = "/__router/"
REPORTED = (
    "X-Forwarded-For",
    "X-Forwarded-Host",
    "X-Forwarded-Proto",
    "X-Real-Ip",
    "X-Http-Method-Override",
    "Forwarded",
)

# One thread runs the IOLoop, so the state needs no lock.
state = {"hits": 0, "last": None}


class Recorded(tornado.web.RequestHandler):
    def prepare(self):
        r = self.request
        state["last"] = {
            "method": r.method,
            "path": r.path,
            "raw": r.uri,
            "headers": {h: ", ".join(r.headers.get_list(h)) for h in REPORTED if h in r.headers},
            "remote_addr": r.remote_ip,
            "scheme": r.protocol,
            "host": r.host,
        }

    def text(self, body):
        self.set_header("Content-Type", "text/plain; charset=utf-8")
        self.finish(body)


class Limited(Recorded):
    def get(self, id):
        state["hits"] += 1
        self.text(f"limited {id}\n")


class Unlimited(Recorded):
    def get(self, rest):
        self.text(f"unlimited {self.request.path}\n")


class NotFound(Recorded):
    def prepare(self):
        super().prepare()
        raise tornado.web.HTTPError(404)


class Hits(tornado.web.RequestHandler):
    def get(self):
        # The process id tells the harness that this app, not another that
        # took its port, is answering.
        self.finish({"hits": state["hits"], "pid": os.getpid()})


class Reset(tornado.web.RequestHandler):
    def post(self):
        state["hits"] = 0
        state["last"] = None
        self.finish({"hits": 0})


class Last(tornado.web.RequestHandler):
    def get(self):
        self.finish(state["last"] or {})


def main():
    port = int(sys.argv[1])
    app = tornado.web.Application(
        [
            (CONTROL + "hits", Hits),
            (CONTROL + "reset", Reset),
            (CONTROL + "last", Last),
            (r"/l/([^/]+)", Limited),
            (r"/u/(.+)", Unlimited),
        ],
        default_handler_class=NotFound,
    )
    server = tornado.httpserver.HTTPServer(app, xheaders=True)
    server.listen(port, address="127.0.0.1")
    tornado.ioloop.IOLoop.current().start()


if __name__ == "__main__":
    main()
