#!/bin/bash
# ab.sh: compares two builds of this project (say, before and after a restructure) on the local
# and Work Queue null-rule benchmarks, in alternating runs on the same machine, and prints the
# median and the range of each. Usage: ab.sh OLD_BUILD NEW_BUILD [RUNS]; AB_TASKS (default 5000)
# rules per run. The Work Queue runs are wq.sh's part 1 without CCTools (one 2-core worker, two
# 1-core workers).
set -u
SRCDIR=$(cd "$(dirname "$0")/../.." && pwd)
OLD=$1
NEW=$2
RUNS=${3:-3}
N=${AB_TASKS:-5000}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/htc-ab.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
chattr +T "$WORK" 2>/dev/null

python3 - "$WORK/local.mf" "$N" <<'PY'
import sys
with open(sys.argv[1], 'w') as f:
    for i in range(int(sys.argv[2])):
        f.write('out.%d:\n\ttouch out.%d\n\n' % (i, i))
PY

# local_run BUILD: seconds for N trivial rules through makeflow -T local -j 2, in a directory
# of a name not used before (see wq.sh on ext4 without a journal).
seq=0
local_run() {
	seq=$((seq + 1))
	local d=$WORK/local.$seq.$RANDOM
	mkdir -p "$d" && cp "$WORK/local.mf" "$d/Makeflow"
	local s e
	s=$(date +%s.%N)
	(cd "$d" && "$1/bin/makeflow" -T local -j 2 --progress=quiet Makeflow >/dev/null 2>&1) || {
		echo failed
		return
	}
	e=$(date +%s.%N)
	rm -rf "$d"
	python3 -c "print('%.1f' % ($N / ($e - $s)))"
}

# wq_run BUILD: tasks/s with one 2-core worker and with two 1-core workers.
wq_run() {
	WQ_PARTS=1 WQ_TMPFS=0 WQ_SECCOMP=0 WQ_CCTOOLS=0 WQ_TASKS=$N bash "$SRCDIR/test/bench/wq.sh" "$1" 2>&1 |
		awk '/ours .* tasks\/s/ { for (i = 1; i <= NF; i++) if ($i == "tasks/s") { printf "%s ", $(i - 1); break } } END { print "" }'
}

declare -A res
for r in $(seq 1 "$RUNS"); do
	for side in old new; do
		b=$OLD
		[ $side = new ] && b=$NEW
		l=$(local_run "$b")
		read -r w2 w11 <<<"$(wq_run "$b")"
		echo "run $r $side: local $l rules/s, wq one 2-core worker ${w2:-failed} tasks/s, two 1-core workers ${w11:-failed} tasks/s"
		res[$side.local]+="$l "
		res[$side.wq2]+="${w2:-nan} "
		res[$side.wq11]+="${w11:-nan} "
	done
done

echo ""
echo "median [min-max] over $RUNS alternating runs, $N rules each"
for k in local wq2 wq11; do
	for side in old new; do
		python3 -c "
import statistics, sys
v = [float(x) for x in sys.argv[3].split()]
print('  %-5s %-4s %8.1f  [%.1f-%.1f]' % (sys.argv[1], sys.argv[2], statistics.median(v), min(v), max(v)))" "$k" "$side" "${res[$side.$k]}"
	done
done
