#!/usr/bin/env bash
# Builds libseccomp's static library for musl into target/libseccomp-musl/lib (warden is built
# for x86_64-unknown-linux-musl, .cargo/config.toml): the tests and warden-capsicum link it.
# Debian's libseccomp-dev is built for glibc; its objects call glibc's own symbols
# (__fprintf_chk), which musl does not have. The source is Debian's, checked against the
# checksum its bookworm package gives. Does nothing when the library is there.
# Needs: musl-gcc (musl-tools), gperf (libseccomp's configure asks for it), curl, make.
set -euo pipefail
cd "$(dirname "$0")/.."

version=2.5.4
sha256=d82902400405cf0068574ef3dc1fe5f5926207543ba1ae6f8e7a1576351dcbdb
out=$(pwd)/target/libseccomp-musl
[ -f "$out/lib/libseccomp.a" ] && exit 0

work=$(mktemp -d "${TMPDIR:-/tmp}/libseccomp-musl.XXXXXX")
trap 'rm -rf "$work"' EXIT
tarball=$work/libseccomp_$version.orig.tar.gz
curl -fsSL --retry 3 -o "$tarball" \
  "http://deb.debian.org/debian/pool/main/libs/libseccomp/libseccomp_$version.orig.tar.gz"
echo "$sha256  $tarball" | sha256sum -c --quiet
tar xzf "$tarball" -C "$work"
cd "$work/libseccomp-$version"
# musl-gcc sees only musl's headers; the kernel's (linux/seccomp.h, asm/) come after them.
multiarch=$(gcc -print-multiarch)
if ! CC="musl-gcc -idirafter /usr/include -idirafter /usr/include/$multiarch" \
  ./configure --enable-static --disable-shared --prefix="$out" >"$work/build.log" 2>&1 ||
  ! make -j"$(nproc)" -C src >>"$work/build.log" 2>&1 ||
  ! make -C src install-libLTLIBRARIES >>"$work/build.log" 2>&1; then
  tail -20 "$work/build.log" >&2
  echo "libseccomp-musl: building libseccomp $version for musl failed" >&2
  exit 1
fi
echo "libseccomp-musl: built $out/lib/libseccomp.a" >&2
