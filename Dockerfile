# syntax=docker/dockerfile:1
# Multi-stage build of the one flightfeed binary into a distroless, non-root
# image. The airport time zones are compiled in (time/tzdata), so the static
# base image needs nothing else.
FROM golang:1.26 AS build
WORKDIR /src
ENV CGO_ENABLED=0 GOFLAGS=-trimpath
COPY go.mod go.sum ./
RUN go mod download
COPY main.go ./
COPY api/ api/
COPY controllers/ controllers/
COPY internal/ internal/
COPY migrations/ migrations/
COPY hack/mailbox/ hack/mailbox/
RUN go build -ldflags="-s -w" -o /out/flightfeed .

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/flightfeed /flightfeed
USER 65532:65532
ENTRYPOINT ["/flightfeed"]
CMD ["manager"]
