# The operator image: `cpo run` as a non-root user (config/manager/manager.yaml runs it with a
# read-only root filesystem).  Build:  docker build -t controlplane-operator:latest .
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /src
# The product and nothing else: runtime/, api/, controllers/, webhooks/, cli/ and the metadata
# (the API-server stand-in and the local machine provider are development tools, left out).
COPY pyproject.toml README.md ./
COPY runtime ./runtime
COPY api ./api
COPY controllers ./controllers
COPY webhooks ./webhooks
COPY cli ./cli
RUN pip install .[uvloop] && rm -rf /src

# A numeric UID, so the kubelet can check runAsNonRoot without reading /etc/passwd.
RUN useradd --uid 65532 --no-create-home --shell /usr/sbin/nologin cpo
USER 65532:65532
WORKDIR /

# Ports: 9443 webhooks, 8080 metrics, 8081 probes (the `cpo run` defaults).
EXPOSE 9443 8080 8081
ENTRYPOINT ["cpo", "run"]
