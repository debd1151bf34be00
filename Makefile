# edgellm — build and test. `make test` is the command CI runs (.ci/run).
GO       ?= go
FUZZTIME ?= 30s
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -s -w -X main.version=$(VERSION)

.PHONY: build test unit vet fuzz bench deb clean

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o edgellm ./cmd/edgellm

# The whole suite: static checks, every package's tests, then each fuzz target.
test: vet unit fuzz

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	$(GO) vet ./...

unit:
	$(GO) test -count=1 ./...

fuzz:
	$(GO) test ./gguf -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s
	$(GO) test ./inference/tokenizer -run '^$$' -fuzz '^FuzzEncodeSPM$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s
	$(GO) test ./inference/tokenizer -run '^$$' -fuzz '^FuzzEncodeBPE$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./kernels

# Debian packages for amd64, arm64 and armhf (ARMv6) in dist/ (packaging/README.md).
deb:
	GO='$(GO)' VERSION='$(VERSION)' bash packaging/build-deb

clean:
	rm -rf edgellm dist
