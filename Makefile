# FlightFeed — build, generate and test.
#
#   make demo   helm install the operator on a local single-node Kubernetes
#               cluster and run one feed end to end (see README); make demo-down
#   make test   unit + integration tests against real PostgreSQL, MariaDB,
#               a kfake Kafka broker and an envtest control plane, then the
#               end-to-end test on the local cluster
#   make test-short  the same Go tests with -short: the end-to-end, crash,
#               failover and fault tests skip (no vet, lint or cluster)
#   make reliability  the reliability suite (docs/reliability.md) in full: the binary
#               built with `-tags reliability` crashed at every fail point
#               several times per point, and the other scenarios under
#               internal/reliability; prints one summary line per scenario.
#               `make test` runs the same suite bounded (one crash per point)

SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c

# Tools are built once and cached outside the repository, keyed by version.
CACHE ?= $(or $(FLIGHTFEED_CACHE),$(HOME)/.cache/flightfeed)
CONTROLLER_TOOLS_VERSION ?= v0.23.0
GOLANGCI_LINT_VERSION ?= v2.15.0
CONTROLLER_GEN ?= $(CACHE)/tools/controller-gen-$(CONTROLLER_TOOLS_VERSION)/controller-gen
GOLANGCI_LINT ?= $(CACHE)/tools/golangci-lint-$(GOLANGCI_LINT_VERSION)/golangci-lint

IMG ?= flightfeed:dev
# `make image`: the OCI archive of the operator's image (no Docker engine) and
# the file naming its reference (flightfeed:dev-<content digest>).
IMAGE_ARCHIVE ?= bin/flightfeed-image.tar
IMAGE_REF ?= bin/flightfeed-image.ref
IMAGE_BINARY ?= bin/linux/flightfeed
IMAGE_TAG ?= auto

# The version and commit every build stamps into internal/buildinfo
# (`flightfeed version`, `kubectl flightfeed version`, flightfeed_build_info).
# A development build says git describe; `make release VERSION=x.y.z` says
# the release's. A commit with uncommitted changes on top is COMMIT-dirty.
ifeq ($(origin VERSION),undefined)
VERSION := $(shell git describe --tags --always --dirty 2>/dev/null || echo unknown)
endif
ifeq ($(origin COMMIT),undefined)
COMMIT := $(shell c=$$(git rev-parse HEAD 2>/dev/null) || { echo unknown; exit; }; [ -z "$$(git status --porcelain 2>/dev/null)" ] && echo $$c || echo $$c-dirty)
endif
BUILDINFO := github.com/flightfeed/flightfeed/internal/buildinfo
STAMP := -X $(BUILDINFO).version=$(VERSION) -X $(BUILDINFO).revision=$(COMMIT)
# Where `make plugin-dist` and `make release` write.
DIST ?= dist

.PHONY: all
all: build

