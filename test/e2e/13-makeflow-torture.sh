#!/bin/bash
# 13-makeflow-torture.sh: crash safety. A 2,000-rule fan-out/fan-in workflow is
# killed with SIGKILL at many random moments and restarted each time until it
# finishes. The outputs must equal those of an uninterrupted run, and a tally
# of executions checked against the transaction log must show that no rule
# whose completion was logged ever ran again.
. "$(dirname "$0")/../lib/test-lib.sh"
test_require_bin makeflow
TEST_TIMEOUT=${TORTURE_TIMEOUT:-600}
KILLS=${TORTURE_KILLS:-25}

make_workflow() {
	python3 - <<'EOF'
leaves, groups = 1979, 20
with open('Makeflow', 'w') as f:
    f.write('# fan-out / fan-in torture workflow\n')
    for i in range(leaves):
        f.write('leaf.%d: seed.txt\n\techo %d >> tally; echo %d > leaf.%d.tmp && mv leaf.%d.tmp leaf.%d\n\n'
                % (i, i, i * i, i, i, i))
    per = (leaves + groups - 1) // groups
    for g in range(groups):
        members = ['leaf.%d' % i for i in range(g * per, min(leaves, (g + 1) * per))]
        f.write('group.%d: %s\n\techo g%d >> tally; cat %s > group.%d\n\n'
                % (g, ' '.join(members), g, ' '.join(members), g))
    f.write('final.txt: %s\n\techo final >> tally; cat %s | sort -n | md5sum > final.txt\n'
            % (' '.join('group.%d' % g for g in range(groups)),
               ' '.join('group.%d' % g for g in range(groups))))
EOF
	echo seed >seed.txt
}

test_expect_success 'the workflow has 2,000 rules' '
	make_workflow
	"$BIN/makeflow_analyze" -i Makeflow | grep -q "^rules: *2000 "
'

test_expect_success 'kill -9 at random moments: every restart finishes, outputs identical, no logged completion re-ran' '
	mkdir clean torture
	(cd clean && make_workflow && "$BIN/makeflow" -j 2 --progress=quiet Makeflow)
	cd torture
	make_workflow
	kills=0
	finished=0
	attempt=0
	while [ $finished = 0 ] && [ $attempt -lt $((KILLS + 20)) ]; do
		attempt=$((attempt + 1))
		if [ $kills -ge $KILLS ]; then
			"$BIN/makeflow" -j 2 --progress=quiet Makeflow >run.$attempt.log 2>&1 || { cat run.$attempt.log; exit 1; }
			finished=1
			break
		fi
		"$BIN/makeflow" -j 2 --progress=quiet Makeflow >run.$attempt.log 2>&1 &
		pid=$!
		# a random moment within the first ~1.5 s of this run
		sleep "0.$((RANDOM % 15))$((RANDOM % 10))"
		if kill -KILL $pid 2>/dev/null; then
			kills=$((kills + 1))
			wait $pid 2>/dev/null || true
		else
			# it finished before the kill: it must have succeeded
			wait $pid || { cat run.$attempt.log; exit 1; }
			finished=1
		fi
	done
	test $finished = 1
	echo "killed $kills times"
	for f in final.txt group.0 group.19 leaf.0 leaf.1978; do cmp "$f" "../clean/$f"; done
	# every rule ran at least once and its output is right
	for g in $(seq 0 19); do cmp group.$g ../clean/group.$g; done
	python3 - <<EOF
import collections, sys
runs = collections.Counter(l.strip() for l in open("tally"))
started = collections.Counter()
complete_seen = set()
rerun_after_complete = []
for line in open("Makeflow.makeflowlog"):
    f = line.split()
    if not f or f[0] != "N":
        continue
    node, state = int(f[2]), int(f[3])
    if state == 2:
        if node in complete_seen:
            rerun_after_complete.append(node)
        started[node] += 1
    elif state == 3:
        complete_seen.add(node)
# rule ids: leaves 0..1978 print their id, groups print gK (ids 1979+K), final is 1999
def rule_of(tag):
    if tag == "final": return 1999
    if tag.startswith("g"): return 1979 + int(tag[1:])
    return int(tag)
bad = [t for t, n in runs.items() if n > started[rule_of(t)]]
print("rules:", len(complete_seen), "executions:", sum(runs.values()), "re-executions:", sum(runs.values()) - len(runs))
if len(complete_seen) != 2000:
    sys.exit("only %d rules logged complete" % len(complete_seen))
if rerun_after_complete:
    sys.exit("rules started again after a logged completion: %s" % rerun_after_complete[:10])
if bad:
    sys.exit("rules executed more often than the log started them: %s" % bad[:10])
EOF
'

test_done
