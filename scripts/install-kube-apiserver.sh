#!/usr/bin/env bash
# Builds a real kube-apiserver and etcd from the Go module proxy for `landfall operator`'s tests and
# `LANDFALL_OPERATOR=1 npm start`, cached outside the checkout (idempotent: a stamp names the version):
#   ~/.cache/landfall/kube-apiserver-$KUBE_APISERVER_VERSION/bin/kube-apiserver (and kubectl, for the tests)
#   ~/.cache/landfall/etcd-$ETCD_VERSION/bin/etcd
# Neither builds with a plain `go install PKG@VERSION`: k8s.io/kubernetes points its 32 published
# staging modules at ./staging/src (replace directives, which go install refuses), and etcd's server
# module points at ../api and friends. So each is built from a small wrapper module that requires the
# release and replaces every such module by its published version. Cold: about 7 CPU-minutes and
# 1.9 GB RSS for the apiserver (nice'd), a minute for etcd; warm: instant.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/versions.sh
CACHE="$HOME/.cache/landfall"
command -v go >/dev/null 2>&1 || { echo "setup: go is required to build kube-apiserver and etcd" >&2; exit 1; }
export CGO_ENABLED=0 GOFLAGS=-mod=mod GOTOOLCHAIN=local

# build NAME DIR PACKAGE GO_MOD_BODY [EXTRA_LDFLAGS]
build() {
  local name="$1" dir="$2" package="$3" body="$4" ldx="${5:-}"
  local stamp="$dir/bin/.$name-built"
  if [ -x "$dir/bin/$name" ] && [ -f "$stamp" ]; then return 0; fi
  echo "setup: building $name from the Go module proxy (cold: minutes)" >&2
  mkdir -p "$dir/src" "$dir/bin"
  printf '%s\n' "$body" >"$dir/src/go.mod"
  # -mod=mod (GOFLAGS) lets go build resolve the rest of the build list and write go.sum.
  (cd "$dir/src" && nice -n 10 go build -trimpath -ldflags="-s -w $ldx" -o "$dir/bin/$name.tmp" "$package")
  mv "$dir/bin/$name.tmp" "$dir/bin/$name"
  touch "$stamp"
}

staging="api apiextensions-apiserver apimachinery apiserver cli-runtime client-go cloud-provider cluster-bootstrap
code-generator component-base component-helpers controller-manager cri-api cri-client cri-streaming csi-translation-lib
dynamic-resource-allocation endpointslice externaljwt kms kube-aggregator kube-controller-manager kube-proxy
kube-scheduler kubectl kubelet metrics mount-utils pod-security-admission sample-apiserver sample-controller streaming"
kube_minor="v0.${KUBE_APISERVER_VERSION#v1.}"
kmod="module landfall.local/kube-apiserver-build

go 1.26.0

require k8s.io/kubernetes $KUBE_APISERVER_VERSION
"
for m in $staging; do kmod+="replace k8s.io/$m => k8s.io/$m $kube_minor
"; done
build kube-apiserver "$CACHE/kube-apiserver-$KUBE_APISERVER_VERSION" k8s.io/kubernetes/cmd/kube-apiserver "$kmod"
# kubectl of the same release, for the operator test's GitOps walk-through (README): the real `kubectl apply -k`,
# `patch` and `wait`, not a stand-in. Shares the build cache with the apiserver: about half a CPU-minute more.
build kubectl "$CACHE/kube-apiserver-$KUBE_APISERVER_VERSION" k8s.io/kubernetes/cmd/kubectl "$kmod" \
  "-X k8s.io/component-base/version.gitVersion=$KUBE_APISERVER_VERSION -X k8s.io/client-go/pkg/version.gitVersion=$KUBE_APISERVER_VERSION"

emod="module landfall.local/etcd-build

go 1.26.0

require go.etcd.io/etcd/server/v3 $ETCD_VERSION
"
for m in api/v3 client/pkg/v3 client/v3 pkg/v3; do emod+="replace go.etcd.io/etcd/$m => go.etcd.io/etcd/$m $ETCD_VERSION
"; done
build etcd "$CACHE/etcd-$ETCD_VERSION" go.etcd.io/etcd/server/v3 "$emod"
