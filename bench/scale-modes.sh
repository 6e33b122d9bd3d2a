#!/usr/bin/env bash
# The scaling benchmark's program (bench/scale.c) under each way of confining it, side by side:
# 1,000,000 open+close of 100 files over 1 and over 10 processes, the modes interleaved round by
# round; prints medians in ms and each mode's p10/p1 ratio of ratios (1.00 = scales as natively).
#
#   bash bench/scale-modes.sh [--rounds N] [--warden PATH] [--base PATH]
#
# Modes: native; pure Landlock with every right handled (landlock-run) and with truncate
# unhandled (landlock-run -t, the walk warden's kernel-first runs make); `warden run` with the
# default policy (a view, the kernel first); warden on the host's tree with the fast-path base
# (--view off --fast-path=always). With --base, the two warden modes again with that build.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=5 warden= base=
while [ $# -gt 0 ]; do
    case $1 in
        --rounds) rounds=$2; shift 2 ;;
        --warden) warden=$2; shift 2 ;;
        --base) base=$2; shift 2 ;;
        *) echo "usage: bash bench/scale-modes.sh [--rounds N] [--warden PATH] [--base PATH]" >&2; exit 2 ;;
    esac
done
if [ -z "$warden" ]; then
    # Where cargo put it, as bench/run.sh asks (.cargo/config.toml: target/<host>/release).
    warden=$(cargo build --release --locked -q -p warden-cli --message-format=json \
        | sed -n 's/.*"executable":"\([^"]*\/warden\)".*/\1/p' | tail -1)
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/warden-scale.XXXXXX")
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
cc -O2 -o "$work/scale" bench/scale.c
cc -O2 -o "$work/landlock-run" bench/landlock-run.c
files=$work/files
mkdir "$files"
for i in $(seq 0 99); do echo "file $i" > "$files/f$i"; done
chmod -R a+rX "$files"
fast=crates/warden-cli/tests/fast-path.policy
grants=(--read "$files" --read "$work" --exec "$work")
landlock=("$work/landlock-run" -r "$files" -x "$work" -x /usr -r /etc/ld.so.cache)
declare -A argv
argv[native]=""
argv[landlock]="${landlock[*]} --"
argv[landlock-t]="${landlock[0]} -t ${landlock[*]:1} --"
argv[warden]="$warden run ${grants[*]} --"
argv[warden-fast-host]="$warden run --view off --default-policy=no --policy $fast --fast-path=always ${grants[*]} --"
modes=(native landlock landlock-t warden warden-fast-host)
if [ -n "$base" ]; then
    argv[base]="$base run ${grants[*]} --"
    argv[base-fast-host]="$base run --view off --default-policy=no --policy $fast --fast-path=always ${grants[*]} --"
    modes+=(base base-fast-host)
fi
echo "# bench/scale-modes.sh: $rounds rounds; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq 1 "$rounds"); do
    for p in 1 10; do
        for m in "${modes[@]}"; do
            # shellcheck disable=SC2086 # the prefix is words on purpose
            out=$(${argv[$m]} "$work/scale" "$files" 100 "$p" 1000000)
            printf '%s\t%s\t%s\n' "$p" "$m" "${out%% *}" >> "$work/samples"
        done
    done
done
python3 - "$work/samples" "${modes[@]}" <<'PY'
import collections, statistics, sys
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    p, m, ns = line.split()
    d[(int(p), m)].append(int(ns) / 1e6)
med = {k: statistics.median(v) for k, v in d.items()}
print(f"| mode | 1 process ms | 10 processes ms | p10/p1 ratio of ratios |")
print("| --- | --- | --- | --- |")
for m in sys.argv[2:]:
    a, b = med[(1, m)], med[(10, m)]
    r = (b / med[(10, "native")]) / (a / med[(1, "native")])
    print(f"| {m} | {a:.0f} | {b:.0f} | {r:.2f} |")
PY
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
