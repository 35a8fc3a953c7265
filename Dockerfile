# syntax=docker/dockerfile:1
# gcjob: runs as the CronJob in cronjobs/. Two stages: the build stage makes a virtualenv
# with gcjob and its dependencies from wheels; the final stage copies only that virtualenv
# onto the same slim base (no pip, no compiler, no build tools in the image).

ARG PYTHON_IMAGE=python:3.11.7-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
RUN python -m venv /opt/gcjob
COPY pyproject.toml README.md ./
COPY gcjob ./gcjob
RUN /opt/gcjob/bin/pip install --no-compile . \
    && /opt/gcjob/bin/pip uninstall --yes pip setuptools \
    && /opt/gcjob/bin/python -m compileall -q /opt/gcjob/lib \
    && /opt/gcjob/bin/gcjob --version

FROM ${PYTHON_IMAGE}
ARG VERSION=0.1.0
ARG REVISION=unknown
LABEL org.opencontainers.image.title="gcjob" \
      org.opencontainers.image.description="Deletes what multi-cluster controllers leave behind on a Karmada hub" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.source="https://github.com/datum-cloud/gcjob"
COPY --from=build /opt/gcjob /opt/gcjob
ENV PATH=/opt/gcjob/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
# A numeric non-root user, so runAsNonRoot can be verified by the kubelet.
USER 10001:10001
ENTRYPOINT ["gcjob"]
CMD ["--help"]
