#!/bin/bash
# 23-worker-view.sh: end-to-end tests of what a task sees of its allocation on
# a real work_queue_worker: CORES, OMP_NUM_THREADS and MEMORY from its
# allocation, and with --pin-cores a cpuset of its own, so that nproc inside
# the task is its cores and two tasks running at once hold different cpus.
. "$(dirname "$0")/../lib/test-lib.sh"
. "$(dirname "$0")/../lib/wq-lib.sh"

test_require_bin makeflow
test_require_bin work_queue_worker

MF=$BIN/makeflow
WORKER=$BIN/work_queue_worker
TEST_TIMEOUT=180

have_cpuset() {
	[ -w /sys/fs/cgroup/cpuset ] || grep -qw cpuset /sys/fs/cgroup/cgroup.controllers 2>/dev/null
}

# view_rules N: N rules of one core and 300 MB each, writing what they see, and
# waiting (a bounded while) until every one of them has started, so that they
# run side by side. GNU nproc obeys OMP_NUM_THREADS, so the affinity is read
# with it unset.
view_rules() {
	cat >view.sh <<-EOF
	touch "$PWD/marks/started.\$2"
	n=0
	while [ "\$(ls "$PWD/marks" | grep -c "^started")" -lt "\$1" ] && [ \$n -lt 600 ]; do
		sleep 0.1
		n=\$((n + 1))
	done
	echo "\$(env -u OMP_NUM_THREADS nproc) \$CORES \$OMP_NUM_THREADS \$MEMORY \$(grep Cpus_allowed_list /proc/self/status | cut -f2)"
	EOF
	echo "CORES=1"
	echo "MEMORY=300"
	for i in $(seq 1 "$1"); do
		printf 'v.%d: view.sh\n\tsh view.sh %d %d > v.%d\n' "$i" "$1" "$i" "$i"
	done
}

test_expect_success 'a task sees CORES, OMP_NUM_THREADS and MEMORY of its allocation' '
	mkdir marks
	view_rules 1 >Makeflow
	start_master Makeflow
	start_worker --cores 2 --memory 2000 localhost $port
	finish
	read -r np cores omp mem cpus <v.1
	[ "$cores" = 1 ] && [ "$omp" = 1 ] && [ "$mem" = 300 ]
'

if have_cpuset && [ "$(nproc)" -ge 2 ]; then
	test_expect_success '--pin-cores: nproc in a task is its cores; tasks side by side hold different cpus' '
		mkdir marks
		view_rules 2 >Makeflow
		start_master Makeflow
		start_worker --pin-cores --cores 2 --memory 2000 localhost $port
		finish
		read -r np1 c1 o1 m1 cpus1 <v.1
		read -r np2 c2 o2 m2 cpus2 <v.2
		[ "$np1" = 1 ] && [ "$np2" = 1 ] && [ "$c1" = 1 ] && [ "$c2" = 1 ]
		[ "$cpus1" != "$cpus2" ] || { echo "both tasks on cpu $cpus1" >&2; exit 1; }
	'

	test_expect_success 'without --pin-cores a task is not pinned (nproc is the machine)' '
		mkdir marks
		view_rules 1 >Makeflow
		start_master Makeflow
		start_worker --cores 1 --memory 2000 localhost $port
		finish
		read -r np cores omp mem cpus <v.1
		[ "$np" = "$(nproc)" ] || { cat v.1 >&2; exit 1; }
	'
else
	say "no cpuset controller or fewer than 2 cpus: the --pin-cores cases are not run"
	[ -z "${CI:-}" ] || test_expect_success 'a cpuset controller and 2 cpus are needed in CI' 'false'
fi

test_done