##@ Development

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate CRDs and RBAC into config/.
	$(CONTROLLER_GEN) rbac:roleName=flightfeed-manager crd paths="./api/...;./controllers/..." \
		output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac
	# The pump pods' rights without resource names (the operator renders
	# them per feed with names; a test checks the two agree).
	$(CONTROLLER_GEN) rbac:roleName=flightfeed-pump paths="./internal/pumppod/..." output:rbac:artifacts:config=config/rbac/pump
	# The chart ships copies; hack/helm-check.sh fails when they drift.
	cp config/crd/bases/*.yaml charts/flightfeed/files/crds/ && cp config/rbac/role.yaml charts/flightfeed/files/rbac/ && \
		cp config/rbac/pump/role.yaml charts/flightfeed/files/rbac/pump-role.yaml

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate DeepCopy methods.
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./api/..."

.PHONY: fmt
fmt: ## go fmt.
	go fmt ./...

.PHONY: vet
vet: ## go vet.
	go vet ./...

.PHONY: lint
lint: $(GOLANGCI_LINT) ## golangci-lint with the repository's configuration.
	$(GOLANGCI_LINT) run --allow-parallel-runners ./...

.PHONY: verify-generated
verify-generated: generate manifests ## Fail when generated files are out of date.
	@git diff --exit-code -- api config charts || { echo "generated files are stale: run 'make generate manifests' and commit" >&2; exit 1; }

.PHONY: docs
docs: ## Regenerate docs/configuration.md's CRD reference and docs/architecture.svg from their sources (tests fail when either is stale).
	go run ./hack/crddocs
	go run ./hack/archsvg

.PHONY: test
test: ## Everything: services, envtest assets, Kafka test broker, vet, lint, tests.
	bash hack/test.sh

.PHONY: test-short
test-short: ## The fast lane: go test -short, no process kills or multi-second timers (about 75 s warm on 2 cores).
	bash hack/test-env.sh go test -short -count=1 ./...

# The reliability suite's figures: one line per scenario (check.SummaryEnv).
RELIABILITY_SUMMARY ?= bin/reliability-summary.txt

.PHONY: reliability
reliability: ## The reliability suite in full mode (build tag reliability, FLIGHTFEED_RELIABILITY=full): crashes at every fail point, faults; one summary line per scenario.
	@mkdir -p $(dir $(RELIABILITY_SUMMARY)) && rm -f $(RELIABILITY_SUMMARY)
	FLIGHTFEED_RELIABILITY=full FLIGHTFEED_RELIABILITY_SUMMARY=$(abspath $(RELIABILITY_SUMMARY)) \
		bash hack/test-env.sh go test -tags reliability -count=1 -v -timeout 60m ./internal/failpoint/ ./internal/reliability/...
	@echo "== reliability summary ($(RELIABILITY_SUMMARY))" && cat $(RELIABILITY_SUMMARY)

.PHONY: helm-check
helm-check: ## helm lint + template, accepted by a real API server (helm pinned, cached).
	bash hack/helm-check.sh

.PHONY: bench
bench: build ## The end-to-end benchmark: the built binary drains a RESP and FLOP backlogs to Kafka, with CPU seconds by process (hack/bench/e2e; about 1 min).
	go run ./hack/bench/e2e -bin bin/flightfeed $(BENCH_ARGS)

.PHONY: bench-compare
bench-compare: build ## The binary against a baseline (BASELINE=rev; default the previous release commit), drain by drain in alternation, medians and ratios (hack/bench/baseline.sh; about 3 min).
	go run ./hack/bench/e2e -bin bin/flightfeed -baseline "$$(bash hack/bench/baseline.sh $(BASELINE))" -backlogs 10000 $(BENCH_ARGS)

.PHONY: bench-compare-resp
bench-compare-resp: build ## Full-day RESPs (2,000 and 9,999 flights) of the binary against a baseline (BASELINE=rev), in alternation on fresh databases, medians and ratios of time, CPU and peak RSS (about 2 min).
	go run ./hack/bench/e2e -bin bin/flightfeed -baseline "$$(bash hack/bench/baseline.sh $(BASELINE))" -backlogs= -latency=0 $(BENCH_ARGS)

.PHONY: bench-sweep
bench-sweep: build ## Full-day RESP time against flight count, 500 to 9,999 (Markdown table; chart hack/bench/performance.svg; about 2 min).
	go run ./hack/bench/e2e -bin bin/flightfeed -backlogs= -latency=0 -big-flights=0 \
		-sweep 500,1000,2000,4000,6000,8000,9999 -chart hack/bench/performance.svg $(BENCH_ARGS)

.PHONY: bench-operator
bench-operator: build ## The control plane's memory from 1 to 50 FlightFeeds, a pump pod's floor and an idle feed's leader and standby CPU (envtest; about 3 min; BENCH_ARGS='-baseline BIN -rounds 2' compares).
	KUBEBUILDER_ASSETS=$$(bash hack/envtest-assets.sh) go run ./hack/bench/operator -bin bin/flightfeed $(BENCH_ARGS)

.PHONY: mutate
mutate: ## Mutation test of the decision packages (engine, snapshot, sis, config, the pump's failure matrix): score per package and every surviving mutant (hack/mutate; a few minutes; not part of make test).
	go run ./hack/mutate -o bin/mutate-report.txt $(MUTATE_ARGS)

.PHONY: test-unit
test-unit: ## Pure packages only (no services needed).
	go test ./internal/flight/... ./internal/sis/... ./internal/engine/... ./internal/config/...

##@ Build

.PHONY: build
build: ## Build bin/flightfeed (stamped with VERSION and COMMIT).
	go build -ldflags "$(STAMP)" -o bin/flightfeed .

PLUGIN_PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64

.PHONY: plugin
plugin: ## Build the kubectl plugin: bin/kubectl-flightfeed (its own binary, cmd/kubectl-flightfeed) and bin/kubectl_complete-flightfeed (shell completion for kubectl).
	@# Earlier releases had a symlink to bin/flightfeed here: replace it, never write through it.
	rm -f bin/kubectl-flightfeed
	go build -ldflags "$(STAMP)" -o bin/kubectl-flightfeed ./cmd/kubectl-flightfeed
	install -m 0755 cmd/kubectl-flightfeed/kubectl_complete-flightfeed bin/kubectl_complete-flightfeed

# The release tool that packs the plugin's archives (hack/release.sh passes
# the one it built).
RELEASE_TOOL ?= go run ./hack/release

.PHONY: plugin-dist
plugin-dist: ## The plugin's release archives for krew (dist/kubectl-flightfeed_OS_ARCH.tar.gz: the plugin, its completion script except on windows, LICENSE; and their sha256; hack/krew/flightfeed.yaml names them).
	@mkdir -p $(DIST)
	@for p in $(PLUGIN_PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; ext=; [ $$os = windows ] && ext=.exe; d=$(DIST)/kubectl-flightfeed_$${os}_$${arch}; \
		rm -rf $$d && mkdir -p $$d && \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch go build -trimpath -ldflags="-s -w $(STAMP)" -o $$d/kubectl-flightfeed$$ext ./cmd/kubectl-flightfeed && \
		$(RELEASE_TOOL) archive -os $$os -arch $$arch -binary $$d/kubectl-flightfeed$$ext -dist $(DIST) && rm -rf $$d || exit 1; \
	done

.PHONY: image
image: ## The operator's OCI image as an OCI archive, without a Docker engine (the Dockerfile's equivalent).
	@[ -s /etc/ssl/certs/ca-certificates.crt ] || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ca-certificates >/dev/null; }
	CGO_ENABLED=0 go build -trimpath -ldflags="-s -w $(STAMP)" -o $(IMAGE_BINARY) .
	go run ./hack/image -binary $(IMAGE_BINARY) -path /flightfeed -name flightfeed -tag $(IMAGE_TAG) \
		-ca /etc/ssl/certs/ca-certificates.crt -user 65532:65532 -cmd manager -ports 8080,8081,8082 \
		-labels 'org.opencontainers.image.title=flightfeed,org.opencontainers.image.version=$(VERSION),org.opencontainers.image.revision=$(COMMIT),org.opencontainers.image.source=https://github.com/flightfeed/flightfeed,org.opencontainers.image.licenses=Apache-2.0' \
		-out $(IMAGE_ARCHIVE) >$(IMAGE_REF)
	@echo "image $$(cat $(IMAGE_REF)) in $(IMAGE_ARCHIVE)"

.PHONY: demo
demo: build image plugin ## helm install on a local single-node cluster, one feed end to end, a takeover (README).
	bash hack/demo.sh

.PHONY: demo-down
demo-down: ## Stop the demo's broker and tear the local cluster down completely.
	bash hack/demo.sh down

.PHONY: demo-cli
demo-cli: build ## The quick path: one feed end to end with the CLI only, no Kubernetes.
	bash hack/demo-cli.sh

.PHONY: cluster-up
cluster-up: ## Bring up the local single-node cluster (builds it the first time); prints its kubeconfig.
	bash hack/cluster/up.sh

.PHONY: cluster-down
cluster-down: ## Tear the local cluster down: every process, mount, namespace, iptables chain.
	bash hack/cluster/down.sh

.PHONY: docker-build
docker-build: ## Build the container image for registries (needs a Docker engine; not run in CI), stamped with VERSION and COMMIT.
	docker build --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) -t $(IMG) .

.PHONY: release
release: ## Make a release into dist/ (VERSION=x.y.z required): the image's OCI archive, the chart package, the plugin archives and their krew manifest, an SBOM, SHA256SUMS (hack/release.sh; docs/development.md "Making a release").
	VERSION='$(VERSION)' DIST='$(DIST)' PLUGIN_PLATFORMS='$(PLUGIN_PLATFORMS)' bash hack/release.sh

##@ Tools

$(CONTROLLER_GEN):
	GOBIN=$(dir $@) go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION)

$(GOLANGCI_LINT):
	GOBIN=$(dir $@) go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)

.PHONY: help
help: ## Show targets.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*?##/ { printf "  %-18s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)
