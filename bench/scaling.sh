#!/usr/bin/env bash
# Runs the minibus scaling set (queue depth, fan-out, entities, blocked
# receivers, one clock jump; minibus beside the btree baseline) and writes
# bench/SCALING.md and bench/scaling-*.png. Each point (one size of one
# variable) runs in a process of its own (cmd/minibench -scaling ID -x N);
# SCALING.md says why.
#
#   bench/scaling.sh                      # the full set, 5 repetitions: about 7 minutes on 2 cores
#   BENCH_QUICK=1 bench/scaling.sh        # the smaller sizes, 1/100 of the work: ~15 s
#   BENCH_SMOKE=1 bench/scaling.sh        # the smaller sizes once, at their least work: does the command work? (CI)
#   BENCH_SCALING="depth jump" bench/scaling.sh
#   BENCH_SCALING=1 bench/run.sh          # the same as bench/scaling.sh
#
# Environment: BENCH_QUICK=1, BENCH_SMOKE=1 and BENCH_OUT (bench/lib.sh
# says what they do), BENCH_CHECK=1 (fail if a run or process failed),
# BENCH_SCALING (space-separated variables: depth fanout entities blocked
# jump; "1" or empty for all), BENCH_SCALE (fraction of the measured
# work), BENCH_REPS (default 5; with BENCH_SMOKE 1), BENCH_PEERS
# (comma-separated, default minibus,btree), BENCH_RUN_TIMEOUT (one run,
# default 5m), BENCH_STALL (default 60s), BENCH_PROCESS_TIMEOUT (one point,
# default 6m). Intermediate files go to bench/results/ (ignored by git) or
# BENCH_OUT; the PNGs go beside SCALING.md.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_out
cd "$(dirname "$0")"

command="bench/scaling.sh"
for v in BENCH_PROCESS_TIMEOUT BENCH_STALL BENCH_RUN_TIMEOUT BENCH_PEERS BENCH_REPS BENCH_SCALE BENCH_SCALING BENCH_CHECK BENCH_SMOKE BENCH_QUICK; do
	if [ -n "${!v:-}" ]; then
		command="$v=\"${!v}\" $command"
	fi
done

sets="${BENCH_SCALING:-}"
if [ -z "$sets" ] || [ "$sets" = 1 ]; then
	sets="depth fanout entities blocked jump"
fi

reps=${BENCH_REPS:-5}
if [ "${BENCH_SMOKE:-}" = 1 ]; then
	reps=${BENCH_REPS:-1}
fi

results=${out:-results}
md=${out:-.}/SCALING.md
mkdir -p "$results"
rm -f "$results"/S-*.json "$results"/S-*.json.tmp
go build -o "$results/minibench" ./cmd/minibench

rev=$(git -C .. rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git -C .. status --porcelain 2>/dev/null)" ]; then
	rev="$rev with uncommitted changes"
fi

missing=""
start=$(date +%s)
for s in $sets; do
	for x in $("$results/minibench" -points "$s"); do
		echo "== $s n=$x ($(($(date +%s) - start)) s so far)" >&2
		status=0
		timeout --signal=QUIT --kill-after=30s "${BENCH_PROCESS_TIMEOUT:-6m}" \
			"$results/minibench" -scaling "$s" -x "$x" -reps "$reps" -out "$results/S-$s-$x.json" -minibus-rev "$rev" || status=$?
		if [ "$status" -eq 124 ]; then
			missing="$missing;$s n=$x: the process was stopped by the script's ${BENCH_PROCESS_TIMEOUT:-6m} timeout"
		elif [ "$status" -ne 0 ]; then
			missing="$missing;$s n=$x: the process exited with status $status"
		fi
	done
done
echo "== done in $(($(date +%s) - start)) s" >&2

"$results/minibench" -scaling-report -in "$results" -md "$md" -command "$command" -missing "$missing"
echo "wrote ${out:-bench}/SCALING.md and ${out:-bench}/scaling-*.png" >&2
bench_finish "$missing" "$md"
