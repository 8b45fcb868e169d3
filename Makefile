# apiary build and test entry points. `make test` is what CI runs.
GO        ?= go
BIN       ?= bin/apiary
GOTESTFLAGS ?=
# The machine's GOFLAGS may say -buildvcs=false; stamp the revision when we can.
BUILDFLAGS := -buildvcs=auto

.PHONY: all build test deps lint fmt-check vet staticcheck cross gotest bench demo clean

all: build

build:
	$(GO) build $(BUILDFLAGS) -o $(BIN) ./cmd/apiary

deps:
	./scripts/deps.sh

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './test/node_modules/*')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

staticcheck:
	$(GO) tool staticcheck ./...

# The other platforms: macOS and the BSDs build and vet (agents run there,
# in process groups); Windows vets (it refuses to run agents and checks:
# see "Platforms" in docs/ARCHITECTURE.md).
CROSS_ENV := CGO_ENABLED=0
cross:
	@echo "cross: GOOS=darwin go build ./..." && GOOS=darwin $(CROSS_ENV) $(GO) build ./...
	@echo "cross: GOOS=darwin go vet ./..." && GOOS=darwin $(CROSS_ENV) $(GO) vet ./...
	@echo "cross: GOOS=freebsd go vet ./..." && GOOS=freebsd $(CROSS_ENV) $(GO) vet ./...
	@echo "cross: GOOS=windows go vet ./..." && GOOS=windows $(CROSS_ENV) $(GO) vet ./...

lint: fmt-check vet staticcheck cross

gotest:
	$(GO) test -race -shuffle=on -timeout 30m $(GOTESTFLAGS) ./...

test: deps lint gotest

# Long benchmarks; numbers go to docs/benchmarks.md.
bench: build
	./scripts/bench.sh

demo: build
	$(BIN) demo

clean:
	rm -rf bin
