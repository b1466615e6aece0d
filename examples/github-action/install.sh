#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# install.sh VERSION DIR installs the released gpufleet VERSION (v1.2.3) for
# this machine into DIR: it downloads the release's checksums.txt and the
# archive for this OS and architecture, refuses an archive whose SHA-256 is
# not the one checksums.txt lists, and checks that the binary says it is
# VERSION. The GitHub Action and the GitLab job install gpufleet with it.
#
# GPUFLEET_RELEASES is where releases are, one directory per tag
# (default https://github.com/gpufleet/gpufleet/releases/download).
set -euo pipefail

usage="usage: install.sh VERSION DIR"
version=${1:?$usage}
dir=${2:?$usage}
releases=${GPUFLEET_RELEASES:-https://github.com/gpufleet/gpufleet/releases/download}

fail() {
	echo "gpufleet install: $*" >&2
	exit 1
}

case "$version" in
v[0-9]*.[0-9]*.[0-9]*) ;;
[0-9]*.[0-9]*.[0-9]*) version=v$version ;;
*) fail "version \"$version\" is not a release version: give one like v1.2.3 (see https://github.com/gpufleet/gpufleet/releases)" ;;
esac

case "$(uname -s)" in
Linux) os=linux ;;
Darwin) os=darwin ;;
*) fail "no release archive for $(uname -s) in this installer: it runs on Linux and macOS" ;;
esac
case "$(uname -m)" in
x86_64 | amd64) arch=amd64 ;;
aarch64 | arm64) arch=arm64 ;;
*) fail "no release archive for the $(uname -m) architecture" ;;
esac

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# fetch URL FILE downloads URL to FILE; it returns 4 when there is nothing at
# URL, and fails for anything else that goes wrong.
fetch() {
	local code rc=0
	code=$(curl -sSL --retry 3 --output "$2" --write-out '%{http_code}' "$1") || rc=$?
	case "$rc:$code" in
	0:200 | 0:000) return 0 ;; # 000: a file:// URL, which has no status
	0:404 | 37:*) return 4 ;;  # 37: no such file
	0:*) fail "could not download $1: HTTP $code" ;;
	*) fail "could not download $1 (curl exit $rc)" ;;
	esac
}

rc=0
fetch "$releases/$version/checksums.txt" "$tmp/checksums.txt" || rc=$?
if [ "$rc" -eq 4 ]; then
	fail "gpufleet $version does not exist: there is no release $version at $releases/$version (see https://github.com/gpufleet/gpufleet/releases)"
fi

archive="gpufleet_${version#v}_${os}_${arch}.tar.gz"
want=$(awk -v name="$archive" '$2 == name { print $1 }' "$tmp/checksums.txt")
[ -n "$want" ] || fail "release $version lists no $archive in its checksums.txt"

rc=0
fetch "$releases/$version/$archive" "$tmp/$archive" || rc=$?
[ "$rc" -eq 0 ] || fail "release $version lists $archive, but it is not at $releases/$version/$archive"

if command -v sha256sum >/dev/null; then
	got=$(sha256sum "$tmp/$archive" | cut -d' ' -f1)
else
	got=$(shasum -a 256 "$tmp/$archive" | cut -d' ' -f1)
fi
[ "$got" = "$want" ] || fail "$archive has SHA-256 $got, but checksums.txt says $want: not installing it"

tar -xzf "$tmp/$archive" -C "$tmp" gpufleet
said=$("$tmp/gpufleet" version)
case "$said" in
"gpufleet $version "*) ;;
*) fail "the binary of release $version says it is: $said" ;;
esac
mkdir -p "$dir"
install -m 0755 "$tmp/gpufleet" "$dir/gpufleet"
echo "$said"
