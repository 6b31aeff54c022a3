"""Create the bucket of an ``s3://`` store URL if it is missing, waiting for the server first.

    python s3_bucket.py s3://sroa-results/smoke-figure2.zarr  [--wait SECONDS]

Endpoint and credentials come from the environment that botocore/s3fs read (``AWS_ENDPOINT_URL``,
``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_DEFAULT_REGION``), the same variables the
workers and the runner use to write the cube.
"""

from __future__ import annotations

import argparse
import sys
import time


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("url", help="s3://BUCKET[/key...]")
    p.add_argument("--wait", type=float, default=60.0, help="seconds to wait for the server")
    args = p.parse_args(argv)
    if not args.url.startswith("s3://"):
        print(f"s3_bucket: expected an s3:// URL; received {args.url!r}", file=sys.stderr)
        return 2
    bucket = args.url[len("s3://") :].split("/", 1)[0]
    import s3fs

    deadline = time.monotonic() + args.wait
    while True:
        fs = s3fs.S3FileSystem(skip_instance_cache=True)
        try:
            if not fs.exists(bucket):
                fs.mkdir(bucket)
                print(f"s3_bucket: created bucket {bucket}")
            else:
                print(f"s3_bucket: bucket {bucket} exists")
            return 0
        except Exception as exc:  # server not up yet: botocore/aiohttp connection errors, 5xx
            if time.monotonic() > deadline:
                msg = f"s3_bucket: no S3 server answered within {args.wait} s: {exc}"
                print(msg, file=sys.stderr)
                return 1
            time.sleep(1.0)


if __name__ == "__main__":
    sys.exit(main())
