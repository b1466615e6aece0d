# syntax=docker/dockerfile:1
# SPDX-License-Identifier: Apache-2.0

# Where the binary comes from: "source" builds it here from the checkout;
# "prebuilt" takes the one GoReleaser built for the target platform
# (.goreleaser.yaml), so a release's image holds the release's binary.
ARG BINARY=source

# Build a static binary with the module cache and build cache kept between
# builds.
FROM golang:1.26 AS source
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=devel
ARG REVISION=unknown
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/gpufleet ./cmd/gpufleet

FROM scratch AS prebuilt
ARG TARGETPLATFORM
COPY ${TARGETPLATFORM}/gpufleet /out/gpufleet

FROM ${BINARY} AS binary

# The runtime image holds the binary, CA certificates and git's needs only,
# and runs as an unprivileged user.
FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=devel
ARG REVISION=unknown
LABEL org.opencontainers.image.title="gpufleet" \
      org.opencontainers.image.description="GitOps reconciler for GPU fleets across AWS, Azure and GCP" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.source="https://github.com/gpufleet/gpufleet" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=binary /out/gpufleet /usr/local/bin/gpufleet
USER nonroot:nonroot
WORKDIR /home/nonroot
# By default the image is the scheduled agent: `gpufleet serve`, with its
# webhook, /metrics, /healthz and /readyz on 8080. Any other command runs
# by naming it: `docker run IMAGE reconcile --repo URL`.
ENTRYPOINT ["/usr/local/bin/gpufleet"]
CMD ["serve"]
EXPOSE 8080
# No HEALTHCHECK: distroless has no shell, curl or wget to run one, and
# gpufleet does not probe itself. Orchestrators probe /healthz (liveness)
# and /readyz (readiness) over HTTP instead, as examples/kubernetes does.
