#!/usr/bin/env bash
# Writes an OpenAPI 3 description of Flink VERSION's JobManager REST API to
# OUT, generated from the REST message classes of flink-runtime VERSION and
# flink-runtime-web VERSION (Maven Central). See pom.xml.
#
# Usage: internal/testkit/restspec/generate.sh VERSION OUT
set -euo pipefail
[[ $# -eq 2 ]] || { echo "usage: $0 VERSION OUT" >&2; exit 2; }
version="$1" out="$2"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="$here/../../../.cache/restspec/$version"
log="$(mktemp "${TMPDIR:-/tmp}/restspec.XXXXXX")"
trap 'rm -f "$log"' EXIT
if ! mvn -q -B -Dstyle.color=never -f "$here/pom.xml" -Dflink.version="$version" \
  compile dependency:build-classpath -Dmdep.outputFile="$build/classpath.txt" >"$log" 2>&1; then
  cat "$log" >&2
  echo "restspec: the Maven build failed for Flink $version" >&2
  exit 1
fi
java -cp "$build/classes:$(cat "$build/classpath.txt")" dev.flinkkit.restspec.Main "$version" "$out"
