#!/usr/bin/env bash
# Runs the real-Flink suites of one Flink VERSION: the tests in the
# *_integration_test.go files of the root module's packages, then the
# example operator's (on a real kube-apiserver and etcd, KUBEBUILDER_ASSETS)
# and flinkctl's TestReal* tests. The other tests of those packages run
# in `make unit`, `make operator` and `make flinkctl`, not again here.
#
# Usage: scripts/integration.sh VERSION      e.g. scripts/integration.sh 1.20.5
#
# It prepares VERSION's jars (scripts/flink.sh) and starts one session
# cluster of VERSION (internal/testkit/flinkfixture/cmd/sharedflink) that the
# tests needing only a plain session cluster share
# (flinkfixture.SharedForTest); tests that kill or restart the cluster's
# processes, or need a configuration or an application cluster of their
# own, start their own clusters. The packages run one at a time (-p 1), so
# no two tests use the shared cluster at once. The shared cluster keeps its
# checkpoints and savepoints in an S3-compatible object store started with
# it (SeaweedFS's weed: FLINKKIT_WEED, by default the output of
# scripts/s3-assets.sh). The cluster and the store stop when the suites
# end, fail or are interrupted. KUBEBUILDER_ASSETS defaults to the output
# of scripts/kube-assets.sh.
set -euo pipefail

die() { echo "integration.sh: $*" >&2; exit 1; }

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
GO="${GO:-go}"
TEST_TIMEOUT="${TEST_TIMEOUT:-20m}"

# suites runs under the shared cluster (sharedflink sets
# FLINKKIT_SHARED_CLUSTER).
suites() {
  [[ -n "${FLINKKIT_SHARED_CLUSTER:-}" ]] || die "suites run under sharedflink"
  # The root module's packages with integration tests, and the names of
  # those tests. One -run pattern serves all packages, so no name may also
  # be a test of another kind in one of them.
  local files dirs names pkgs=() pattern
  files="$(find . -name '*_integration_test.go' -not -path './examples/operator/*' -not -path './examples/flinkctl/*' -not -path './.cache/*' | sort)"
  [[ -n "$files" ]] || die "no *_integration_test.go files"
  dirs="$(xargs -n1 dirname <<<"$files" | sort -u)"
  names="$(xargs grep -ho '^func Test[A-Za-z0-9_]*' <<<"$files" | sed 's/^func //' | grep -vx TestMain | sort -u)"
  for d in $dirs; do
    for n in $names; do
      if grep -ls "^func $n(" "$d"/*_test.go | grep -qv '_integration_test\.go$'; then
        die "$n is a test in $d and an integration test: rename one"
      fi
    done
    pkgs+=("$d")
  done
  pattern="^($(paste -sd'|' <<<"$names"))\$"

  echo "=== root module, Flink $FLINK_VERSION: ${pkgs[*]}"
  "$GO" test -tags integration -count=1 -timeout "$TEST_TIMEOUT" -p 1 -run "$pattern" "${pkgs[@]}"
  echo "=== examples/operator, Flink $FLINK_VERSION"
  (cd examples/operator && "$GO" test -tags integration -count=1 -timeout "$TEST_TIMEOUT" -p 1 -run '^TestReal' ./...)
  echo "=== examples/flinkctl, Flink $FLINK_VERSION"
  (cd examples/flinkctl && "$GO" test -tags integration -count=1 -timeout "$TEST_TIMEOUT" -p 1 -run '^TestReal' ./...)
}

if [[ "${1:-}" == "--suites" ]]; then
  suites
  exit 0
fi

[[ $# -eq 1 && -n "$1" ]] || die "usage: scripts/integration.sh VERSION (e.g. 1.20.5 or 2.3.0)"
version="$1"
echo "=== real Flink $version"
scripts/flink.sh "$version"
if [[ -z "${KUBEBUILDER_ASSETS:-}" ]]; then
  KUBEBUILDER_ASSETS="$(scripts/kube-assets.sh)"
fi
if [[ -z "${FLINKKIT_WEED:-}" ]]; then
  FLINKKIT_WEED="$(scripts/s3-assets.sh)"
fi
export KUBEBUILDER_ASSETS FLINKKIT_WEED FLINK_VERSION="$version"
# Built, not run with go run: the cluster's JVMs are tied to this
# process (they get SIGKILL when it dies), and signals reach it directly.
bin="$repo/.cache/bin/$version"
mkdir -p "$bin"
"$GO" build -o "$bin/sharedflink" ./internal/testkit/flinkfixture/cmd/sharedflink
exec "$bin/sharedflink" -- "$repo/scripts/integration.sh" --suites
