#!/usr/bin/env bash
# Unpacks the arm64 builds of the compiled libraries the static swinfer links (nifti_clib, znzlib, zlib) into the
# folder $1 for the aarch64 cross build (cmake/toolchains/aarch64-linux-gnu.cmake). The packages are downloaded, not
# installed: libnifti2-dev cannot be installed for two architectures at once. Needs `dpkg --add-architecture arm64`
# and `apt-get update` first (tools/install-deps.sh with SWINFER_STATIC_DEPS=1 does both). Safe to run again.
set -euo pipefail
sysroot=$(realpath -m "$1")
if [[ -e "$sysroot/usr/lib/aarch64-linux-gnu/libnifti2.a" && -e "$sysroot/usr/lib/aarch64-linux-gnu/libz.a" ]]; then
  exit 0
fi
debs=$(mktemp -d)
chmod 777 "$debs"  # apt downloads as its own user
trap 'rm -rf "$debs"' EXIT
(cd "$debs" && apt-get download -qq libnifti2-dev:arm64 libznz-dev:arm64 zlib1g-dev:arm64)
mkdir -p "$sysroot"
for deb in "$debs"/*.deb; do dpkg-deb -x "$deb" "$sysroot"; done
