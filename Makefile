# edgellm — build and test. `make test` is the command CI runs (.ci/run).

# go.mod needs Go 1.27 (github.com/ardanlabs/jinja); a machine's own Go (1.26)
# fetches this toolchain from the Go module proxy when told to. Exported, so
# every recipe below (cross, qemu, fuzz, deb, lint) and the scripts they run
# use it.
export GOTOOLCHAIN ?= go1.27.3
GO       ?= go
FUZZTIME ?= 30s
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -s -w -X main.version=$(VERSION)

.PHONY: build demo test unit vet lint fuzz cross ci bench deb clean

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o edgellm ./cmd/edgellm

# The quick start: build, then serve the model of quickstart.yaml (stories260K,
# which writes short stories in English) over a built-in broker on
# localhost:1883; ask it with `./edgellm send --node demo "Once upon a time"`.
demo: build
	./edgellm serve --config quickstart.yaml

# The whole suite: static checks, every package's tests, then each fuzz target.
test: vet lint unit fuzz

# What CI runs (.ci/run, as root): the suite, the kernels and the engine under
# qemu for arm64 and 32-bit arm, then the .deb packages built, linted,
# installed, checked and purged (.ci/package-test).
ci: test cross
	bash .ci/package-test

# Kernel tests (assembly vs portable twins) and the engine's conformance under
# qemu-user: arm64 without SDOT (Pi 3/4, cortex-a72) and with it (Pi 5,
# cortex-a76), and 32-bit arm (ARMv6 Pi Zero/1, ARMv7), portable kernels. The
# kernel tests run at every tier the CPU can run (TestTwinMatVec/SDOT, …/NEON,
# …/generic); EDGELLM_TEST_TIERS makes TestTiers fail unless those are exactly
# the listed ones, here and for this machine (HOST_TIERS: what the kernel's
# /proc/cpuinfo flags say this x86-64 CPU offers, read by .ci/host-tiers).
HOST_TIERS ?= $(shell bash .ci/host-tiers)
QEMU_ENGINE_TESTS := TestConformanceLogits|TestStoriesGreedy|TestGenerateWithGrammar
# The q8_0 KV cache's conformance once under qemu, where its NEON kernel runs
# (32-bit arm runs the portable code, which the kernel twins check).
QEMU_KV_TESTS := TestConformanceQ8_0KV
cross:
	EDGELLM_TEST_TIERS=$(HOST_TIERS) $(GO) test -count=1 -run '^TestTiers$$' -v ./kernels
	QEMU_CPU=cortex-a72 EDGELLM_TEST_TIERS=NEON,generic GOARCH=arm64 $(GO) test -count=1 -timeout 30m -exec qemu-aarch64-static ./kernels
	QEMU_CPU=cortex-a72 GOARCH=arm64 $(GO) test -count=1 -timeout 30m -exec qemu-aarch64-static -run '$(QEMU_ENGINE_TESTS)' ./inference
	QEMU_CPU=cortex-a76 EDGELLM_TEST_TIERS=SDOT,NEON,generic GOARCH=arm64 $(GO) test -count=1 -timeout 30m -exec qemu-aarch64-static ./kernels
	QEMU_CPU=cortex-a76 GOARCH=arm64 $(GO) test -count=1 -timeout 30m -exec qemu-aarch64-static -run '$(QEMU_ENGINE_TESTS)|$(QEMU_KV_TESTS)' ./inference
	GOARCH=arm GOARM=6 EDGELLM_TEST_TIERS=generic $(GO) test -count=1 -timeout 30m -exec qemu-arm-static ./kernels
	GOARCH=arm GOARM=6 $(GO) test -count=1 -timeout 30m -exec qemu-arm-static -run '$(QEMU_ENGINE_TESTS)' ./inference
	GOARCH=arm GOARM=7 EDGELLM_TEST_TIERS=generic $(GO) test -count=1 -timeout 30m -exec qemu-arm-static ./kernels

# Static checks: gofmt, go vet (also of the kernels for arm64 and 32-bit arm),
# and that go vet sees every argument load of the assembly (.ci/asm-vet).
vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	$(GO) vet ./...
	GOARCH=arm64 $(GO) vet ./kernels
	GOARCH=arm $(GO) vet ./kernels
	GO='$(GO)' bash .ci/asm-vet

# staticcheck (its default checks), installed at a fixed version into .tools/
# from the Go module proxy; the kernels are checked for arm64 too.
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(CURDIR)/.tools/staticcheck-$(STATICCHECK_VERSION)
lint: $(STATICCHECK)
	$(STATICCHECK) ./...
	GOARCH=arm64 $(STATICCHECK) ./kernels
$(STATICCHECK):
	mkdir -p .tools
	GOBIN=$(CURDIR)/.tools/bin $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	mv .tools/bin/staticcheck $@

unit:
	$(GO) test -count=1 -timeout 30m ./...

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
	rm -rf edgellm dist .demo-state .tools
