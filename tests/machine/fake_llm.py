"""A local HTTP server speaking the OpenAI chat-completions wire format, for the machine-rater
tests: JSON bodies, `choices[0].message.content`, `usage`, structured output through
`response_format`, and the failures a real server gives (429 with retry-after, 500, 401, 404 for
an unknown model, 400 for a server without structured output). Not a mock of the client: the
official `openai` client talks to it over a socket."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "fake-llm-7b"
RETURNED = "fake-llm-7b-2026-11-30"

# A script answers one request: (status, headers, body) from the request's JSON.
Script = Callable[[dict[str, Any], int], tuple[int, dict[str, str], dict[str, Any]]]


def completion(
    content: str, *, model: str = RETURNED, tokens: tuple[int, int] = (900, 40)
) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{int(time.time() * 1000)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": tokens[0],
            "completion_tokens": tokens[1],
            "total_tokens": sum(tokens),
        },
    }


def error(
    status: int, message: str, kind: str = "invalid_request_error"
) -> tuple[int, dict[str, str], dict[str, Any]]:
    return status, {}, {"error": {"message": message, "type": kind, "param": None, "code": None}}


def title_of(request: dict[str, Any]) -> str:
    """The issue title in the user message ("# Issue: <title>")."""
    user = next(m["content"] for m in request["messages"] if m["role"] == "user")
    return user.split("\n", 1)[0].removeprefix("# Issue: ")


class FakeLLM:
    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                fake.requests.append(body)
                fake.headers.append(dict(self.headers))
                if self.path.rstrip("/") != "/v1/chat/completions":
                    status, headers, payload = error(404, f"no route {self.path}")
                elif body.get("model") != MODEL:
                    status, headers, payload = error(
                        404, f"The model `{body.get('model')}` does not exist", "not_found_error"
                    )
                else:
                    status, headers, payload = fake.script(body, len(fake.requests))
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> FakeLLM:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
