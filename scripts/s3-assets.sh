#!/usr/bin/env bash
# Builds the S3-compatible object store that the real-Flink tests keep
# checkpoints and savepoints in: SeaweedFS's `weed` command (Apache-2.0),
# from the Go module proxy only:
#   <cache>/VERSION/weed   github.com/seaweedfs/seaweedfs/weed
# <cache> is $S3_CACHE_DIR, or <repo>/.cache/s3 by default. VERSION is the
# module version of github.com/seaweedfs/seaweedfs; by default
# $SEAWEEDFS_VERSION, or the one pinned below.
#
# Usage: scripts/s3-assets.sh [VERSION]
# It prints the path of the weed binary on stdout and nothing else;
# progress goes to stderr.
#
# SeaweedFS is built in a small build module of its own (never in
# flinkkit's go.mod): it requires github.com/seaweedfs/seaweedfs at
# VERSION and carries the module's own replace directives (which a
# dependency's go.mod cannot pass on). The work is skipped when a stamp
# file records the same inputs; S3_ASSETS_FORCE=1 rebuilds anyway.
set -euo pipefail

die() { echo "s3-assets.sh: $*" >&2; exit 1; }

# The SeaweedFS the tests run: a commit of its master branch.
default_version="v0.0.0-20261109003541-7506e5f91cd6"

[[ $# -le 1 ]] || die "usage: scripts/s3-assets.sh [VERSION] (e.g. $default_version)"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
version="${1:-${SEAWEEDFS_VERSION:-$default_version}}"
[[ "$version" =~ ^v[0-9]+\.[0-9]+\.[0-9]+([.-][A-Za-z0-9.-]+)?$ ]] ||
  die "'$version' is not a Go module version like $default_version"

cache="${S3_CACHE_DIR:-$repo/.cache/s3}"
dest="$cache/$version"
stamp="$dest/.flinkkit-stamp"
GO="${GO:-go}"
command -v "$GO" >/dev/null 2>&1 || die "$GO not found on PATH"

mkdir -p "$dest"
# One build per cache folder at a time (parallel test runs share it).
if command -v flock >/dev/null 2>&1; then
  exec 9>"$dest/.lock"
  flock 9
fi

# The binary depends on these alone.
want="seaweedfs=$version go=$("$GO" env GOVERSION)"
if [[ "${S3_ASSETS_FORCE:-0}" != 1 && -f "$stamp" && "$(cat "$stamp")" == "$want" && -x "$dest/weed" ]]; then
  echo "$dest/weed"
  exit 0
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/flinkkit-s3-assets.XXXXXX")"
log="$work/log"
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
run() {
  local what="$1"; shift
  if ! "$@" >"$log" 2>&1; then
    cat "$log" >&2
    die "$what failed"
  fi
}
# The build module lives outside any workspace and resolves through the proxy.
export GOWORK=off GOFLAGS="${GOFLAGS:-} -mod=mod"

start=$SECONDS
echo "s3-assets.sh: resolving github.com/seaweedfs/seaweedfs $version" >&2
sdir="$(cd "$work" && "$GO" mod download -json "github.com/seaweedfs/seaweedfs@$version" |
  sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')"
[[ -n "$sdir" && -f "$sdir/go.mod" ]] ||
  die "github.com/seaweedfs/seaweedfs@$version is not in the module cache after go mod download"

# The module's replace directives that name another module (not a folder).
replaces="$(sed -n 's#^replace[[:space:]]\{1,\}\([^ ]\{1,\}\)[[:space:]]\{1,\}=>[[:space:]]\{1,\}\([^ ./][^ ]*\)[[:space:]]\{1,\}\(v[^ ]*\)[[:space:]]*$#\1 => \2 \3#p' "$sdir/go.mod")"

mkdir -p "$work/s3"
{
  echo "module flinkkit.local/s3assets"
  echo
  echo "go $(sed -n 's/^go[[:space:]]\{1,\}\([0-9.]*\)[[:space:]]*$/\1/p' "$sdir/go.mod" | head -n1)"
  echo
  echo "require github.com/seaweedfs/seaweedfs $version"
  if [[ -n "$replaces" ]]; then
    echo
    while IFS= read -r r; do echo "replace $r"; done <<<"$replaces"
  fi
} >"$work/s3/go.mod"
# The build list of the weed command, as SeaweedFS's own go.mod has it.
cp "$sdir/go.sum" "$work/s3/go.sum" 2>/dev/null || true
(cd "$work/s3" && run "go get github.com/seaweedfs/seaweedfs/weed@$version" \
  "$GO" get "github.com/seaweedfs/seaweedfs/weed@$version")
echo "s3-assets.sh: building weed $version (several minutes on a cold build cache)" >&2
(cd "$work/s3" && run "go build weed" \
  "$GO" build -trimpath -ldflags "-s -w" -o "$dest/weed.new" github.com/seaweedfs/seaweedfs/weed)

mv -f "$dest/weed.new" "$dest/weed"
"$dest/weed" version >&2 || die "the built weed does not run"
echo "$want" >"$stamp"
echo "s3-assets.sh: weed $version in $dest ($((SECONDS - start))s)" >&2
echo "$dest/weed"
