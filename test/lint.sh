#!/bin/bash
# lint.sh: the checks behind `make lint`: clang-format conformance, the
# layering rule (a component includes only its own headers and those of
# components to its left), banned functions, and the purpose comment that
# opens every source file.
set -u
cd "$(dirname "$0")/.." || exit 2
COMPONENTS=(dttools resource_monitor work_queue batch_drivers makeflow)
status=0

files=$(git ls-files '*.c' '*.h' 2>/dev/null)
[ -n "$files" ] || files=$(find "${COMPONENTS[@]}" -name '*.[ch]' | sort)
# Include files not yet added to git, too.
files=$(printf '%s\n%s\n' "$files" "$(find "${COMPONENTS[@]}" -name '*.[ch]')" | sort -u | grep -v '^$')

# 1. format
if command -v clang-format >/dev/null; then
	bad=""
	for f in $files; do
		if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then
			bad="$bad $f"
		fi
	done
	if [ -n "$bad" ]; then
		echo "lint: not clang-formatted (run 'make format'):$bad"
		status=1
	fi
else
	echo "lint: clang-format is not installed (apt-get install clang-format)"
	status=1
fi

# 2. layering: map each header name to its component, then check includes.
declare -A owner rank
for i in "${!COMPONENTS[@]}"; do
	c=${COMPONENTS[$i]}
	rank[$c]=$i
	for h in "$c"/src/*.h; do
		[ -e "$h" ] && owner[$(basename "$h")]=$c
	done
done
for f in $files; do
	c=${f%%/*}
	[ -n "${rank[$c]+x}" ] || continue
	while IFS= read -r inc; do
		oc=${owner[$inc]:-}
		[ -n "$oc" ] || continue
		if [ "${rank[$oc]}" -gt "${rank[$c]}" ]; then
			echo "lint: layering: $f ($c) includes $inc of $oc, a component to its right"
			status=1
		fi
	done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
done

# 3. banned functions (outside comments is approximated by ignoring lines
# that start a comment and the banned.h header itself).
banned='\b(strcpy|strcat|sprintf|vsprintf|gets|strtok)[[:space:]]*\('
for f in $files; do
	[ "$(basename "$f")" = banned.h ] && continue
	hits=$(grep -nE "$banned" "$f" | grep -vE '^[0-9]+:[[:space:]]*(/\*|\*|//)')
	if [ -n "$hits" ]; then
		echo "lint: banned function in $f:"
		echo "$hits" | sed 's/^/    /'
		status=1
	fi
done

# 4. every file opens with a purpose comment
for f in $files; do
	first=$(grep -m1 -v '^[[:space:]]*$' "$f")
	case "$first" in
	/\** | //*) ;;
	*)
		echo "lint: $f does not open with a comment saying what it is for"
		status=1
		;;
	esac
done

# 5. shell scripts parse
for s in configure test/*.sh test/lib/*.sh test/e2e/*.sh test/bench/*.sh .ci/run; do
	[ -f "$s" ] || continue
	bash -n "$s" || { echo "lint: $s has a syntax error"; status=1; }
done

[ $status = 0 ] && echo "lint: ok"
exit $status
