# syntax=docker/dockerfile:1
# gcjob: runs as the CronJob in cronjobs/. Two stages: the build stage makes a virtualenv
# with gcjob and its dependencies from wheels; the final stage copies only that virtualenv
# onto the same slim base (no pip, no compiler, no build tools in the image).
# Reproducible: the dependencies and the build backend are installed exactly as
# requirements.lock pins them, by version and hash (docs/install.md says how to regenerate it,
# and how to check that two builds installed the same packages); pin the base by digest too
# (--build-arg PYTHON_IMAGE=python:3.11.7-slim-bookworm@sha256:...).

ARG PYTHON_IMAGE=python:3.11.7-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
RUN python -m venv /opt/gcjob
COPY requirements.lock ./
# Every dependency and the build backend (setuptools), at the locked versions, each file
# checked against its locked hash: nothing is resolved here.
RUN /opt/gcjob/bin/pip install --no-compile --require-hashes -r requirements.lock
COPY pyproject.toml README.md ./
COPY gcjob ./gcjob
# gcjob itself, from this source: no dependency resolved (--no-deps) and built with the locked
# setuptools (--no-build-isolation), since pip takes no hash for a local directory. The .pyc
# files are checked against their source's hash, not its time, so two builds write the same.
RUN /opt/gcjob/bin/pip install --no-compile --no-deps --no-build-isolation . \
    && /opt/gcjob/bin/pip uninstall --yes pip setuptools \
    && /opt/gcjob/bin/python -m compileall -q --invalidation-mode checked-hash /opt/gcjob/lib \
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
