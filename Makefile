# The test command of the README is `make test`.
GO        ?= go
# The toolchain go.mod asks for, also where the go command would not fetch
# it by itself (GOTOOLCHAIN=local): its standard library has the security
# fixes go1.26.8 lacks.
export GOTOOLCHAIN ?= go1.27.3
FUZZTIME  ?= 20000x
STATICCHECK_VERSION ?= v0.8.2

.PHONY: test lint vulncheck fuzz bench bench-e2e build run

test:
	$(GO) test -race -count=1 ./...

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

# Known vulnerabilities in the code paths the bridge calls (govulncheck;
# scripts/govulncheck.sh says where its database comes from).
vulncheck:
	./scripts/govulncheck.sh

# Runs every fuzz target FUZZTIME: a number of runs ("20000x") or a duration
# ("1m").
fuzz:
	./scripts/fuzz.sh $(FUZZTIME)

bench:
	$(GO) test -run='^$$' -bench=. -benchmem ./...

# The end-to-end benchmark (cmd/bench, docs/performance.md): its own
# redis-server, the bridge binary and the fake Telegram; a few minutes.
# BENCHFLAGS=-short for the quick run CI makes.
bench-e2e:
	$(GO) run ./cmd/bench $(BENCHFLAGS)

build:
	$(GO) build -o bin/bridge ./cmd/bridge

run:
	$(GO) run ./cmd/bridge
