#!/usr/bin/env bash
# Runs the minibus benchmark matrix (W1 … W7 over every peer, 3 repetitions)
# and writes bench/RESULTS.md. Each workload runs in a process of its own
# (cmd/minibench -workload Wn), and each of its runs in a child process of
# that one; RESULTS.md says why.
#
#   bench/run.sh                          # the full matrix
#   BENCH_QUICK=1 bench/run.sh            # 1/100 of the counts: a quick look
#   BENCH_SMOKE=1 bench/run.sh            # each run once at its smallest: does the command work? (CI)
#   BENCH_WORKLOADS="W1 W4" BENCH_PEERS=minibus,btree bench/run.sh
#   BENCH_SCALING=1 bench/run.sh          # the scaling set instead: bench/scaling.sh
#   BENCH_DURABLE=1 bench/run.sh          # the durable set instead: bench/durable.sh
#
# Environment: BENCH_QUICK=1, BENCH_SMOKE=1 and BENCH_OUT (bench/lib.sh
# says what they do), BENCH_CHECK=1 (fail if a run or process failed),
# BENCH_SCALE (fraction of the full counts), BENCH_REPS (default 3; with
# BENCH_SMOKE 1), BENCH_PEERS (comma-separated), BENCH_WORKLOADS
# (space-separated), BENCH_RUN_TIMEOUT (one run, default 5m), BENCH_STALL
# (no progress this long stops a run, default 60s), BENCH_PROCESS_TIMEOUT
# (one workload process, default 12m). Intermediate files go to
# bench/results/ (ignored by git) or BENCH_OUT. RESULTS.md's durable section, written by
# bench/durable.sh, is kept as it is.
set -euo pipefail

if [ -n "${BENCH_SCALING:-}" ]; then
	exec "$(dirname "$0")/scaling.sh"
fi
if [ -n "${BENCH_DURABLE:-}" ]; then
	exec "$(dirname "$0")/durable.sh"
fi
. "$(dirname "$0")/lib.sh"
bench_out
cd "$(dirname "$0")"

command="bench/run.sh"
for v in BENCH_PROCESS_TIMEOUT BENCH_STALL BENCH_RUN_TIMEOUT BENCH_WORKLOADS BENCH_PEERS BENCH_REPS BENCH_SCALE BENCH_CHECK BENCH_SMOKE BENCH_QUICK; do
	if [ -n "${!v:-}" ]; then
		command="$v=\"${!v}\" $command"
	fi
done

results=${out:-results}
md=${out:-.}/RESULTS.md
mkdir -p "$results"
rm -f "$results"/W*.json "$results"/W*.json.tmp
go build -o "$results/minibench" ./cmd/minibench

rev=$(git -C .. rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git -C .. status --porcelain 2>/dev/null)" ]; then
	rev="$rev with uncommitted changes"
fi

missing=""
start=$(date +%s)
for w in ${BENCH_WORKLOADS:-W1 W2 W3 W4 W5 W6 W7}; do
	echo "== $w ($(($(date +%s) - start)) s so far)" >&2
	status=0
	timeout --signal=QUIT --kill-after=30s "${BENCH_PROCESS_TIMEOUT:-12m}" \
		"$results/minibench" -workload "$w" -out "$results/$w.json" -minibus-rev "$rev" || status=$?
	if [ "$status" -eq 124 ]; then
		missing="$missing;$w: the process was stopped by the script's ${BENCH_PROCESS_TIMEOUT:-12m} timeout"
	elif [ "$status" -ne 0 ]; then
		missing="$missing;$w: the process exited with status $status"
	fi
done
echo "== done in $(($(date +%s) - start)) s" >&2

"$results/minibench" -report -in "$results" -md "$md" -command "$command" -missing "$missing"
echo "wrote ${out:-bench}/RESULTS.md" >&2
bench_finish "$missing" "$md"
