# The test command of the README is `make test`; `make help` lists the
# targets, each described by the "## " comment on its line.
GO        ?= go
# The toolchain go.mod asks for (its toolchain line): its standard library
# has security fixes that older ones, such as a machine's go1.26.8, lack.
# make uses it whatever GOTOOLCHAIN says, in the environment or on the
# command line (GOTOOLCHAIN=local would otherwise build with the machine's
# go without a word), and the toolchain target stops, saying why, when the
# go command cannot run it.
TOOLCHAIN := $(shell sed -n 's/^toolchain //p' go.mod)
ifeq ($(TOOLCHAIN),)
$(error go.mod has no toolchain line: make builds with the toolchain it names)
endif
override GOTOOLCHAIN := $(TOOLCHAIN)
export GOTOOLCHAIN
FUZZTIME  ?= 20000x
STATICCHECK_VERSION ?= v0.8.2
# The binary `make build` writes. Its version comes from the build
# information (the module version, the commit) unless VERSION stamps one.
BIN       ?= bin/askbridge
VERSION   ?=
# The modules of the repository: the main module (github.com/askbridge/askbridge,
# what agents import), and the tests and tools whose dependencies stay out of
# its go.mod (chromedp, Kubernetes, compose-go, gonum/plot), or that share no
# code with it (mcp/tscheck: the MCP server checked with the TypeScript SDK's
# client). test, lint and vulncheck run in each; `make lint` fails when a
# go.mod is missing here.
MODULES   := . deploy cmd/bench web/browsertest mcp/tscheck

.PHONY: help toolchain test test-short lint vulncheck fuzz bench bench-e2e bench-scale build run

help: ## List the targets (the default)
	@echo "Targets:"
	@awk 'BEGIN {FS = ":.*## "} /^[a-z0-9-]+:.*## / {printf "  make %-11s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

toolchain: ## Check that the go command runs go.mod's toolchain (every target that runs go does)
	@v=$$($(GO) env GOVERSION 2>&1); if [ "$$v" != "$(TOOLCHAIN)" ]; then \
	  echo "make: go.mod asks for the $(TOOLCHAIN) toolchain, whose standard library has security fixes older ones lack, and the go command cannot run it:"; \
	  echo "$$v" | sed 's/^/  /'; \
	  echo "make builds and tests with $(TOOLCHAIN) only: let the go command download it from the module proxy (GOPROXY), or install $(TOOLCHAIN) and put it first on the PATH."; \
	  exit 1; fi

# scripts/test-deps.sh installs what the full tests need, as root, or
# prints the command that does.
test: toolchain ## Run every test of every module, with the race detector (the README's test command)
	./scripts/test-deps.sh
	GO=$(GO) ./scripts/dendrite.sh
	GO=$(GO) ./scripts/test.sh $(MODULES)

test-short: toolchain ## Run the fast tier: go test -short (no browser, chaos, examples, cluster)
	$(GO) test -short -count=1 ./...

lint: toolchain ## Run gofmt, go vet and staticcheck in every module
	@found=$$(git ls-files -co --exclude-standard go.mod '*/go.mod' | xargs -n1 dirname | sort | xargs); want=$$(printf '%s\n' $(MODULES) | sort | xargs); \
	if [ "$$found" != "$$want" ]; then echo "MODULES is \"$$want\", the go.mod files are in \"$$found\""; exit 1; fi
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	@set -e; for m in $(MODULES); do echo "== $$m"; $(GO) -C $$m vet ./...; $(GO) -C $$m run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...; done

# Known vulnerabilities in the code paths the bridge calls (govulncheck;
# scripts/govulncheck.sh says where its database comes from).
vulncheck: toolchain ## Check for known vulnerabilities in the code the bridge calls
	./scripts/govulncheck.sh $(MODULES)

# Runs every fuzz target FUZZTIME: a number of runs ("20000x") or a duration
# ("1m").
fuzz: toolchain ## Run every fuzz target FUZZTIME (20000x, or a duration such as 1m)
	./scripts/fuzz.sh $(FUZZTIME)

bench: toolchain ## Run the Go benchmarks
	$(GO) test -run='^$$' -bench=. -benchmem ./...

# The end-to-end benchmark (cmd/bench, docs/performance.md): its own
# redis-server, the bridge binary and the fake Telegram; a few minutes.
# BENCHFLAGS=-short for the quick run CI makes. cmd/bench is a module of its
# own: it is built into bin/bench and run here, so that its relative paths
# (-artifacts, -cpuprofile) are the repository's.
bench-e2e: toolchain ## Run the end-to-end benchmark (BENCHFLAGS=-short for a quick run)
	$(GO) -C cmd/bench build -o $(CURDIR)/bin/bench .
	./bin/bench $(BENCHFLAGS)

# The scale run (cmd/bench -scale, docs/performance.md "Scale"): a 3-master
# Redis Cluster, 10 replicas, a million pending questions whose deadlines
# fall over 10 minutes; about 16 minutes and over 1.2 GiB of Redis. Not in CI.
# SCALEFLAGS sizes it down (-scale-pending 100000 -scale-duration 3m).
bench-scale: toolchain ## Run the scale benchmark: a million pending on a Cluster (SCALEFLAGS to size it)
	$(GO) -C cmd/bench build -o $(CURDIR)/bin/bench .
	./bin/bench -scale $(SCALEFLAGS)

build: toolchain ## Build the askbridge binary into bin/askbridge (VERSION=v1.2.3 stamps a version)
	$(GO) build $(if $(VERSION),-ldflags "-X main.version=$(VERSION)") -o $(BIN) ./cmd/bridge

run: toolchain ## Run the bridge from source (go run ./cmd/bridge)
	$(GO) run ./cmd/bridge
