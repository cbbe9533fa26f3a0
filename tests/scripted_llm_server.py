"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1 for tests.

`ScriptedServer(script)` answers request i with script[i % len(script)] (or a callable of the
request body returning such an entry). An entry is a dict: {"content": str} (a good completion,
with usage), {"status": int, "body": str, "retry_after": seconds}, {"raw": bytes-or-str} (a body
as is, e.g. broken JSON), {"stall": seconds} (answer that late). It records every request (its
headers and JSON body) and the most requests it saw in flight at once."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Sequence, Union

Entry = Union[dict, Callable[[dict], dict]]


class LocalHttpServer:
    """A threading HTTP server on 127.0.0.1 (a free port) for a handler class; a context manager
    that serves while open. `base_url` is its OpenAI-style /v1 root."""

    def _serve(self, handler: type) -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class ScriptedServer(LocalHttpServer):
    def __init__(self, script: Sequence[Entry]):
        self.script = list(script)
        self.requests: list[dict[str, Any]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with server._lock:
                    index = len(server.requests)
                    server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    entry = server.script[index % len(server.script)]
                    if callable(entry):
                        entry = entry(body)
                    server._answer(self, entry, body)
                finally:
                    with server._lock:
                        server.in_flight -= 1

        self._serve(Handler)

    @staticmethod
    def _answer(handler: BaseHTTPRequestHandler, entry: dict, body: dict) -> None:
        if entry.get("stall"):
            time.sleep(float(entry["stall"]))
        if "status" in entry:
            payload = (entry.get("body") or "error").encode()
            handler.send_response(int(entry["status"]))
            if entry.get("retry_after") is not None:
                handler.send_header("Retry-After", str(entry["retry_after"]))
        elif "raw" in entry:
            raw = entry["raw"]
            payload = raw if isinstance(raw, bytes) else raw.encode()
            handler.send_response(200)
        else:
            content = entry.get("content", "")
            payload = json.dumps({
                "id": f"chatcmpl-{abs(hash(content)) % 10**8}", "object": "chat.completion",
                "model": body.get("model", "scripted"),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                             "finish_reason": entry.get("finish_reason", "stop")}],
                "usage": {"prompt_tokens": entry.get("prompt_tokens", 11),
                          "completion_tokens": entry.get("completion_tokens", len(content.split()))},
            }).encode()
            handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        try:
            handler.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass
