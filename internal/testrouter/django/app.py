"""The Django upstream of testrouter: function views without a method
decorator, as Django's tutorial writes them, behind Django's default
middleware (CSRF included), served by wsgiref in a thread per request.

A function view runs for every method the request names: GET, HEAD,
OPTIONS and TRACE pass CsrfViewMiddleware, and a @csrf_exempt view takes
every method, POST, PUT, DELETE and unknown ones included. So /l/<id> is
the limited view for the safe methods, and /w/<id>, @csrf_exempt as
webhook views are written, for all of them; both count as the limited
handler.

Usage: python3 app.py PORT
"""

import json
import os
import sys
import threading
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from django.conf import settings

settings.configure(
    DEBUG=False,
    SECRET_KEY="testrouter",
    ALLOWED_HOSTS=["*"],
    ROOT_URLCONF=__name__,
    MIDDLEWARE=[
        "django.middleware.security.SecurityMiddleware",
        "django.middleware.common.CommonMiddleware",
        "django.middleware.csrf.CsrfViewMiddleware",
        "django.middleware.clickjacking.XFrameOptionsMiddleware",
    ],
    INSTALLED_APPS=[],
    USE_TZ=True,
)

import django  # noqa: E402

django.setup()

from django.http import HttpResponse, JsonResponse  # noqa: E402
from django.urls import path  # noqa: E402
from django.views.decorators.csrf import csrf_exempt  # noqa: E402

CONTROL = "/__router/"
REPORTED = (
    "X-Forwarded-For",
    "X-Forwarded-Host",
    "X-Forwarded-Proto",
    "X-Real-Ip",
    "X-Http-Method-Override",
    "Forwarded",
)

lock = threading.Lock()  # guards state: a thread serves each request
state = {"hits": 0, "views": {}, "last": None}


class Record:
    """Middleware recording the last request routed, unrouted ones too."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not request.path.startswith(CONTROL):
            seen = {
                "method": request.method,
                "path": request.path,
                "raw": request.get_full_path(),
                "headers": {h: request.headers[h] for h in REPORTED if h in request.headers},
                "remote_addr": request.META.get("REMOTE_ADDR", ""),
                "scheme": request.scheme,
                "host": request.META.get("HTTP_HOST", ""),
            }
            with lock:
                state["last"] = seen
        return self.get_response(request)


settings.MIDDLEWARE.insert(0, __name__ + ".Record")


def text(body):
    return HttpResponse(body, content_type="text/plain; charset=utf-8")


def hit(view):
    with lock:
        state["hits"] += 1
        state["views"][view] = state["views"].get(view, 0) + 1


def limited(request, id):
    hit("l")
    return text(f"limited {id}\n")


@csrf_exempt
def webhook(request, id):
    hit("w")
    return text(f"limited {id}\n")


def unlimited(request, rest):
    return text(f"unlimited {request.path}\n")


def hits(request):
    with lock:
        # The process id tells the harness that this app, not another that
        # took its port, is answering.
        return JsonResponse({"hits": state["hits"], "views": state["views"], "pid": os.getpid()})


@csrf_exempt
def reset(request):
    with lock:
        state["hits"] = 0
        state["views"] = {}
        state["last"] = None
    return JsonResponse({"hits": 0})


def last(request):
    with lock:
        return JsonResponse(state["last"] or {})


urlpatterns = [
    path("l/<str:id>", limited),
    path("w/<str:id>", webhook),
    path("u/<path:rest>", unlimited),
    path(CONTROL[1:] + "hits", hits),
    path(CONTROL[1:] + "reset", reset),
    path(CONTROL[1:] + "last", last),
]


class Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class Quiet(WSGIRequestHandler):
    def log_message(self, format, *args):
        sys.stderr.write("%s %s\n" % (self.address_string(), format % args))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: app.py PORT")
    from django.core.wsgi import get_wsgi_application

    httpd = make_server("127.0.0.1", int(sys.argv[1]), get_wsgi_application(), server_class=Server, handler_class=Quiet)
    httpd.serve_forever()
