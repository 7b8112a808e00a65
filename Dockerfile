# syntax=docker/dockerfile:1
# The extdns image, for linux/amd64 and linux/arm64 (`docker buildx build --platform linux/amd64,linux/arm64`).
# The builder runs on the build machine's own platform and builds the target's binary with `cargo xtask dist
# --arch $TARGETARCH` (static, LTO, stripped; Debian's cross gcc for the other architecture, installed by
# xtask; linux/amd64 laid out by the profile `cargo xtask dist --pgo` trained, when `cargo xtask image` put one in
# the context and passed the RUST_VERSION that recorded it); the image is distroless static, which carries CA
# certificates and nothing else, run as 65532.
# `cargo xtask image` checks this file and writes the build context. Published as
# ghcr.io/extdns/extdns:v<version>, the name the chart (charts/extdns) and deploy/ use; EXTDNS_VERSION is the
# workspace's version (crates/extdns/tests/deploy.rs holds the two together).
ARG RUST_VERSION=1.94
ARG EXTDNS_VERSION=0.1.0

FROM --platform=$BUILDPLATFORM docker.io/library/rust:${RUST_VERSION}-bookworm AS build
ARG TARGETARCH
ARG EXTDNS_REVISION=unknown
ENV EXTDNS_REVISION=${EXTDNS_REVISION}
WORKDIR /src
COPY . .
RUN cargo xtask dist --arch ${TARGETARCH}

FROM gcr.io/distroless/static-debian12:nonroot
ARG TARGETARCH
ARG EXTDNS_VERSION
ARG EXTDNS_REVISION=unknown
LABEL org.opencontainers.image.title="extdns" \
      org.opencontainers.image.description="Keeps DNS records in step with a Kubernetes cluster; a drop-in replacement for external-dns" \
      org.opencontainers.image.version="${EXTDNS_VERSION}" \
      org.opencontainers.image.revision="${EXTDNS_REVISION}" \
      org.opencontainers.image.ref.name="ghcr.io/extdns/extdns:v${EXTDNS_VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /src/dist/linux-${TARGETARCH}/extdns /extdns
USER 65532:65532
ENTRYPOINT ["/extdns"]
