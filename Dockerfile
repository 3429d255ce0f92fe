# The gangsched image: `gangsched run` from the project's wheel, as a non-root user, on a read-only root
# filesystem (deploy/30-deployment.yaml sets readOnlyRootFilesystem). Build: docker build -t gangsched:0.1.0 .
# Stage 1 builds the wheel from the source tree; stage 2 installs only that wheel and its dependencies.
FROM python:3.12-slim-bookworm AS wheel
WORKDIR /src
COPY pyproject.toml README.md ./
COPY src ./src
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .

FROM python:3.12-slim-bookworm
# No .pyc written at run time (the root filesystem is read-only; pip compiled them at install), logs unbuffered.
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PATH=/opt/gangsched/bin:$PATH
COPY --from=wheel /wheels /wheels
RUN python -m venv /opt/gangsched \
    && /opt/gangsched/bin/pip install --no-cache-dir /wheels/*.whl \
    && rm -rf /wheels
# 65532: the conventional "nonroot" id of distroless images; no home, no shell login, owns nothing.
USER 65532:65532
EXPOSE 10261
ENTRYPOINT ["gangsched"]
CMD ["run", "--bind-address=0.0.0.0", "--metrics-port=10261"]
