#!/usr/bin/env bash
# Prepares a local Apache Flink VERSION for the integration tests:
#   <cache>/VERSION/lib/                   runtime jars of a session cluster, and
#                                          flink-container's application cluster
#                                          entry point
#   <cache>/VERSION/plugins/s3-fs-hadoop/  Flink's S3 file system plugin
#                                          (flink-s3-fs-hadoop), for clusters that
#                                          keep their state in an object store
#   <cache>/VERSION/flinkkit-testjob.jar   the test job (dev.flinkkit.testjob.CounterJob)
# <cache> is $FLINK_CACHE_DIR, or <repo>/.cache/flink by default.
# FLINK_S3_PLUGIN_VERSION picks the plugin's release (default: VERSION, or
# the fallback below where Maven Central has no plugin of VERSION).
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
    echo "version=$version s3plugin=${FLINK_S3_PLUGIN_VERSION:-}"
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
      -d "$dest/lib" && -d "$dest/plugins/s3-fs-hadoop" && -f "$dest/flinkkit-testjob.jar" ]]; then
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
    cleanup_tmp
    die "$what failed for Flink $version (see the Maven output above)"
  fi
}

start=$(date +%s)
rm -f "$stamp"

# Jars go to fresh folders first, so a failed or changed resolution never
# leaves a half-filled or mixed lib/ or plugins/ behind.
cleanup_tmp() { rm -rf "$dest/lib.tmp" "$dest/plugins.tmp"; }
cleanup_tmp
# flink-container is not published for every release (Maven Central has no
# 1.20.5): the exact version is tried first, then the release's .0 (its one
# class, StandaloneApplicationClusterEntryPoint, is the same across patch
# releases; everything else stays at VERSION). flink-s3-fs-hadoop is not
# published for every release either: the exact version is tried first,
# then s3_plugin_fallback's release of the same minor release (a plugin runs
# in a class loader of its own and takes Flink's own classes from lib/,
# which stay at VERSION).
s3_plugin_fallback() {
  case "$1" in
    1.20.*) echo 1.20.1 ;;
    *) echo "" ;;
  esac
}
resolve_jars() {
  cleanup_tmp
  mvn -q -B -Dstyle.color=never -f "$repo/internal/testkit/flinkjars/pom.xml" \
    -Dflink.version="$version" -Dflink.container.version="$1" -Dflink.s3.version="$2" \
    -Dflink.lib.dir="$dest/lib.tmp" -Dflink.plugins.dir="$dest/plugins.tmp" package >"$log" 2>&1
}
resolve_failed() {
  cat "$log" >&2
  cleanup_tmp
  die "resolving the Flink runtime jars failed for Flink $version (see the Maven output above)"
}
container="$version"
s3="${FLINK_S3_PLUGIN_VERSION:-$version}"
until resolve_jars "$container" "$s3"; do
  if [[ "$container" == "$version" ]] && grep -q "flink-container:jar:$version" "$log"; then
    fallback="${version%.*}.0"
    [[ "$fallback" != "$version" ]] || resolve_failed
    echo "flink.sh: Maven Central has no flink-container $version; using flink-container $fallback" >&2
    container="$fallback"
  elif [[ "$s3" == "$version" && -z "${FLINK_S3_PLUGIN_VERSION:-}" ]] && grep -q "flink-s3-fs-hadoop:jar:$version" "$log"; then
    fallback="$(s3_plugin_fallback "$version")"
    [[ -n "$fallback" && "$fallback" != "$version" ]] || resolve_failed
    echo "flink.sh: Maven Central has no flink-s3-fs-hadoop $version; using flink-s3-fs-hadoop $fallback" >&2
    s3="$fallback"
  else
    resolve_failed
  fi
done
[[ -f "$dest/lib.tmp/flink-container-$container.jar" ]] ||
  die "flink-container-$container.jar was not resolved into $dest/lib.tmp"
[[ -f "$dest/lib.tmp/flink-runtime-$version.jar" ]] ||
  die "flink-runtime-$version.jar was not resolved into $dest/lib.tmp"
[[ -f "$dest/plugins.tmp/s3-fs-hadoop/flink-s3-fs-hadoop-$s3.jar" ]] ||
  die "flink-s3-fs-hadoop-$s3.jar was not resolved into $dest/plugins.tmp/s3-fs-hadoop"
rm -rf "$dest/lib" "$dest/plugins"
mv "$dest/lib.tmp" "$dest/lib"
mv "$dest/plugins.tmp" "$dest/plugins"

mvn_run "building the test job" \
  -f "$repo/internal/testkit/testjob/pom.xml" -Dflink.version="$version" \
  -Dflink.cache.dir="$dest" package
[[ -f "$dest/flinkkit-testjob.jar" ]] || die "the test job jar was not written to $dest"

echo "$want" >"$stamp"
echo "flink.sh: Flink $version ready in $dest ($(( $(date +%s) - start ))s)" >&2
