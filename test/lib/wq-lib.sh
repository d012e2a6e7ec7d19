# wq-lib.sh: helpers shared by the end-to-end suites that run makeflow -T wq with real
# workers. Source it after test-lib.sh; it expects MF and WORKER to name the binaries.

# start_master ARGS...: makeflow -T wq on port 0 in the background with ARGS; waits for the
# port file. Sets mf (pid) and port. makeflow's output goes to mf.out.
start_master() {
	rm -f port
	"$MF" -T wq -p 0 -Z port --progress=quiet "$@" >mf.out 2>&1 &
	mf=$!
	test_track_pid $mf
	test_wait_for_file port 20 || {
		cat mf.out >&2
		return 1
	}
	port=$(cat port)
}

# start_worker ARGS...: a worker (idle timeout 30 s) in the background with ARGS, its output
# appended to workers.out and its pid tracked; sets w.
start_worker() {
	"$WORKER" -t 30 "$@" >>workers.out 2>&1 &
	w=$!
	test_track_pid $w
}

# finish: waits for makeflow and returns its status (showing its output when it failed).
finish() {
	local rc=0
	wait $mf || rc=$?
	[ $rc = 0 ] || cat mf.out >&2
	return $rc
}
