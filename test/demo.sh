#!/bin/bash
# demo.sh: behind `make demo`. Copies the example workflow from
# doc/examples/hello to a scratch directory, runs it with the local driver,
# shows the result and where the outputs are, then shows that a second run
# finds nothing to do.
set -eu
SRCDIR=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build}
case "$BUILD" in /*) ;; *) BUILD=$SRCDIR/$BUILD ;; esac
MAKEFLOW=$BUILD/bin/makeflow
if [ ! -x "$MAKEFLOW" ]; then
	echo "demo: $MAKEFLOW is not built" >&2
	exit 1
fi
DIR=${DEMO_DIR:-$SRCDIR/build/demo}
rm -rf "$DIR"
mkdir -p "$DIR"
cp "$SRCDIR"/doc/examples/hello/* "$DIR"/
cd "$DIR"
echo "== running the example workflow in $DIR"
echo "\$ makeflow -j 2 --summary-json summary.json Makeflow"
"$MAKEFLOW" -j 2 --summary-json summary.json Makeflow
echo
echo "== result (total.txt):"
cat total.txt
echo
echo "== a second run finds every rule complete:"
"$MAKEFLOW" -j 2 Makeflow
echo
echo "Outputs are in $DIR: total.txt, count.*, part.*;"
echo "the transaction log is Makeflow.makeflowlog and the run summary summary.json."
