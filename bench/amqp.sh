#!/usr/bin/env bash
# Measures minibus's AMQP endpoint and rewrites the "AMQP endpoint"
# section of bench/RESULTS.md, leaving the rest as it is:
#  - the AMQP layer against the Qpid Proton C example broker, both driven
#    by the same go-amqp program (throughput, p99 latency, at link credit
#    1, 100 and 1000, sends pre-settled and confirmed);
#  - memory per idle connection of each (1,000 connections, each with a
#    sender and a receiver link that exchanged a message);
#  - end to end through azservicebus against `minibus serve`, with the
#    CPU per message of the server and of the client, and a CPU profile of
#    each;
#  - `minibus serve` from exec to /health 200, 20 times.
# Package bench/wire says how; every run is a process of its own.
#
#   bench/amqp.sh                     # the whole set, 3 repetitions: about 10 minutes on 2 cores
#   BENCH_SMOKE=1 bench/amqp.sh       # each run once at its smallest: does the command work? (CI)
#
# The Proton broker is built here, into bench/results/ (nothing of it is
# committed): Debian's libqpid-proton11-dev (apt-get install) and the
# broker.c of libqpid-proton11-dev-examples (apt-get download, dpkg -x),
# compiled with gcc. Where apt-get or gcc is missing, or the install
# fails, the Proton runs are skipped with the reason printed (and named in
# the report).
#
# Environment: BENCH_SMOKE=1 (as above: the files go to a fresh temporary
# directory, removed if the run passes, RESULTS.md untouched, and the
# script fails if any run failed), BENCH_OUT=dir (the files and the
# report go to dir instead of bench/results/ and bench/RESULTS.md),
# BENCH_NO_PROTON=1 (skip the Proton broker), BENCH_REPS (repetitions,
# default 3; with BENCH_SMOKE 1), BENCH_RUN_TIMEOUT (one run, default 5m).
set -euo pipefail

out=""
smoke_tmp=""
if [ -n "${BENCH_OUT:-}" ]; then
	mkdir -p "$BENCH_OUT"
	out=$(cd "$BENCH_OUT" && pwd)
elif [ "${BENCH_SMOKE:-}" = 1 ]; then
	out=$(mktemp -d "${TMPDIR:-/tmp}/minibus-bench-amqp.XXXXXX")
	smoke_tmp=$out
fi
cd "$(dirname "$0")"

command="bench/amqp.sh"
for v in BENCH_RUN_TIMEOUT BENCH_REPS BENCH_NO_PROTON BENCH_SMOKE; do
	if [ -n "${!v:-}" ]; then
		command="$v=\"${!v}\" $command"
	fi
done

results=${out:-$PWD/results}
md=${out:-.}/RESULTS.md
mkdir -p "$results"
rm -f "$results"/amqp*.json "$results"/amqp-*.pprof

# 1,000 connections: two descriptors each in this machine's processes.
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt 8192 ]; then
	ulimit -n 8192 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
fi
echo "ulimit -n: $(ulimit -n)" >&2

echo "== load before: $(uptime)" >&2
go build -o "$results/minibus" ../cmd/minibus
go build -o "$results/wirebench" ./wire/cmd/wirebench
go build -o "$results/healthfloor" ./wire/cmd/healthfloor

# The Proton C example broker.
proton_bin=""
proton_skip=""
proton_version=""
build_proton() {
	if [ -n "${BENCH_NO_PROTON:-}" ]; then
		proton_skip="BENCH_NO_PROTON is set"
		return
	fi
	for tool in apt-get dpkg gcc; do
		if ! command -v "$tool" >/dev/null; then
			proton_skip="$tool is not installed"
			return
		fi
	done
	if ! dpkg -s libqpid-proton11-dev >/dev/null 2>&1; then
		local sudo=""
		if [ "$(id -u)" != 0 ]; then
			if command -v sudo >/dev/null; then sudo="sudo -n"; else
				proton_skip="libqpid-proton11-dev is not installed and this is not root"
				return
			fi
		fi
		if ! DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends libqpid-proton11-dev >"$results/proton-apt.log" 2>&1; then
			$sudo apt-get update >>"$results/proton-apt.log" 2>&1 || true
			if ! DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends libqpid-proton11-dev >>"$results/proton-apt.log" 2>&1; then
				proton_skip="apt-get install libqpid-proton11-dev failed ($(tail -1 "$results/proton-apt.log"))"
				return
			fi
		fi
	fi
	proton_version=$(dpkg-query -W -f '${Version}' libqpid-proton11-dev 2>/dev/null || echo unknown)
	local dir="$results/proton"
	if [ ! -f "$dir/broker.c" ]; then
		rm -rf "$dir" && mkdir -p "$dir"
		if ! (cd "$dir" && apt-get download libqpid-proton11-dev-examples >download.log 2>&1); then
			proton_skip="apt-get download libqpid-proton11-dev-examples failed ($(tail -1 "$dir/download.log"))"
			return
		fi
		dpkg -x "$dir"/libqpid-proton11-dev-examples_*.deb "$dir/x"
		cp "$dir/x/usr/share/proton/examples/c/broker.c" "$dir/x/usr/share/proton/examples/c/thread.h" "$dir/"
	fi
	if ! gcc -O2 -o "$results/proton-broker" "$dir/broker.c" -lqpid-proton -lpthread 2>"$dir/gcc.log"; then
		proton_skip="gcc could not build broker.c ($(head -1 "$dir/gcc.log"))"
		return
	fi
	proton_bin="$results/proton-broker"
}
build_proton
if [ -n "$proton_skip" ]; then
	echo "== skipping the Proton broker: $proton_skip" >&2
fi

rev=$(git -C .. rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git -C .. status --porcelain 2>/dev/null)" ]; then
	rev="$rev with uncommitted changes"
fi

smoke_flag=""
if [ "${BENCH_SMOKE:-}" = 1 ]; then
	smoke_flag="-smoke"
fi
status=0
"$results/wirebench" -suite $smoke_flag -out "$results/amqp.json" -results "$results" \
	-minibus "$results/minibus" -floor "$results/healthfloor" -proton "$proton_bin" -proton-skip "$proton_skip" -proton-version "$proton_version" \
	-rev "$rev" -reps "${BENCH_REPS:-0}" -run-timeout "${BENCH_RUN_TIMEOUT:-5m}" || status=$?
echo "== load after: $(uptime)" >&2
if [ ! -f "$results/amqp.json" ]; then
	echo "FAIL: wirebench -suite wrote no results (status $status)" >&2
	exit 1
fi
"$results/wirebench" -report -in "$results/amqp.json" -md "$md" -command "$command"
echo "wrote the AMQP section of ${out:-bench}/RESULTS.md" >&2

if [ "$status" -ne 0 ] && { [ "${BENCH_SMOKE:-}" = 1 ] || [ "${BENCH_CHECK:-}" = 1 ]; }; then
	echo "FAIL: some runs failed; the report and the runs' files are in $results" >&2
	exit 1
fi
if [ -n "$smoke_tmp" ]; then
	rm -rf "$smoke_tmp"
	echo "smoke run passed; removed $smoke_tmp" >&2
fi
