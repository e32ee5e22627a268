# flinkkit: build, test and benchmark targets. `make test` runs everything,
# including the suites against a real Flink cluster started from Maven
# Central jars (Java 17 and Maven needed; fetched once into .cache/).

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c

# Flink versions the real-cluster suites run against (see README.md).
FLINK_VERSIONS ?= 1.20.5 2.3.0
FLINK_VERSION ?= $(firstword $(FLINK_VERSIONS))

GO        ?= go
GOBIN     := $(shell $(GO) env GOPATH)/bin
STATICCHECK_VERSION := v0.8.2
BENCHSTAT_VERSION   := v0.0.0-20260908200009-22c9c6c9d4da
# A count, not a duration: a duration-based -fuzztime can end in a spurious
# "context deadline exceeded" on Go 1.26 (golang/go#75804). FLINKKIT_FULL=1
# (full-size randomised runs everywhere) fuzzes five times longer.
FUZZTIME  ?= $(if $(filter 1,$(FLINKKIT_FULL)),100000x,20000x)
BENCHCOUNT ?= 8

.PHONY: test checks unit lint fuzz operator flinkctl s3storage integration flink kube-assets s3-assets bench generate restspec clean

## test: everything: lint, unit tests with -race, short fuzz runs, the
## example operator's and flinkctl's modules, the S3 storage's module
## (s3storage, on a real S3-compatible server), and the real-Flink suites for
## every version in FLINK_VERSIONS. It runs checks, then integration.
## Each phase reports the time it took and the load average at its end.
test: checks
	@start=$$(date +%s); rc=0; \
	$(MAKE) --no-print-directory integration || rc=$$?; \
	echo "=== make integration: $$(( $$(date +%s) - start ))s, load average $$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"; \
	exit $$rc

## checks: every phase of test but integration, in two lanes side by side:
## the phases that keep the processors busy (CHECKS_BUSY: lint, unit, fuzz)
## one after the other, and beside them those that mostly wait on timers
## and servers (CHECKS_WAITING: the operator's tests on a real
## kube-apiserver, flinkctl's, s3storage's) one after the other. The
## waiting lane's output goes to a file per phase, printed whole once both
## lanes end; a lane stops at its first failing phase, and checks fails if
## either lane did.
CHECKS_BUSY    := lint unit fuzz
CHECKS_WAITING := operator flinkctl s3storage
checks:
	@logs=$$(mktemp -d); trap 'rm -rf "$$logs"' EXIT; \
	phase() { \
		local start=$$(date +%s) rc=0; \
		$(MAKE) --no-print-directory $$1 || rc=$$?; \
		echo "=== make $$1: $$(( $$(date +%s) - start ))s, load average $$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)$$( (( rc == 0 )) || echo ", failed (exit $$rc)")"; \
		return $$rc; \
	}; \
	( for p in $(CHECKS_WAITING); do phase $$p >"$$logs/$$p.log" 2>&1 || exit 1; done ) & waiting=$$!; \
	busy=0; for p in $(CHECKS_BUSY); do phase $$p || { busy=1; break; }; done; \
	rc=0; wait $$waiting || rc=$$?; \
	for p in $(CHECKS_WAITING); do if [[ -f "$$logs/$$p.log" ]]; then cat "$$logs/$$p.log"; fi; done; \
	if (( busy || rc )); then echo "make checks: failed (see the phases above)"; exit 1; fi

## unit: unit tests with the race detector; no network, no Java.
unit:
	$(GO) test -race -count=1 -timeout 20m ./...

## lint: go.mod and go.sum tidy, no tracked file over 1 MB outside a
## testdata folder (built binaries stay out), gofmt check, go vet, the
## documentation's versions and links in step with the code (TestDocs*),
## staticcheck; then the same checks of the s3storage module.
lint:
	@big=$$(git ls-files -z 2>/dev/null | xargs -0 -r du -b 2>/dev/null | awk '$$1 > 1048576 && ("/" $$2) !~ /\/testdata\// {print $$2 " (" $$1 " bytes)"}'); \
	if [ -n "$$big" ]; then echo "tracked files over 1 MB outside testdata: $$big"; exit 1; fi
	@$(GO) mod tidy -diff || { echo "go.mod or go.sum is not tidy: run go mod tidy"; exit 1; }
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed on: $$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags integration ./...
	$(GO) test -count=1 -run '^TestDocs' .
	@if [ ! -x "$(GOBIN)/staticcheck" ]; then \
		$(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) || echo "staticcheck did not install; skipping it"; \
	fi
	@if [ -x "$(GOBIN)/staticcheck" ]; then "$(GOBIN)/staticcheck" ./...; fi
	@$(MAKE) --no-print-directory -C s3storage lint

