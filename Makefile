# The test command of the README is `make test`.
GO        ?= go
FUZZTIME  ?= 5s
STATICCHECK_VERSION ?= v0.8.2

.PHONY: test lint fuzz bench build run

test:
	$(GO) test -race -count=1 ./...

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

# Runs every fuzz target for FUZZTIME (a smoke run in CI; longer by hand).
fuzz:
	./scripts/fuzz.sh $(FUZZTIME)

bench:
	$(GO) test -run='^$$' -bench=. -benchmem ./...

build:
	$(GO) build -o bin/bridge ./cmd/bridge

run:
	$(GO) run ./cmd/bridge
