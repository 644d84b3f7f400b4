#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# Regenerates the seed corpus for the frame fuzz target in
# tests/fuzz/corpus/frame.  The generated files are committed; run this only
# to change them:  sh tests/fuzz/make-corpus.sh [OUTDIR]
#
# Each seed is one control byte (see tests/fuzz/fuzz-frame.c: bits 0-5 chunk
# size - 1, bit 6 a 64 KiB payload cap, bit 7 one-shot feed) followed by a
# byte stream: valid frames of each kind, frames back to back, and every
# kind of malformed header.  Payloads of the generic requests are laid out as
# (op, value) pairs for the fuzz target's reader walk: op & 7 picks the
# getter (0 u8, 1 u16, 2 u32, 3 u64, 4 i64, 5 raw of op>>3 bytes, 6 bytes,
# 7 string; for 6 and 7, op>>3 times 4 is the length limit, 0 = none).

set -eu

out=${1:-$(dirname "$0")/corpus/frame}
mkdir -p "$out"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT

# bytes HEXDIGITS: raw bytes from a string of hex digits (spaces allowed).
bytes() {
	h=$(printf '%s' "$*" | tr -d ' ')
	while [ -n "$h" ]; do
		b=${h%"${h#??}"}
		h=${h#??}
		# shellcheck disable=SC2059
		printf "\\$(printf '%03o' "0x$b")"
	done
}

# be WIDTH VALUE: VALUE as WIDTH bytes, big-endian.
be() { bytes "$(printf "%0$(($1 * 2))x" "$2")"; }

# hdr LENGTH VERSION FLAGS TYPE ID
hdr() { be 4 "$1"; be 1 "$2"; be 1 "$3"; be 2 "$4"; be 8 "$5"; }

# str TEXT: u32 length, then the bytes (ASCII only here).
str() { be 4 "${#1}"; printf '%s' "$1"; }

# frame TYPE FLAGS ID CMD...: a version-1 frame whose payload CMD prints.
frame() {
	t=$1 f=$2 id=$3
	shift 3
	"$@" >"$tmp"
	hdr "$(wc -c <"$tmp")" 1 "$f" "$t" "$id"
	cat "$tmp"
}

none() { :; }
nonce_c() { bytes 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f; }
nonce_s() { bytes f0e1d2c3b4a5968778695a4b3c2d1e0f00112233445566778899aabbccddeeff; }
zero32() { bytes 0000000000000000000000000000000000000000000000000000000000000000; }
proof() { bytes 5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a; }

hello_psk() { be 1 0; nonce_c; str "fuse-qtfs client"; }
hello_insecure() { be 1 1; zero32; str "rexec"; }
challenge() { be 1 0; nonce_s; proof; }
challenge_insecure() { be 1 1; zero32; zero32; }
auth_fail() { be 4 13; str "wrong key"; }
auth_fail_mode() { be 4 71; str "mode mismatch: server wants a pre-shared key"; }

# Every getter once, then a string over its limit (the walk's error path).
walk_all() {
	bytes 00 7f
	bytes 01 beef
	bytes 02 deadbeef
	bytes 03 0102030405060708
	bytes 04 fffffffffffffffe
	bytes 15 abcd
	bytes 06; str "abc"
	bytes 07; str "path/to/file"
	bytes 0e; str "wxyz"
	bytes 0f; str "toolong"
}
walk_ok() { bytes 07; str "ok"; bytes 02 00000000; }
walk_exec() { bytes 07; str "/bin/sh"; bytes 07; str "-c"; bytes 07; str "echo hi"; bytes 02 00000003; }
walk_stdout() { bytes 06; str "hello from the child
"; }
walk_nul() { bytes 07 00000003 61 00 62; }
walk_prefix_huge() { bytes 06 ffffffff 00; }
walk_prefix_short() { bytes 0e 00000008 6162; }
errno_enoent() { be 4 2; }
walk_deep() { bytes 05 05 05 05 2d 0102030405 00 ff 01 ffff 03 0000000000000000 16 00000000; }

seed() { name=$1; shift; "$@" >"$out/$name"; }

ctl() { be 1 "$1"; }

s_ping() { ctl 0x00; frame 0x0010 0 0 none; }
s_hello_psk() { ctl 0x80; frame 0x0001 0 0 hello_psk; }
s_hello_insecure() { ctl 0x02; frame 0x0001 0 0 hello_insecure; }
s_challenge() { ctl 0x07; frame 0x0002 0 0 challenge; }
s_response() { ctl 0x0f; frame 0x0003 0 0 proof; }
s_auth_ok() { ctl 0x00; frame 0x0004 0 0 none; }
s_auth_fail() { ctl 0x41; frame 0x0005 0 0 auth_fail; }
s_request_walk() { ctl 0x80; frame 0x0100 0 1 walk_all; }
s_request_walk_bytewise() { ctl 0x00; frame 0x0100 0 2 walk_all; }
s_reply() { ctl 0x09; frame 0x0100 0x01 1 walk_ok; }
s_error_reply() { ctl 0x80; frame 0x0100 0x03 1 errno_enoent; }
s_more() { ctl 0x13; frame 0x1001 0x05 7 walk_stdout; frame 0x1001 0x01 7 none; }
s_handshake() {
	ctl 0x80
	frame 0x0001 0 0 hello_psk
	frame 0x0002 0 0 challenge
	frame 0x0003 0 0 proof
	frame 0x0004 0 0 none
}
s_handshake_insecure_fail() {
	ctl 0x05
	frame 0x0001 0 0 hello_insecure
	frame 0x0002 0 0 challenge_insecure
	frame 0x0005 0 0 auth_fail_mode
}
s_rexec_b2b() {
	ctl 0x04
	frame 0x1000 0 1 walk_exec
	frame 0x1000 0 2 walk_exec
	frame 0x1000 0 0x1122334455667788 walk_exec
}
s_zero_len_chunked() {
	ctl 0x00
	frame 0x0010 0 0 none
	frame 0x0100 0 1 none
	frame 0x0100 0x01 1 none
	frame 0x0fff 0x07 0xffffffffffffffff none
}
s_zero_len_oneshot() {
	ctl 0xc0
	frame 0x0010 0 0 none
	frame 0x0010 0 0 none
	frame 0x0010 0 0 none
	frame 0x0100 0 9 walk_ok
}
s_trunc_header() { ctl 0x80; hdr 0 1 0 0x0010 0 | head -c 10; }
s_trunc_payload() { ctl 0x03; hdr 100 1 0 0x0100 5; bytes 0001020304050607080910111213141516171819; }
s_bad_version_0() { ctl 0x80; hdr 0 0 0 0x0010 0; }
s_bad_version_2() { ctl 0x01; hdr 4 2 0 0x0100 1; bytes 00000000; }
s_bad_version_255() { ctl 0x80; hdr 0 255 0 0x0010 0; }
s_reserved_flag_08() { ctl 0x80; hdr 0 1 0x08 0x0100 1; }
s_reserved_flag_80() { ctl 0x0a; hdr 0 1 0x80 0x0100 1; }
s_reserved_flags_all() { ctl 0x80; hdr 0xffffffff 1 0xff 0xffff 0xffffffffffffffff; }
s_huge_length() { ctl 0x00; hdr 0xffffffff 1 0 0x0100 1; bytes 00; }
s_over_small_cap() { ctl 0x40; hdr 0x10001 1 0 0x0100 1; }
s_at_small_cap_trunc() { ctl 0xc0; hdr 0x10000 1 0 0x0100 1; bytes 00112233; }
s_over_default_cap() { ctl 0x80; hdr 0x400001 1 0 0x0100 1; }
s_over_hard_cap() { ctl 0x80; hdr 0x4000001 1 0 0x0100 1; }
s_strdup_nul() { ctl 0x80; frame 0x0100 0 3 walk_nul; }
s_prefix_huge() { ctl 0x80; frame 0x0100 0 4 walk_prefix_huge; }
s_prefix_short() { ctl 0x80; frame 0x0100 0 5 walk_prefix_short; }
s_walk_deep() { ctl 0x3f; frame 0x0100 0 6 walk_deep; }
s_good_then_bad() { ctl 0x80; frame 0x0100 0 1 walk_ok; hdr 0 2 0 0x0100 2; }
s_empty() { :; }
s_ctl_only() { ctl 0x3f; }

for s in ping hello_psk hello_insecure challenge response auth_ok auth_fail \
	request_walk request_walk_bytewise reply error_reply more handshake \
	handshake_insecure_fail rexec_b2b zero_len_chunked zero_len_oneshot \
	trunc_header trunc_payload bad_version_0 bad_version_2 bad_version_255 \
	reserved_flag_08 reserved_flag_80 reserved_flags_all huge_length \
	over_small_cap at_small_cap_trunc over_default_cap over_hard_cap \
	strdup_nul prefix_huge prefix_short walk_deep good_then_bad empty ctl_only; do
	seed "$(echo "$s" | tr _ -)" "s_$s"
done
echo "wrote $(find "$out" -type f | wc -l) seeds to $out"
