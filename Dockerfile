# One image for the Dask scheduler, the workers and the sweep runner: distributed needs the same
# software on all three, and the scheduler needs bokeh for the dashboard (a core dependency).
#
#   docker build --build-arg SROA_GIT_COMMIT=$(git rev-parse HEAD) -t sroa-dist:latest .
#   docker compose up --build -d       (see docker-compose.yml and deploy/README.md)
#
# No `# syntax=` line on purpose: it makes BuildKit fetch a frontend image from a registry before
# building, which fails on machines without registry access. SROA_BASE_IMAGE swaps the base for
# a locally built image with Python 3.11 on PATH as `python`/`pip` (deploy/test/compose-e2e.sh
# makes one from a Debian rootfs when no registry is reachable).
ARG SROA_BASE_IMAGE=python:3.11-slim
FROM ${SROA_BASE_IMAGE}

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    MPLBACKEND=Agg

# Fixed UID/GID 1000 so bind-mounted certificates and result directories can be owned to match.
RUN groupadd --gid 1000 sroa \
    && useradd --uid 1000 --gid sroa --create-home --shell /usr/sbin/nologin sroa

WORKDIR /opt/sroa
# The dependencies first, in a layer keyed on pyproject.toml alone (an empty stand-in package
# takes the project's place): a change to the code or the README then rebuilds in seconds
# instead of reinstalling dask, scipy and the rest, about 100 s. s3fs for s3:// stores; bokeh
# (dashboard), dask/distributed, zarr, xarray come with the project. SROA_EXTRAS adds extras:
# "s3,gpu" is the GPU workers' image (docker-compose.gpu.yml: CuPy and its CUDA libraries).
ARG SROA_EXTRAS=s3
COPY pyproject.toml ./
RUN mkdir sroa_dist && touch sroa_dist/__init__.py README.md \
    && pip install ".[${SROA_EXTRAS}]" \
    && pip uninstall --yes sroa-dist \
    && rm -rf sroa_dist README.md build ./*.egg-info
COPY README.md ./
COPY sroa_dist ./sroa_dist
RUN pip install --no-deps . \
    && rm -rf build ./*.egg-info \
    && python -c "import sroa_dist, sroa_dist.cli, bokeh, distributed, s3fs, zarr, xarray"
COPY sweeps ./sweeps
COPY deploy/docker/healthcheck.py deploy/docker/s3_bucket.py /usr/local/lib/sroa/

# /results is the mount point of the shared results volume; a fresh named volume inherits this
# ownership, so the non-root user can write the cube.
RUN install -d -o sroa -g sroa /results
USER sroa:sroa

# Provenance: the image has no .git, so the cube's `git_commit` attr comes from this build arg
# (docker build --build-arg SROA_GIT_COMMIT=$(git rev-parse HEAD) .).
ARG SROA_GIT_COMMIT=unknown
ENV SROA_GIT_COMMIT=${SROA_GIT_COMMIT}

EXPOSE 8786 8787
# Probes the Dask HTTP server's /health (the scheduler dashboard on 8787 unless SROA_HEALTH_URL
# says otherwise); docker-compose.yml disables it for workers and the runner.
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "/usr/local/lib/sroa/healthcheck.py"]
CMD ["dask", "scheduler"]
