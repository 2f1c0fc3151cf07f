# Shared by bench/run.sh, bench/durable.sh and bench/scaling.sh, which
# source it before they change to bench/.
#
# BENCH_OUT=dir: the intermediate files and the report go to dir (made if
# missing; relative to where the script was started) instead of
# bench/results/ and bench/RESULTS.md or bench/SCALING.md.
# BENCH_SMOKE=1: every workload (or scaling point) once at its smallest
# size, to show that the command works, not to measure: without BENCH_OUT
# its files go to a fresh temporary directory, removed if the run passes,
# so that it never touches RESULTS.md or SCALING.md; and, as with
# BENCH_CHECK=1, the script fails if any run or process failed. A peer
# that needs something missing here (goqite without cgo) is skipped, with
# the reason printed; that is no failure.

# bench_out sets out, the directory of BENCH_OUT or of a smoke run ("":
# bench/ and bench/results/), and smoke_tmp, the smoke run's temporary
# directory if it made one.
bench_out() {
	out=""
	smoke_tmp=""
	if [ -n "${BENCH_OUT:-}" ]; then
		mkdir -p "$BENCH_OUT"
		out=$(cd "$BENCH_OUT" && pwd)
	elif [ "${BENCH_SMOKE:-}" = 1 ]; then
		out=$(mktemp -d "${TMPDIR:-/tmp}/minibus-bench-smoke.XXXXXX")
		smoke_tmp=$out
	fi
}

# bench_finish ends a script whose runs left the notes $1 (semicolon-
# separated; empty if every process finished) and whose report is $2. With
# BENCH_CHECK=1 or BENCH_SMOKE=1 a note fails the script. A smoke run that
# passed removes its temporary directory.
bench_finish() {
	local missing=$1 report=$2
	if [ -n "$missing" ] && { [ "${BENCH_CHECK:-}" = 1 ] || [ "${BENCH_SMOKE:-}" = 1 ]; }; then
		echo "FAIL: ${missing#;}" | sed 's/;/\nFAIL: /g' >&2
		echo "the report and the runs' files are in $(dirname "$report")" >&2
		exit 1
	fi
	if [ -n "$smoke_tmp" ]; then
		rm -rf "$smoke_tmp"
		echo "smoke run passed; removed $smoke_tmp" >&2
	fi
}
