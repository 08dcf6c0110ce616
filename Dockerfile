# The operator image: `cpo run` as UID 65532 on a read-only root filesystem
# (config/manager/manager.yaml). Build:  docker build -t controlplane-operator:latest .
# Without a registry, give both bases as build arguments: hack/image makes them from Debian's
# packages and builds with --build-arg BUILD_IMAGE=... --build-arg RUNTIME_IMAGE=...
# (docs/operations.md, "Building and running the image").
#
# Two stages. The first has a compiler and pip: it builds the operator and every dependency into
# wheels and installs them into a virtual environment. The second is the slim Python image with
# pip, setuptools and wheel removed, which receives only that environment: no compiler, no package
# manager for Python, no source tree.

# The bases. The RUN steps below work on both kinds: the official Python images (Python in
# /usr/local, pip installed) and a plain Debian bookworm with Debian's python3 (python3-venv in the
# build base; no pip module, PEP 668's EXTERNALLY-MANAGED marker; Python in /usr). The two must
# carry the same Python at the same path: the environment's interpreter is a link to it.
ARG BUILD_IMAGE=python:3.11-bookworm
ARG RUNTIME_IMAGE=python:3.11-slim-bookworm

FROM ${BUILD_IMAGE} AS build

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /src
# The product and nothing else: runtime/, api/, controllers/, webhooks/, cli/ and the metadata
# (the API-server stand-in and the local machine provider are development tools, left out by
# .dockerignore).
COPY pyproject.toml README.md ./
COPY runtime ./runtime
COPY api ./api
COPY controllers ./controllers
COPY webhooks ./webhooks
COPY cli ./cli
# pip runs from a throw-away environment of this stage (a Debian base has no pip module and
# refuses installs into its own Python), and is used on the product's environment from outside.
RUN python3 -m venv /opt/pip \
    && /opt/pip/bin/pip wheel --wheel-dir /wheels '.[uvloop]'
# --without-pip: the environment copied into the runtime stage has no pip of its own either.
RUN python3 -m venv --without-pip /opt/cpo \
    && /opt/pip/bin/pip --python /opt/cpo/bin/python install --no-index --find-links /wheels 'controlplane-operator[uvloop]' \
    && /opt/cpo/bin/python -m compileall -q /opt/cpo/lib

# Same Python build as the first stage (same tag, slim variant), so the environment's interpreter
# link resolves.
FROM ${RUNTIME_IMAGE}

# The official image has pip, setuptools and wheel installed, and ensurepip's bundled pip wheel;
# a Debian python3-only base has none of them. No pip of any kind stays in the image.
RUN if python3 -m pip --version >/dev/null 2>&1; then python3 -m pip uninstall --yes pip setuptools wheel; fi \
    && rm -rf /usr/local/lib/python3.*/ensurepip/_bundled /usr/lib/python3.*/ensurepip/_bundled /root/.cache

COPY --from=build /opt/cpo /opt/cpo

# PYTHONDONTWRITEBYTECODE: the root filesystem is read-only (the bytecode was compiled above).
# HOME points at a folder that does not exist: `cpo run` writes nothing there, and must not.
ENV PATH=/opt/cpo/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/nonexistent

# A numeric UID, so the kubelet can check runAsNonRoot without reading /etc/passwd (distroless's
# "nonroot" user; no passwd entry needed).
USER 65532:65532
WORKDIR /

# Ports: 9443 webhooks, 8443 metrics (HTTPS), 8081 probes (the `cpo run` defaults).
EXPOSE 9443 8443 8081
ENTRYPOINT ["cpo", "run"]
