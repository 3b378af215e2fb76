# syntax=docker/dockerfile:1
#
# The askbridge image: one static binary, /askbridge, on distroless (no
# shell, no package manager), running as uid 65532. docs/deployment.md has
# the `docker run` line; deploy/dockerfile_test.go checks this file.
#
#   docker build --build-arg VERSION=$(git describe --tags --always) -t askbridge .
#
# Both base images are pinned by digest: a rebuild of an old commit gets the
# same bases, and a base changes only in a commit that says so. To move one,
# bump the tag and its digest together; the current digest of a tag is
#   docker buildx imagetools inspect <image:tag>    (or: crane digest <image:tag>)

# golang:1.27.2-bookworm, the 1.27-bookworm line. The toolchain that builds
# is the one go.mod names (GOTOOLCHAIN=auto fetches it through the module
# proxy when it is newer than the image's): its standard library has the
# security fixes the image's may lack.
FROM golang:1.27.2-bookworm@sha256:5cf287a799e6b94384bad13d16b14904c531f51ba65792237e122ce42b392f61 AS build
ENV GOTOOLCHAIN=auto CGO_ENABLED=0
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/askbridge ./cmd/bridge

# gcr.io/distroless/static-debian12:nonroot: CA certificates and tzdata, for
# the platforms' HTTPS APIs and rediss://.
FROM gcr.io/distroless/static-debian12:nonroot@sha256:afa5c872c891853ca7fcf1f12c3edb23f7eeef36189728842dd51042ff57f7ab
COPY --from=build /out/askbridge /askbridge
# Listen on every interface of the container, where a published port or a
# Service reaches it. Beyond loopback the bridge requires ASKUSER_HTTP_TOKEN
# (or ASKUSER_HTTP_TOKEN_FILE) and refuses to start without it.
ENV ASKUSER_HTTP_ADDR=0.0.0.0:8080
EXPOSE 8080
# Numeric, so Kubernetes' runAsNonRoot can check it: distroless's nonroot.
USER 65532:65532
# /healthz on ASKUSER_HTTP_ADDR, asked by the binary itself (there is no
# curl here).
HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 CMD ["/askbridge", "healthcheck"]
ENTRYPOINT ["/askbridge"]
