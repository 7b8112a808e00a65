# syntax=docker/dockerfile:1
# The extdns image: built with the workspace's toolchain by `cargo xtask dist` (static, LTO, stripped, its
# --version checked), run as the non-root user 65532 on distroless static, which carries CA certificates and
# nothing else. `cargo xtask image` checks this file and writes the build context.
ARG RUST_VERSION=1.94

FROM docker.io/library/rust:${RUST_VERSION}-bookworm AS build
ARG EXTDNS_REVISION=unknown
ENV EXTDNS_REVISION=${EXTDNS_REVISION}
WORKDIR /src
COPY . .
RUN cargo xtask dist

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /src/dist/extdns /extdns
USER 65532:65532
ENTRYPOINT ["/extdns"]