## fuzz: run every fuzz target for FUZZTIME (executions) each.
fuzz:
	@for pkg in $$($(GO) list ./...); do \
		dir=$$($(GO) list -f '{{.Dir}}' $$pkg); \
		for f in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go 2>/dev/null | sed 's/^func //'); do \
			echo "fuzz $$pkg $$f ($(FUZZTIME))"; \
			$(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg; \
		done; \
	done

## operator: the example operator's own module (examples/operator): gofmt,
## go vet, staticcheck and its unit tests with -race, on the fake client and
## on a real kube-apiserver and etcd that scripts/kube-assets.sh builds from
## the Go module proxy into .cache/kube (once; cached afterwards).
operator:
	$(MAKE) -C examples/operator lint unit

## flinkctl: the command-line tool's own module (examples/flinkctl): gofmt,
## go vet, staticcheck and its tests with -race (tmux needed).
flinkctl:
	$(MAKE) -C examples/flinkctl lint unit

## s3storage: the S3 storage's own module (s3storage: a lifecycle.Storage
## on the AWS SDK for Go v2): gofmt, go vet, staticcheck and its tests with
## -race, on an in-memory S3 API and on a real SeaweedFS server
## (s3-assets).
s3storage: s3-assets
	$(MAKE) -C s3storage lint unit

## flink: fetch the Flink runtime jars and S3 file system plugin of
## FLINK_VERSION and build the test job.
flink:
	scripts/flink.sh $(FLINK_VERSION)

## kube-assets: build (or find cached) kube-apiserver and etcd for envtest.
kube-assets:
	scripts/kube-assets.sh

## s3-assets: build (or find cached) SeaweedFS's weed, the S3-compatible
## object store of the shared clusters in make integration.
s3-assets:
	@scripts/s3-assets.sh >/dev/null

## integration: the real-Flink suites, once per version in FLINK_VERSIONS
## (integration-VERSION: scripts/integration.sh VERSION): the root
## module's integration tests, the operator's on a real kube-apiserver and
## etcd (scripts/kube-assets.sh) and flinkctl's, the tests that need only a
## plain session cluster sharing one per version, whose checkpoints and
## savepoints are in an S3-compatible object store (SeaweedFS,
## scripts/s3-assets.sh) started with it. The jars of every
## version are fetched first, one version after the other (Maven's local
## repository is not shared safely by two downloads); then the versions
## run side by side, INTEGRATION_JOBS at a time (2; 1: one after the
## other), each line of their output prefixed with its version.
INTEGRATION_JOBS ?= 2
integration: kube-assets s3-assets
	@for v in $(FLINK_VERSIONS); do scripts/flink.sh $$v; done
	$(MAKE) --no-print-directory -j$(INTEGRATION_JOBS) $(addprefix integration-,$(FLINK_VERSIONS))

integration-%: kube-assets s3-assets
	GO="$(GO)" scripts/integration.sh $* 2>&1 | sed -u 's/^/[flink $*] /'

## bench: benchmarks with their baselines, summarised by benchstat.
bench:
	@mkdir -p bench
	@if [ ! -x "$(GOBIN)/benchstat" ]; then $(GO) install golang.org/x/perf/cmd/benchstat@$(BENCHSTAT_VERSION); fi
	$(GO) test -run '^$$' -bench . -benchmem -count $(BENCHCOUNT) ./... | tee bench/latest.txt
	"$(GOBIN)/benchstat" -col /impl bench/latest.txt

## generate: deep-copy methods for the types embedded in Kubernetes objects.
## Types holding time.Time are marked generate=false and copied by hand
## (controller-gen has no deep copy for time.Time); tests check those copies.
generate:
	$(GO) run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.23.0 object paths=./policy/...
	gofmt -w policy/zz_generated.deepcopy.go
	$(MAKE) -C examples/operator generate

## restspec: regenerate flinkapi/testdata/openapi/rest_v1_dispatcher-2.3.yml,
## the OpenAPI description of Flink 2.3's REST API, from the REST message
## classes of flink-runtime 2.3.0 (internal/testkit/restspec; Java 17 and
## Maven; built into .cache/restspec). The file is committed: tests and CI
## only read it. RESTSPEC_VERSION and RESTSPEC_OUT describe another release
## (e.g. RESTSPEC_VERSION=2.2.0 RESTSPEC_OUT=/tmp/rest-2.2.yml, to compare
## with Flink's own 2.2 file, which must not be overwritten).
RESTSPEC_VERSION ?= 2.3.0
RESTSPEC_OUT     ?= flinkapi/testdata/openapi/rest_v1_dispatcher-2.3.yml
restspec:
	internal/testkit/restspec/generate.sh $(RESTSPEC_VERSION) $(RESTSPEC_OUT)

clean:
	rm -rf .cache bench/latest.txt
