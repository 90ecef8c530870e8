# The image heron.mcp.Computer runs by default (image="heron-sandbox:latest"): Python with
# Heron installed, so `python -m heron.mcp serve` can serve tools inside the container.
# Build it from the repository root:
#     docker build -f docker/sandbox.Dockerfile -t heron-sandbox:latest .
FROM python:3.11-slim

# llama-cpp-python (a Heron dependency) compiles llama.cpp from source.
RUN apt-get update \
    && apt-get install -y --no-install-recommends build-essential cmake \
    && rm -rf /var/lib/apt/lists/*

COPY pyproject.toml README.md /opt/heron/
COPY src /opt/heron/src
RUN pip install --no-cache-dir /opt/heron \
    && apt-get purge -y build-essential cmake && apt-get autoremove -y

# Computer mounts the job's folder here and a socket folder at /run/heron.
WORKDIR /workspace

# Computer runs the container as the host user (uid:gid) on a rootful engine, so the
# socket and the files written to /workspace are theirs; such a user has no home here.
ENV HOME=/tmp
