#!/usr/bin/env bash
# Builds the Kubernetes API server and etcd that the example operator's tests
# start through controller-runtime's envtest, from the Go module proxy only:
#   <cache>/VERSION/kube-apiserver   k8s.io/kubernetes/cmd/kube-apiserver
#   <cache>/VERSION/etcd             go.etcd.io/etcd/server/v3
# <cache> is $KUBE_CACHE_DIR, or <repo>/.cache/kube by default. VERSION is the
# Kubernetes release; by default $KUBE_VERSION, or the release whose staging
# modules examples/operator/go.mod requires (k8s.io/api v0.37.2: 1.37.2).
# ETCD_VERSION defaults to the etcd release that Kubernetes release names in
# its build/dependencies.yaml (3.7.0 for 1.37).
#
# Usage: scripts/kube-assets.sh [VERSION]
# It prints the folder holding the binaries (the value for KUBEBUILDER_ASSETS)
# on stdout and nothing else; progress goes to stderr.
#
# k8s.io/kubernetes is not meant to be required as a module: its go.mod pins
# its staging modules (k8s.io/api, k8s.io/apiserver, ...) to v0.0.0 and
# replaces them with folders of its own repository. The script writes a small
# build module that requires k8s.io/kubernetes at vVERSION and replaces every
# staging module with its published v0.MINOR.PATCH release, then runs
# go build. The work is skipped when a stamp file records the same inputs;
# KUBE_ASSETS_FORCE=1 rebuilds anyway.
set -euo pipefail

die() { echo "kube-assets.sh: $*" >&2; exit 1; }

[[ $# -le 1 ]] || die "usage: scripts/kube-assets.sh [VERSION] (e.g. 1.37.2)"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
version="${1:-${KUBE_VERSION:-}}"
if [[ -z "$version" ]]; then
  api="$(awk '$1 == "k8s.io/api" {print $2; exit}' "$repo/examples/operator/go.mod")"
  [[ "$api" =~ ^v0\.([0-9]+\.[0-9]+)$ ]] ||
    die "no k8s.io/api v0.MINOR.PATCH requirement in examples/operator/go.mod (found '$api'); pass VERSION"
  version="1.${BASH_REMATCH[1]}"
fi
[[ "$version" =~ ^1\.([0-9]+)\.([0-9]+)$ ]] ||
  die "'$version' is not a Kubernetes release version like 1.37.2"
minor="${BASH_REMATCH[1]}"
staging="v0.$minor.${BASH_REMATCH[2]}"
etcd_version="${ETCD_VERSION:-}"

cache="${KUBE_CACHE_DIR:-$repo/.cache/kube}"
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

# The binaries depend on these versions alone.
want="kubernetes=$version etcd=${etcd_version:-default} go=$("$GO" env GOVERSION)"
if [[ "${KUBE_ASSETS_FORCE:-0}" != 1 && -f "$stamp" && "$(cat "$stamp")" == "$want" &&
      -x "$dest/kube-apiserver" && -x "$dest/etcd" ]]; then
  echo "$dest"
  exit 0
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/flinkkit-kube-assets.XXXXXX")"
log="$work/log"
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
run() {
  local what="$1"; shift
  if ! "$@" >"$log" 2>&1; then
    cat "$log" >&2
    die "$what failed"
  fi
}
# The build modules live outside any workspace and resolve through the proxy.
export GOWORK=off GOFLAGS="${GOFLAGS:-} -mod=mod"

start=$SECONDS
echo "kube-assets.sh: resolving k8s.io/kubernetes v$version" >&2
kdir="$(cd "$work" && "$GO" mod download -json "k8s.io/kubernetes@v$version" |
  sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')"
[[ -n "$kdir" && -f "$kdir/go.mod" ]] ||
  die "k8s.io/kubernetes@v$version is not in the module cache after go mod download"
if [[ -z "$etcd_version" ]]; then
  etcd_version="$(awk '/name: "etcd"/ {found=1; next} found && /version:/ {print $2; exit}' \
    "$kdir/build/dependencies.yaml" 2>/dev/null || true)"
  [[ -n "$etcd_version" ]] ||
    die "no etcd version in $kdir/build/dependencies.yaml; set ETCD_VERSION"
fi

# The staging modules: every module k8s.io/kubernetes replaces with ./staging.
mods="$(sed -n 's#^[[:space:]]*\(k8s\.io/[A-Za-z0-9._/-]*\) => \./staging/.*#\1#p' "$kdir/go.mod")"
[[ -n "$mods" ]] || die "no staging replacements found in $kdir/go.mod"

mkdir -p "$work/kube" "$work/etcd"
{
  echo "module flinkkit.local/kubeassets"
  echo
  echo "go $("$GO" env GOVERSION | sed -E 's/^go([0-9]+\.[0-9]+).*/\1.0/')"
  echo
  echo "require k8s.io/kubernetes v$version"
  echo
  echo "replace ("
  for m in $mods; do echo "	$m => $m $staging"; done
  echo ")"
} >"$work/kube/go.mod"
# A module whose main package imports nothing builds nothing; go get resolves
# the requirements of the command we build.
(cd "$work/kube" && run "go get k8s.io/kubernetes/cmd/kube-apiserver@v$version" \
  "$GO" get "k8s.io/kubernetes/cmd/kube-apiserver@v$version")
ldflags="-s -w"
for kv in "gitVersion=v$version" "gitMajor=1" "gitMinor=$minor" \
          "gitTreeState=clean" "buildDate=1970-01-01T00:00:00Z"; do
  ldflags+=" -X k8s.io/component-base/version.${kv%%=*}=${kv#*=}"
done
echo "kube-assets.sh: building kube-apiserver v$version (several minutes on a cold build cache)" >&2
(cd "$work/kube" && run "go build kube-apiserver" \
  "$GO" build -trimpath -ldflags "$ldflags" -o "$dest/kube-apiserver.new" k8s.io/kubernetes/cmd/kube-apiserver)

{
  echo "module flinkkit.local/etcdassets"
  echo
  echo "go $("$GO" env GOVERSION | sed -E 's/^go([0-9]+\.[0-9]+).*/\1.0/')"
} >"$work/etcd/go.mod"
(cd "$work/etcd" && run "go get go.etcd.io/etcd/server/v3@v$etcd_version" \
  "$GO" get "go.etcd.io/etcd/server/v3@v$etcd_version")
echo "kube-assets.sh: building etcd v$etcd_version" >&2
(cd "$work/etcd" && run "go build etcd" \
  "$GO" build -trimpath -ldflags "-s -w" -o "$dest/etcd.new" go.etcd.io/etcd/server/v3)

mv -f "$dest/kube-apiserver.new" "$dest/kube-apiserver"
mv -f "$dest/etcd.new" "$dest/etcd"
"$dest/kube-apiserver" --version >&2 || die "the built kube-apiserver does not run"
"$dest/etcd" --version >&2 || die "the built etcd does not run"
echo "$want" >"$stamp"
echo "kube-assets.sh: kube-apiserver v$version and etcd v$etcd_version in $dest ($((SECONDS - start))s)" >&2
echo "$dest"
