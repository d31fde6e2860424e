# FlightFeed — build, generate and test.
#
#   make demo   run one feed end to end on local services (see README)
#   make test   unit + integration tests against real PostgreSQL, MariaDB,
#               a kfake Kafka broker and an envtest control plane

SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c

# Tools are built once and cached outside the repository, keyed by version.
CACHE ?= $(or $(FLIGHTFEED_CACHE),$(HOME)/.cache/flightfeed)
CONTROLLER_TOOLS_VERSION ?= v0.23.0
GOLANGCI_LINT_VERSION ?= v2.15.0
CONTROLLER_GEN ?= $(CACHE)/tools/controller-gen-$(CONTROLLER_TOOLS_VERSION)/controller-gen
GOLANGCI_LINT ?= $(CACHE)/tools/golangci-lint-$(GOLANGCI_LINT_VERSION)/golangci-lint

IMG ?= flightfeed:dev

.PHONY: all
all: build

##@ Development

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate CRDs and RBAC into config/.
	$(CONTROLLER_GEN) rbac:roleName=flightfeed-manager crd paths="./api/...;./controllers/..." \
		output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac
	# The chart ships copies; hack/helm-check.sh fails when they drift.
	cp config/crd/bases/*.yaml charts/flightfeed/files/crds/ && cp config/rbac/role.yaml charts/flightfeed/files/rbac/

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

.PHONY: test
test: ## Everything: services, envtest assets, Kafka test broker, vet, lint, tests.
	bash hack/test.sh

.PHONY: helm-check
helm-check: ## helm lint + template, accepted by a real API server (helm pinned, cached).
	bash hack/helm-check.sh

.PHONY: test-unit
test-unit: ## Pure packages only (no services needed).
	go test ./internal/flight/... ./internal/sis/... ./internal/config/...

##@ Build

.PHONY: build
build: ## Build bin/flightfeed.
	go build -o bin/flightfeed .

.PHONY: demo
demo: build ## Run one feed end to end on local services.
	bash hack/demo.sh

.PHONY: docker-build
docker-build: ## Build the container image (needs a Docker engine; not run in CI).
	docker build -t $(IMG) .

##@ Tools

$(CONTROLLER_GEN):
	GOBIN=$(dir $@) go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION)

$(GOLANGCI_LINT):
	GOBIN=$(dir $@) go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)

.PHONY: help
help: ## Show targets.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*?##/ { printf "  %-18s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)
