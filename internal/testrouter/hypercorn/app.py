"""The hypercorn upstream of testrouter: a bare ASGI app served by
hypercorn, which switches a connection to HTTP/2 when a request says
Upgrade: h2c (whatever its Connection says), and then serves every stream
of that connection to the app.

Usage: python3 app.py PORT
"""

import asyncio
import json
import os
import sys

from hypercorn.asyncio import serve
from hypercorn.config import Config

CONTROL = "/__router/"
REPORTED = (
    "X-Forwarded-For",
    "X-Forwarded-Host",
    "X-Forwarded-Proto",
    "X-Real-Ip",
    "X-Http-Method-Override",
    "Forwarded",
)

# One event loop runs the app, so the state needs no lock.
state = {"hits": 0, "last": None}


async def answer(send, status, body, content_type="text/plain; charset=utf-8"):
    data = body.encode()
    await send({
        "type": "http.response.start",
        "status": status,
        "headers": [(b"content-type", content_type.encode()), (b"content-length", str(len(data)).encode())],
    })
    await send({"type": "http.response.body", "body": data})


async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] != "http":
        return
    method, path = scope["method"], scope["path"]
    if path.startswith(CONTROL):
        if method == "GET" and path == CONTROL + "hits":
            return await answer(send, 200, json.dumps({"hits": state["hits"], "pid": os.getpid()}), "application/json")
        if method == "POST" and path == CONTROL + "reset":
            state["hits"], state["last"] = 0, None
            return await answer(send, 200, json.dumps({"hits": 0}), "application/json")
        if method == "GET" and path == CONTROL + "last":
            return await answer(send, 200, json.dumps(state["last"] or {}), "application/json")
        return await answer(send, 404, "not found\n")
    headers = {}
    for name, value in scope["headers"]:
        name = name.decode("latin1").lower()
        for want in REPORTED:
            if want.lower() == name:
                headers[want] = headers[want] + "," + value.decode("latin1") if want in headers else value.decode("latin1")
    host = next((v.decode("latin1") for n, v in scope["headers"] if n.lower() in (b"host", b":authority")), "")
    raw = scope.get("raw_path", b"").decode("latin1")
    if scope.get("query_string"):
        raw += "?" + scope["query_string"].decode("latin1")
    client = scope.get("client") or ("", 0)
    state["last"] = {
        "method": method,
        "path": path,
        "raw": raw,
        "headers": headers,
        "remote_addr": client[0],
        "scheme": scope.get("scheme", "http"),
        "host": host,
    }
    parts = path.split("/")
    if method == "GET" and len(parts) == 3 and parts[1] == "l" and parts[2] != "":
        state["hits"] += 1
        return await answer(send, 200, f"limited {parts[2]}\n")
    if method == "GET" and len(parts) >= 3 and parts[1] == "u":
        return await answer(send, 200, f"unlimited {path}\n")
    await answer(send, 404, "not found\n")


def main():
    config = Config()
    config.bind = [f"127.0.0.1:{int(sys.argv[1])}"]
    config.accesslog = None
    asyncio.run(serve(app, config))


if __name__ == "__main__":
    main()
