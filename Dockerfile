# syntax=docker/dockerfile:1

# Build a static binary with the module cache and build cache kept between
# builds.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=devel
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/gpufleet ./cmd/gpufleet

# The runtime image holds the binary, CA certificates and git's needs only,
# and runs as an unprivileged user.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/gpufleet /usr/local/bin/gpufleet
USER nonroot:nonroot
WORKDIR /home/nonroot
ENTRYPOINT ["/usr/local/bin/gpufleet"]
CMD ["--help"]
