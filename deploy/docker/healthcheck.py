"""Container health probe: GET a Dask HTTP ``/health`` endpoint, exit 0 when it answers "ok".

Stdlib only. The URL is ``SROA_HEALTH_URL`` (default: the scheduler dashboard on port 8787).
"""

from __future__ import annotations

import os
import sys
import urllib.request

URL = os.environ.get("SROA_HEALTH_URL", "http://127.0.0.1:8787/health")
TIMEOUT = float(os.environ.get("SROA_HEALTH_TIMEOUT", "4"))


def main() -> int:
    try:
        with urllib.request.urlopen(URL, timeout=TIMEOUT) as r:
            body = r.read(64).strip()
            status = r.status
    except OSError as exc:
        print(f"healthcheck: {URL}: {exc}", file=sys.stderr)
        return 1
    if status != 200 or body != b"ok":
        print(f"healthcheck: {URL}: expected 200 'ok', received {status} {body!r}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
