#!/usr/bin/env bash
# The compatibility suite's programs (crates/warden-cli/tests/compat.rs), timed: each workload
# natively and under `warden run` with the default policy, interleaved (which goes first
# alternates), from a fresh empty directory (natively) or the scratch directory (warden). Prints
# the median wall time of each and the ratio, and the load average before and after.
#
#   bash bench/compat.sh [--reps N] [--warden PATH] [--view on|off] [--fast-path auto|always|never]
#
# Without --view and --fast-path, warden runs as a user runs it (the default: its own view, the
# kernel first); `--view off --fast-path never` is the first release's default, every path call
# delegated to the agent.
#
# Needs a release build (cargo build --release) unless --warden is given. Workloads whose
# programs are missing are left out and named.
set -euo pipefail
cd "$(dirname "$0")/.."
reps=5
warden=target/release/warden
view=
fast=
while [ $# -gt 0 ]; do
    case "$1" in
        --reps) reps=$2; shift 2 ;;
        --warden) warden=$2; shift 2 ;;
        --view) view=$2; shift 2 ;;
        --fast-path) fast=$2; shift 2 ;;
        *) echo "compat.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
[ -x "$warden" ] || { echo "compat.sh: no $warden (cargo build --release)" >&2; exit 2; }
warden=$(realpath "$warden")
export LC_ALL=C TZ=UTC PATH=/usr/local/bin:/usr/bin:/bin

# name|programs it needs|flags for warden|script
workloads=(
"tar|/usr/bin/tar|-|mkdir -p a && for i in \$(seq 1 200); do echo \$i > a/f\$i; ln -s f\$i a/l\$i; done && tar cf t.tar a && mkdir o && tar xf t.tar -C o"
"gzip+xz|/usr/bin/gzip /usr/bin/xz|-|seq 1 300000 > n && gzip -k n && xz -k n && gzip -dc n.gz > /dev/null && xz -dc n.xz > /dev/null"
"ls -laR /usr/share/doc|-|-|ls -laR /usr/share/doc > /dev/null 2>&1"
"find /usr|-|-|find /usr > /dev/null 2>&1"
"grep -r /usr/share/doc|-|-|grep -r zlib /usr/share/doc > /dev/null 2>&1 || true"
"make -j8 (40 files)|/usr/bin/make|-|printf 'all: \$(addprefix out/,\$(addsuffix .txt,\$(shell seq 1 40)))\\nout/%%.txt:\\n\\t@mkdir -p out && echo \$* > \$@.tmp && mv \$@.tmp \$@\\n' > Makefile && make -s -j8"
"git init/commit/gc|/usr/bin/git|-|git init -q r && cd r && for i in 1 2 3 4 5; do echo \$i > f\$i; git add f\$i; git -c user.email=a@b -c user.name=n commit -q -m c\$i; done && git gc -q && git fsck --no-progress"
"sqlite3|/usr/bin/sqlite3|-|sqlite3 db 'create table t(x); with recursive c(i) as (select 1 union all select i+1 from c where i<10000) insert into t select i from c;' && sqlite3 db 'select sum(x) from t;' > /dev/null"
"python3 -m venv|/usr/bin/python3|--exec \$SCRATCH/ve/bin/*|python3 -m venv --without-pip ve && ve/bin/python -c 'import sys'"
"python3 threads+subprocesses|/usr/bin/python3|-|python3 -c 'import subprocess, concurrent.futures as f
with f.ThreadPoolExecutor(4) as e: list(e.map(lambda i: subprocess.run([\"true\"]), range(16)))'"
"node worker threads|/usr/bin/node|-|node -e \"const {Worker}=require('worker_threads'); let n=0; for (let i=0;i<4;i++){ const w=new Worker('require(\\\"worker_threads\\\").parentPort.postMessage(1)',{eval:true}); w.on('message',()=>{ if(++n==4) process.exit(0); }); }\""
"cc build and run|/usr/bin/cc|--exec \$SCRATCH/bin/*|mkdir -p bin && printf '#include <stdio.h>\\nint main(void){puts(\"x\");return 0;}\\n' > m.c && cc -o bin/m m.c && bin/m > /dev/null"
"uptime|/usr/bin/uptime|-|uptime > /dev/null"
)

now() { date +%s%N; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : int((a[NR/2]+a[NR/2+1])/2)}'; }

mode=()
[ -z "$view" ] || mode+=(--view "$view")
[ -z "$fast" ] || mode+=(--fast-path "$fast")
echo "warden run ${mode[*]:-(the default)}; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-32s %12s %12s %8s\n' workload "native ms" "warden ms" ratio
missing=()
for w in "${workloads[@]}"; do
    IFS='|' read -r name needs flags script <<< "${w%%$'\n'*}"
    # The script may span lines: everything after the third '|'.
    script=${w#*|*|*|}
    ok=1
    if [ "$needs" != "-" ]; then
        for p in $needs; do [ -x "$p" ] || ok=0; done
    fi
    [ $ok = 1 ] || { missing+=("$name"); continue; }
    wflags=()
    [ "$flags" = "-" ] || read -r -a wflags <<< "$flags"
    nat=() san=()
    for i in $(seq 1 "$reps"); do
        for order in $([ $((i % 2)) = 0 ] && echo "n w" || echo "w n"); do
            if [ "$order" = n ]; then
                d=$(mktemp -d)
                t0=$(now); (cd "$d" && HOME=$d bash -c "$script") > /dev/null 2>&1 || echo "compat.sh: $name failed natively" >&2
                t1=$(now); rm -rf "$d"; nat+=($(( (t1 - t0) / 1000 )))
            else
                t0=$(now); "$warden" run "${mode[@]}" "${wflags[@]}" -- bash -c "export HOME=\$PWD; $script" > /dev/null 2>&1 || echo "compat.sh: $name failed under warden" >&2
                t1=$(now); san+=($(( (t1 - t0) / 1000 )))
            fi
        done
    done
    n=$(printf '%s\n' "${nat[@]}" | median)
    s=$(printf '%s\n' "${san[@]}" | median)
    printf '%-32s %12.1f %12.1f %7.2fx\n' "$name" "$(echo "$n/1000" | bc -l)" "$(echo "$s/1000" | bc -l)" "$(echo "$s/$n" | bc -l)"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
[ ${#missing[@]} = 0 ] || echo "left out (not installed): ${missing[*]}"
