#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 the secretmem authors
# test/run.sh - run each test program under a timeout and summarize.
# Exit status of a test: 0 pass, 77 skip (its last output line says why),
# anything else fail.  With VALGRIND=1 every test runs under memcheck.
# Ends with the line "N passed, N failed, N skipped"; exits 1 if any failed.
BUILD=${SECRETMEM_BUILD:-build}
export SECRETMEM_BUILD="$BUILD"
timeout_s=${SECRETMEM_TEST_TIMEOUT:-180}
wrap=""
if [ "${VALGRIND:-}" = 1 ]; then
	wrap="valgrind --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite --track-fds=no"
	timeout_s=${SECRETMEM_TEST_TIMEOUT:-900}
	export SECRETMEM_UNDER_VALGRIND=1
fi
pass=0 fail=0 skip=0 failed=""
mkdir -p "$BUILD/test-logs"
for t in "$@"; do
	name=${t##*/}
	log="$BUILD/test-logs/$name.log"
	start=$(date +%s)
	timeout -k 10 "$timeout_s" $wrap "$t" >"$log" 2>&1 </dev/null
	rc=$?
	secs=$(( $(date +%s) - start ))
	case $rc in
	0)  pass=$((pass + 1)); echo "PASS $name (${secs}s)" ;;
	77) skip=$((skip + 1)); echo "SKIP $name: $(tail -n 1 "$log")" ;;
	*)  fail=$((fail + 1)); failed="$failed $name"
	    [ $rc = 124 ] && echo "FAIL $name: timed out after ${timeout_s}s" || echo "FAIL $name (exit $rc)"
	    # a sanitizer's report: its head names the error and where; the
	    # tail alone is its shadow-byte legend
	    grep -n -m 1 -E '^==[0-9]+==ERROR|WARNING: ThreadSanitizer|runtime error:' "$log" |
		cut -d: -f1 | while read -r at; do
		    sed -n "$at,$((at + 14))p" "$log" | sed 's/^/    | /'
		    echo "    | ..."
		done
	    tail -n 20 "$log" | sed 's/^/    | /' ;;
	esac
done
[ -n "$failed" ] && echo "failed:$failed"
echo "$pass passed, $fail failed, $skip skipped"
[ $fail = 0 ]
