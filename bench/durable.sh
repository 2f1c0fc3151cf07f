#!/usr/bin/env bash
# Runs the durable set (D1 … D6: sends to a store on disk from 1, 4 and 64
# producers, single and in batches of 32, minibus in each sync mode beside
# NATS JetStream's file store and goqite on a SQLite file; D7: minibus.Open
# of a store of 1,000,000 messages) and rewrites the durable section of
# bench/RESULTS.md, leaving the rest as it is. Each workload runs in a
# process of its own (cmd/minibench -workload Dn), as in bench/run.sh.
#
#   bench/durable.sh                      # the full set, 3 repetitions: about 8 minutes on 2 cores
#   BENCH_DURABLE=1 bench/run.sh          # the same
#   BENCH_QUICK=1 bench/durable.sh        # 1/100 of the time and counts: a quick look
#   BENCH_SMOKE=1 bench/durable.sh        # each run once at its smallest: does the command work? (CI)
#   BENCH_WORKLOADS="D2 D7" BENCH_DIR=/var/tmp bench/durable.sh
#
# Environment: BENCH_QUICK=1, BENCH_SMOKE=1 and BENCH_OUT (bench/lib.sh
# says what they do), BENCH_CHECK=1 (fail if a run or process failed),
# BENCH_SCALE (fraction of the measured time and of D7's count),
# BENCH_REPS (default 3; with BENCH_SMOKE 1), BENCH_PEERS (comma-separated),
# BENCH_WORKLOADS (space-separated, default D1 … D7), BENCH_DIR (where the
# stores go: a disk, not a tmpfs; default the system's temporary directory),
# BENCH_RUN_TIMEOUT (one run, default 5m), BENCH_STALL (default 60s),
# BENCH_PROCESS_TIMEOUT (one workload process, default 10m). Intermediate
# files go to bench/results/ (ignored by git) or BENCH_OUT.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_out
cd "$(dirname "$0")"

command="bench/durable.sh"
for v in BENCH_PROCESS_TIMEOUT BENCH_STALL BENCH_RUN_TIMEOUT BENCH_DIR BENCH_WORKLOADS BENCH_PEERS BENCH_REPS BENCH_SCALE BENCH_CHECK BENCH_SMOKE BENCH_QUICK; do
	if [ -n "${!v:-}" ]; then
		command="$v=\"${!v}\" $command"
	fi
done

results=${out:-results}
md=${out:-.}/RESULTS.md
mkdir -p "$results"
rm -f "$results"/D*.json "$results"/D*.json.tmp
go build -o "$results/minibench" ./cmd/minibench

rev=$(git -C .. rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git -C .. status --porcelain 2>/dev/null)" ]; then
	rev="$rev with uncommitted changes"
fi

missing=""
start=$(date +%s)
for w in ${BENCH_WORKLOADS:-D1 D2 D3 D4 D5 D6 D7}; do
	echo "== $w ($(($(date +%s) - start)) s so far)" >&2
	status=0
	timeout --signal=QUIT --kill-after=30s "${BENCH_PROCESS_TIMEOUT:-10m}" \
		"$results/minibench" -workload "$w" -out "$results/$w.json" -minibus-rev "$rev" || status=$?
	if [ "$status" -eq 124 ]; then
		missing="$missing;$w: the process was stopped by the script's ${BENCH_PROCESS_TIMEOUT:-10m} timeout"
	elif [ "$status" -ne 0 ]; then
		missing="$missing;$w: the process exited with status $status"
	fi
done
echo "== done in $(($(date +%s) - start)) s" >&2

"$results/minibench" -durable-report -in "$results" -md "$md" -command "$command" -missing "$missing"
echo "wrote the durable section of ${out:-bench}/RESULTS.md" >&2
bench_finish "$missing" "$md"
