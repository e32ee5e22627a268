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
# no two tests use the shared cluster at once. Beside them, in a second
# lane, run the tests that only ever start clusters of their own (OWN_PKGS:
# whole packages; OWN_TESTS: tests of other packages), one at a time, without
# FLINKKIT_SHARED_CLUSTER: they spend most of their time waiting on their
# own JobManagers and TaskManagers, and the shared cluster never sees
# them. Every test runs in exactly one of the two lanes; OWN_LANE=0 runs
# the second lane's tests after the first's instead. The shared cluster keeps its
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
# The tests of the second lane (see above): packages whose integration
# tests only start clusters of their own, and such tests of other packages
# (either may be empty). internal/testkit/flinkfixture stays with the
# shared cluster: TestObjectStoreCluster tests that cluster's object store.
OWN_PKGS="${OWN_PKGS-./internal/testkit/contract ./localcluster}"
OWN_TESTS="${OWN_TESTS-TestRealClusterApplication TestRealClusterController TestRealExternalStopRestart TestRealTLS TestRealClusterNothingLost}"

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

  # The second lane: the packages of OWN_PKGS, and the tests of OWN_TESTS
  # in the packages that have them. A name in OWN_TESTS that is no
  # integration test fails the run, so that the list stays true.
  local own_pkgs=() shared_pkgs=() own_test_pkgs=() own_tests p f
  for p in "${pkgs[@]}"; do
    if [[ " $OWN_PKGS " == *" $p "* ]]; then own_pkgs+=("$p"); else shared_pkgs+=("$p"); fi
  done
  for n in $OWN_TESTS; do
    # shellcheck disable=SC2086 # $files: paths without spaces, one a line
    f="$(grep -l "^func $n(" $files || true)"
    [[ -n "$f" ]] || die "OWN_TESTS: $n is no integration test"
    for p in $(xargs -n1 dirname <<<"$f"); do
      if [[ " ${own_pkgs[*]} " == *" $p "* ]]; then die "OWN_TESTS: $n is in $p, which is in OWN_PKGS already"; fi
      if [[ " ${own_test_pkgs[*]} " != *" $p "* ]]; then own_test_pkgs+=("$p"); fi
    done
  done
  own_tests="$(tr ' ' '\n' <<<"$OWN_TESTS" | grep -v '^$' | paste -sd'|' || true)"
  local skip=()
  if [[ -n "$own_tests" ]]; then skip=(-skip "^($own_tests)\$"); fi

  shared_lane() {
    echo "=== root module, Flink $FLINK_VERSION, shared cluster: ${shared_pkgs[*]}${own_tests:+ (without $own_tests)}" &&
      "$GO" test -tags integration -count=1 -timeout "$TEST_TIMEOUT" -p 1 -run "$pattern" "${skip[@]}" "${shared_pkgs[@]}" &&
      echo "=== examples/operator, Flink $FLINK_VERSION" &&
      (cd examples/operator && "$GO" test -tags integration -count=1 -timeout "$TEST_TIMEOUT" -p 1 -run '^TestReal' ./...) &&
      echo "=== examples/flinkctl, Flink $FLINK_VERSION" &&
      (cd examples/flinkctl && "$GO" test -tags integration -count=1 -timeout "$TEST_TIMEOUT" -p 1 -run '^TestReal' ./...)
  }
  # Without FLINKKIT_SHARED_CLUSTER, flinkfixture.SharedForTest starts a
  # cluster of the test's own: no test of this lane touches the shared one.
  own_lane() {
    echo "=== root module, Flink $FLINK_VERSION, clusters of their own: ${own_pkgs[*]}${own_tests:+; $own_tests in ${own_test_pkgs[*]}}" || return
    if (( ${#own_test_pkgs[@]} )); then
      env -u FLINKKIT_SHARED_CLUSTER "$GO" test -tags integration -count=1 -timeout "$TEST_TIMEOUT" -p 1 -run "^($own_tests)\$" "${own_test_pkgs[@]}" || return
    fi
    if (( ${#own_pkgs[@]} )); then
      env -u FLINKKIT_SHARED_CLUSTER "$GO" test -tags integration -count=1 -timeout "$TEST_TIMEOUT" -p 1 -run "$pattern" "${own_pkgs[@]}" || return
    fi
  }
  local shared_rc=0 own_rc=0 own
  if [[ "${OWN_LANE:-1}" == 0 ]]; then
    shared_lane || shared_rc=$?
    own_lane || own_rc=$?
  else
    own_lane &
    own=$!
    shared_lane || shared_rc=$?
    wait "$own" || own_rc=$?
  fi
  (( shared_rc == 0 )) || die "the tests on the shared cluster failed (exit $shared_rc)"
  (( own_rc == 0 )) || die "the tests on clusters of their own failed (exit $own_rc)"
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
