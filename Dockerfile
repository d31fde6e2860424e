# syntax=docker/dockerfile:1
# Multi-stage build of the one flightfeed binary into a distroless, non-root
# image. The binary is static (CGO off) and carries the time zone database
# (main imports time/tzdata), so the base image needs nothing else; the
# manager writes no files, so the root filesystem can be read-only.
ARG GO_VERSION=1.26
# The version and commit the binary reports (`flightfeed version`,
# flightfeed_build_info): .git is not in the build context, so they come as
# build arguments (make docker-build passes them).
ARG VERSION=unknown
ARG COMMIT=unknown

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
ARG TARGETOS TARGETARCH VERSION COMMIT
WORKDIR /src
ENV CGO_ENABLED=0 GOFLAGS=-trimpath
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY main.go ./
COPY api/ api/
COPY controllers/ controllers/
COPY internal/ internal/
COPY migrations/ migrations/
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    GOOS=$TARGETOS GOARCH=$TARGETARCH go build -ldflags="-s -w -X github.com/flightfeed/flightfeed/internal/buildinfo.version=${VERSION} -X github.com/flightfeed/flightfeed/internal/buildinfo.revision=${COMMIT}" -o /out/flightfeed .

FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION COMMIT
LABEL org.opencontainers.image.title="flightfeed" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}" \
      org.opencontainers.image.source="https://github.com/flightfeed/flightfeed" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.description="FlightFeed: AODB SIS mailbox to PostgreSQL and Kafka, as a Kubernetes operator"
COPY --from=build /out/flightfeed /flightfeed
# 65532 is distroless's nonroot user; a numeric USER lets runAsNonRoot verify it.
USER 65532:65532
# metrics, probes, read API
EXPOSE 8080 8081 8082
ENTRYPOINT ["/flightfeed"]
CMD ["manager"]
