# The operator image: `cpo run` as UID 65532 on a read-only root filesystem
# (config/manager/manager.yaml). Build:  docker build -t controlplane-operator:latest .
#
# Without a registry, give both bases as build arguments: hack/image makes them from Debian's
# packages, shaped like these two (`python` and `pip` in the first, a removable pip in the second),
# and builds with --build-arg BUILD_IMAGE=... --build-arg RUNTIME_IMAGE=...
# (docs/operations.md, "Building and running the image").
#
# Two stages. The first has a compiler and pip: it builds the operator and every dependency into
# wheels and installs them into a virtual environment. The second is the slim Python image with
# pip, setuptools and wheel removed, which receives only that environment: no compiler, no package
# manager for Python, no source tree.

# The two must carry the same Python at the same path: the environment's interpreter is a link to it.
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
RUN pip wheel --wheel-dir /wheels '.[uvloop]'
# --without-pip: the environment copied into the runtime stage has no pip of its own either.
RUN python -m venv --without-pip /opt/cpo \
    && pip --python /opt/cpo/bin/python install --no-index --find-links /wheels 'controlplane-operator[uvloop]' \
    && /opt/cpo/bin/python -m compileall -q /opt/cpo/lib

# Same Python build as the first stage (same tag, slim variant), so the environment's interpreter
# link resolves.
FROM ${RUNTIME_IMAGE}

RUN python -m pip uninstall --yes pip setuptools wheel \
    && rm -rf /root/.cache

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
