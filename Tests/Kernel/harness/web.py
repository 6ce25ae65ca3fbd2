"""A web server and a client for the kernel suite: plain HTTP on one port and HTTPS on another
(a certificate made with openssl for the test), and fetches of URLs, each one's status.

    web.py serve --http PORT --https PORT --dir DIR --ready FILE
    web.py fetch URL...     (prints [[URL, STATUS or the error], ...] as JSON)
"""

from __future__ import annotations

import argparse
import http.server
import json
import ssl
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path


class Answer(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = f"you asked for {self.path}\n".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args) -> None:
        pass


def serve(args) -> None:
    directory = Path(args.dir)
    key, certificate = directory / "web.key", directory / "web.crt"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-subj", "/CN=web.linkcond.test", "-days", "1", "-keyout", str(key), "-out", str(certificate)],
                   check=True, capture_output=True)
    plain = http.server.ThreadingHTTPServer(("0.0.0.0", args.http), Answer)
    secure = http.server.ThreadingHTTPServer(("0.0.0.0", args.https), Answer)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certificate, key)
    secure.socket = context.wrap_socket(secure.socket, server_side=True)
    threading.Thread(target=secure.serve_forever, daemon=True).start()
    Path(args.ready).touch()
    plain.serve_forever()


def fetch(args) -> None:
    unverified = ssl._create_unverified_context()
    results = []
    for url in args.urls:
        try:
            with urllib.request.urlopen(url, timeout=10, context=unverified if url.startswith("https:") else None) as answer:
                answer.read()
                results.append([url, answer.status])
        except OSError as error:
            results.append([url, str(error)])
    print(json.dumps(results))


def main() -> None:
    parser = argparse.ArgumentParser()
    modes = parser.add_subparsers(dest="mode", required=True)
    s = modes.add_parser("serve")
    s.add_argument("--http", type=int, required=True)
    s.add_argument("--https", type=int, required=True)
    s.add_argument("--dir", required=True)
    s.add_argument("--ready", required=True)
    f = modes.add_parser("fetch")
    f.add_argument("urls", nargs="+")
    args = parser.parse_args()
    {"serve": serve, "fetch": fetch}[args.mode](args)


if __name__ == "__main__":
    sys.exit(main())
