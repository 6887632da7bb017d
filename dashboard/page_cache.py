"""The page itself, built once: Gradio renders the dashboard's HTML (its configuration of some 200
components with each tab's first view, and its API description) afresh for every GET, most of
the server's CPU for a student opening the page (docs/performance.md). Every student gets the
same page, so this ASGI middleware keeps the first answer for each address the page is reached
by and sends it again.

    demo.launch(app_kwargs={"middleware": [Middleware(PageCache)]})    # app.py does this

A link's query string does not change the page (the browser reads it: dashboard.links), so it is
not part of the key. Only a plain 200 answer without cookies is kept, at most `MAX_PAGES` of them.
"""

from __future__ import annotations

import threading

MAX_PAGES = 16  # distinct addresses (host, proxy headers) kept; beyond, pages are built again
# the request headers Gradio reads to write the page's own address into it
KEY_HEADERS = (b"host", b"x-forwarded-host", b"x-forwarded-proto", b"x-forwarded-prefix", b"accept-encoding")


class PageCache:
    """ASGI middleware: GET `paths` answered from the first response for the same address."""

    def __init__(self, app, paths: tuple[str, ...] = ("/",)):
        self.app, self.paths = app, paths
        self.pages: dict[tuple, tuple[dict, bytes]] = {}
        self._lock = threading.Lock()
        self.built = self.served = 0  # pages built by Gradio, pages sent from here

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope.get("method") != "GET" or scope.get("path") not in self.paths:
            return await self.app(scope, receive, send)
        headers = dict(scope.get("headers") or [])
        key = (scope["path"], scope.get("scheme"), scope.get("root_path"), *(headers.get(h) for h in KEY_HEADERS))
        with self._lock:
            kept = self.pages.get(key)
        if kept is not None:
            start, body = kept
            self.served += 1
            await send(start)
            await send({"type": "http.response.body", "body": body})
            return None
        start, parts = {}, []

        async def keep(message):
            if message["type"] == "http.response.start":
                start.update(message)
            elif message["type"] == "http.response.body":
                parts.append(message.get("body", b""))
            await send(message)

        await self.app(scope, receive, keep)
        self.built += 1
        cookies = any(name.lower() == b"set-cookie" for name, _ in start.get("headers", []))
        if start.get("status") == 200 and not cookies:
            with self._lock:
                if len(self.pages) < MAX_PAGES:
                    self.pages[key] = (dict(start), b"".join(parts))
        return None
