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
# Dependencies first, in their own layer: a source change does not rebuild them. The stub
# sources only make the manifest buildable: cargo wants every target it names to exist, so a
# stub is made for each `[[bench]]` the manifest lists (read from it, so a new bench needs no
# edit here).
COPY Cargo.toml Cargo.lock ./
RUN mkdir -p src \
 && echo 'fn main() {}' > src/main.rs \
 && touch src/lib.rs \
 && for bench in $(sed -n '/^\[\[bench\]\]/,/^name/s/^name = "\(.*\)"/\1/p' Cargo.toml); do \
        mkdir -p "benches/$bench" && echo 'fn main() {}' > "benches/$bench/main.rs"; \
    done \
 && cargo build --release --locked \
 && rm -rf src benches
COPY . .
# The stubs' build is newer than the copied sources: make cargo rebuild the crate itself.
RUN touch src/main.rs src/lib.rs \
 && cargo build --release --locked \
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
