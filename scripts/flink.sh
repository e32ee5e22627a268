#!/usr/bin/env bash
# Prepares a local Apache Flink VERSION for the integration tests:
#   <cache>/VERSION/lib/                   runtime jars of a session cluster, and
#                                          flink-container's application cluster
#                                          entry point
#   <cache>/VERSION/flinkkit-testjob.jar   the test job (dev.flinkkit.testjob.CounterJob)
# <cache> is $FLINK_CACHE_DIR, or <repo>/.cache/flink by default.
#
# Usage: scripts/flink.sh VERSION      e.g. scripts/flink.sh 2.3.0
#
# The work is skipped when a stamp file records that the same inputs (the two
# Maven projects and the job's sources) were already built for VERSION; set
# FLINK_FORCE=1 to rebuild anyway. Maven runs quietly (-q -B); its output is
# shown only when it fails.
set -euo pipefail

die() { echo "flink.sh: $*" >&2; exit 1; }

[[ $# -eq 1 && -n "$1" ]] || die "usage: scripts/flink.sh VERSION (e.g. 1.20.5 or 2.3.0)"
version="$1"
[[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+([.-][A-Za-z0-9.-]+)?$ ]] ||
  die "'$version' is not a Flink release version like 1.20.5 or 2.3.0"

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${FLINK_CACHE_DIR:-$repo/.cache/flink}"
dest="$cache/$version"
stamp="$dest/.flinkkit-stamp"

# Fingerprint of everything that decides what ends up in $dest.
inputs_hash() {
  (
    cd "$repo"
    echo "version=$version"
    sha256sum internal/testkit/flinkjars/pom.xml internal/testkit/testjob/pom.xml
    find internal/testkit/testjob/src -type f -print0 | sort -z | xargs -0 sha256sum
  ) | sha256sum | cut -d' ' -f1
}

mkdir -p "$dest"
want="$(inputs_hash)"

# One build per cache folder at a time (parallel test runs share it).
if command -v flock >/dev/null 2>&1; then
  exec 9>"$dest/.lock"
  flock 9
fi

if [[ "${FLINK_FORCE:-0}" != 1 && -f "$stamp" && "$(cat "$stamp")" == "$want" &&
      -d "$dest/lib" && -f "$dest/flinkkit-testjob.jar" ]]; then
  exit 0
fi

command -v mvn >/dev/null 2>&1 || die "mvn not found on PATH (Maven 3.8+ is needed)"
command -v java >/dev/null 2>&1 || die "java not found on PATH (Java 17 is needed)"

log="$(mktemp "${TMPDIR:-/tmp}/flinkkit-flink-sh.XXXXXX")"
trap 'rm -f "$log"' EXIT
mvn_run() {
  local what="$1"; shift
  if ! mvn -q -B -Dstyle.color=never "$@" >"$log" 2>&1; then
    cat "$log" >&2
    rm -rf "$dest/lib.tmp"
    die "$what failed for Flink $version (see the Maven output above)"
  fi
}

start=$(date +%s)
rm -f "$stamp"

# Jars go to a fresh folder first, so a failed or changed resolution never
# leaves a half-filled or mixed lib/ behind.
rm -rf "$dest/lib.tmp"
# flink-container is not published for every release (Maven Central has no
# 1.20.5): the exact version is tried first, then the release's .0 (its one
# class, StandaloneApplicationClusterEntryPoint, is the same across patch
# releases; everything else stays at VERSION).
resolve_jars() {
  mvn -q -B -Dstyle.color=never -f "$repo/internal/testkit/flinkjars/pom.xml" \
    -Dflink.version="$version" -Dflink.container.version="$1" \
    -Dflink.lib.dir="$dest/lib.tmp" package >"$log" 2>&1
}
container="$version"
if ! resolve_jars "$container"; then
  fallback="${version%.*}.0"
  if [[ "$fallback" != "$version" ]] && grep -q "flink-container:jar:$version" "$log"; then
    echo "flink.sh: Maven Central has no flink-container $version; using flink-container $fallback" >&2
    container="$fallback"
    rm -rf "$dest/lib.tmp"
    resolve_jars "$container" || { cat "$log" >&2; rm -rf "$dest/lib.tmp"; die "resolving the Flink runtime jars failed for Flink $version (see the Maven output above)"; }
  else
    cat "$log" >&2
    rm -rf "$dest/lib.tmp"
    die "resolving the Flink runtime jars failed for Flink $version (see the Maven output above)"
  fi
fi
[[ -f "$dest/lib.tmp/flink-container-$container.jar" ]] ||
  die "flink-container-$container.jar was not resolved into $dest/lib.tmp"
[[ -f "$dest/lib.tmp/flink-runtime-$version.jar" ]] ||
  die "flink-runtime-$version.jar was not resolved into $dest/lib.tmp"
rm -rf "$dest/lib"
mv "$dest/lib.tmp" "$dest/lib"

mvn_run "building the test job" \
  -f "$repo/internal/testkit/testjob/pom.xml" -Dflink.version="$version" \
  -Dflink.cache.dir="$dest" package
[[ -f "$dest/flinkkit-testjob.jar" ]] || die "the test job jar was not written to $dest"

echo "$want" >"$stamp"
echo "flink.sh: Flink $version ready in $dest ($(( $(date +%s) - start ))s)" >&2
