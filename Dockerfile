# muxgate container image.
#
#   docker build -t muxgate .
#   docker run -p 127.0.0.1:8767:8767 -e MUXGATE_AUTH__SECRET=... muxgate
#
# Stage 1 builds the release binary with the official Rust image; stage 2 is Debian slim with
# tmux, tini, bubblewrap (workspace mode) and the binary, running as the non-root user
# `muxgate` (uid 10001) whose login shell is bash (tmux panes start the user's shell; with
# nologin they would exit at once). Workspace mode needs the runtime to let bubblewrap mount a
# /proc (podman: --security-opt unmask=ALL; see README: Container).
# The build uses cache mounts (`RUN --mount=type=cache`): Docker with BuildKit (the default since
# Docker 23) or podman/buildah.
# Both stages are bookworm so the binary's glibc matches. The base images are build arguments
# so that a mirror or a pinned digest can be substituted without editing this file.
ARG RUST_IMAGE=rust:1.95-bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim

FROM ${RUST_IMAGE} AS builder
WORKDIR /src
# No debug info in the image's binary (backtraces still name functions): a quarter of the size,
# and a faster build.
ENV CARGO_PROFILE_RELEASE_DEBUG=0 \
    CARGO_PROFILE_RELEASE_STRIP=debuginfo
# The cargo registry and the target directory are build caches, not layers: a source change
# rebuilds only the crate itself, and the gigabyte of build output is never committed to an
# image layer (nor copied into one more blob on the way).
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked \
 && install -m 0755 target/release/muxgate /usr/local/bin/muxgate \
 && muxgate --version

FROM ${RUNTIME_IMAGE}
RUN apt-get update \
 && apt-get install -y --no-install-recommends tmux tini bubblewrap ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --uid 10001 --create-home --shell /bin/bash muxgate
COPY --from=builder /usr/local/bin/muxgate /usr/local/bin/muxgate
COPY deploy/container/config.toml /etc/muxgate/config.toml
ENV MUXGATE_CONFIG=/etc/muxgate/config.toml \
    SHELL=/bin/bash
USER muxgate
WORKDIR /home/muxgate
EXPOSE 8767
# The image has no curl: the binary is its own probe (GET /healthz on the configured port).
HEALTHCHECK --interval=30s --timeout=5s --start-period=5s --retries=3 \
    CMD ["muxgate", "healthcheck"]
# tini reaps the tmux server processes that the gateway and its panes start; muxgate handles
# SIGTERM itself (graceful shutdown within http.shutdown_grace_secs).
ENTRYPOINT ["/usr/bin/tini", "--", "muxgate"]
CMD ["serve"]
