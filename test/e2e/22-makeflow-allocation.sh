#!/bin/bash
# 22-makeflow-allocation.sh: end-to-end tests of measurement and per-category
# sizing in makeflow: --monitor summaries, --allocation and .MAKEFLOW MODE,
# retry at the maximum after exhaustion, permanent failure past an explicit
# limit, seeding from earlier summaries, and the per-category statistics.
# Rules run real programs under the real resource_monitor.
. "$(dirname "$0")/../lib/test-lib.sh"

test_require_bin makeflow
test_require_bin resource_monitor

MF=$BIN/makeflow
HELPERS=$BUILD/resource_monitor/test
ALLOC=$HELPERS/helper_alloc


# cat_get FILE CATEGORY KEY.PATH: a field of one category in a --summary-json summary.
cat_get() {
	python3 - "$@" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
c = [c for c in s.get("categories", []) if c["name"] == sys.argv[2]]
if not c:
    sys.exit("no category %s in %s" % (sys.argv[2], sys.argv[1]))
v = c[0]
for k in sys.argv[3].split("."):
    v = v[k]
print(v)
EOF
}

# n_rules N CATEGORY MB: N rules of CATEGORY each allocating MB MiB.
n_rules() {
	for i in $(seq 1 "$1"); do
		printf 'out.%s.%d:\n\t%s %d 0.05 > out.%s.%d\n' "$2" "$i" "$ALLOC" "$3" "$2" "$i"
	done
}

test_expect_success '--monitor writes one valid summary per rule' '
	wf Makeflow <<-EOF &&
	CATEGORY=small
	a:
	    $ALLOC 20 0.1 > a
	b: a
	    cat a > b
	EOF
	"$MF" --monitor mon Makeflow 2>err &&
	ls mon/*.summary >list && [ "$(wc -l <list)" = 2 ] &&
	python3 -c "
import json, sys
for f in sys.argv[1:]:
    s = json.load(open(f))
    assert s[\"exit_type\"] == \"normal\", s
    assert s[\"category\"] in (\"small\",), s
    assert s[\"memory\"][1] == \"MB\" and s[\"wall_time\"][1] == \"s\", s
" mon/*.summary &&
	python3 -c "
import json; s = json.load(open(\"mon/resource-rule-0.summary\"))
m = s[\"memory\"][0]; assert 20 <= m < 40, m" 
'

test_expect_success '--allocation waste computes a first allocation from 25 measurements' '
	n_rules 30 small 50 >Makeflow &&
	sed -i "1i CATEGORY=small" Makeflow &&
	"$MF" --allocation waste --summary-json summary.json Makeflow 2>err &&
	[ "$(cat_get summary.json small mode)" = min_waste ] &&
	[ "$(cat_get summary.json small done)" = 30 ] &&
	mem=$(cat_get summary.json small first_allocation.memory) &&
	cores=$(cat_get summary.json small first_allocation.cores) &&
	python3 -c "assert float($mem) == 250, $mem; assert float($cores) == 1, $cores" &&
	grep -q "categories" err && grep -q "min_waste" err
'

test_expect_success '.MAKEFLOW MODE wins over --allocation; --allocation reaches parsed categories' '
	wf Makeflow <<-EOF &&
	CATEGORY=a
	.MAKEFLOW MODE MAX
	x:
	    true > x
	CATEGORY=b
	y:
	    true > y
	EOF
	"$MF" --allocation throughput --summary-json summary.json Makeflow 2>err &&
	[ "$(cat_get summary.json a mode)" = max ] &&
	[ "$(cat_get summary.json b mode)" = max_throughput ]
'

# seed FILE CATEGORY MB N: N earlier successful summaries of MB MiB.
seed() {
	for i in $(seq 1 "$4"); do
		printf "{\"category\": \"%s\", \"exit_type\": \"normal\", \"exit_status\": 0, " "$2"
		printf "\"memory\": [%d, \"MB\"], \"cores\": [1, \"cores\"], \"wall_time\": [1, \"s\"]}\n" "$3"
	done >"$1"
}

test_expect_success 'a rule that exhausts its first allocation runs again with the maximum' '
	seed seeds big 40 25 &&
	wf Makeflow <<-EOF &&
	CATEGORY=big
	MEMORY=2000
	out:
	    $ALLOC 400 0.1 > out
	EOF
	"$MF" --allocation waste --allocation-seed seeds --summary-json summary.json Makeflow 2>err &&
	[ "$(cat_get summary.json big done)" = 1 ] &&
	[ "$(cat_get summary.json big exhaustions)" = 1 ] &&
	[ "$(cat_get summary.json big retries)" = 1 ] &&
	grep -q "running it again with the maximum" err &&
	[ -f out ]
'

test_expect_success 'exceeding an explicit limit fails for good, without -r retries' '
	wf Makeflow <<-EOF &&
	MEMORY=100
	out:
	    $ALLOC 300 0.1 > out
	EOF
	rc=0; "$MF" --monitor mon -r 3 --summary-json summary.json Makeflow 2>err || rc=$? &&
	[ $rc = 1 ] &&
	grep -q "exceeded its resource allocation (memory 100 MB)" err &&
	not grep -q "retrying" err &&
	[ "$(jget summary.json rules.failed)" = 1 ] &&
	[ ! -f out ]
'

test_expect_success 'a rule above its explicit limit in a sized category is not retried' '
	seed seeds c 40 25 &&
	wf Makeflow <<-EOF &&
	CATEGORY=c
	out:
	@MEMORY=200
	    $ALLOC 400 0.1 > out
	EOF
	rc=0; "$MF" --allocation waste --allocation-seed seeds --summary-json summary.json Makeflow 2>err || rc=$? &&
	[ $rc = 1 ] &&
	not grep -q "running it again" err
'

test_expect_success 'summaries of an earlier run in the monitor directory seed the next run' '
	n_rules 25 s 60 >Makeflow &&
	sed -i "1i CATEGORY=s" Makeflow &&
	"$MF" --monitor mon --allocation waste Makeflow 2>err1 &&
	"$MF" -c Makeflow 2>/dev/null &&
	"$MF" --monitor mon --allocation waste --summary-json summary.json Makeflow 2>err2 &&
	grep -q "seeded with 25 earlier measurements" err2 &&
	[ "$(cat_get summary.json s first_allocation.memory)" = 250.0 ]
'

test_expect_success 'sizing without --monitor measures into makeflow.monitor' '
	wf Makeflow <<-EOF &&
	x:
	    true > x
	EOF
	"$MF" --allocation max Makeflow 2>err &&
	grep -q "makeflow.monitor" err && ls makeflow.monitor/*.summary >/dev/null
'

test_expect_success 'bad sizing options are refused with a message' '
	wf Makeflow <<-EOF &&
	x:
	    true > x
	EOF
	test_must_fail "$MF" --allocation sometimes Makeflow 2>err &&
	grep -q -- "--allocation sometimes" err &&
	test_must_fail "$MF" --monitor-interval 0.001 Makeflow 2>err &&
	grep -q -- "--monitor-interval" err &&
	test_must_fail "$MF" --allocation-seed nowhere Makeflow 2>err &&
	grep -q "nowhere" err &&
	echo "{ not json" >bad.summary &&
	test_must_fail "$MF" --allocation-seed bad.summary Makeflow 2>err &&
	grep -q "bad.summary" err
'

test_done
