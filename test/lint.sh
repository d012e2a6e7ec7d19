#!/bin/bash
# lint.sh: the checks behind `make lint`: clang-format conformance, the
# layering rule (a component includes only its own headers and those of
# components to its left), banned functions, the purpose comment that
# opens every source file, and no mutable globals in libraries but the
# named process-wide ones (test/lint-globals.txt).
set -u
cd "$(dirname "$0")/.." || exit 2
COMPONENTS=(dttools resource_monitor work_queue batch_drivers makeflow)
status=0

files=$(git ls-files '*.c' '*.h' 2>/dev/null)
[ -n "$files" ] || files=$(find "${COMPONENTS[@]}" -name '*.[ch]' | sort)
# Include files not yet added to git, too.
files=$(printf '%s\n%s\n' "$files" "$(find "${COMPONENTS[@]}" -name '*.[ch]')" | sort -u | grep -v '^$')

# Headers and sources live in src/ and in the sides of a split src/ (src/SIDE/).
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
	# test/support: the component's test-support library (tests of components to its left
	# must not use it, as for the headers of src/)
	for h in "$c"/src/*.h "$c"/src/*/*.h "$c"/test/support/*.h; do
		[ -e "$h" ] && owner[$(basename "$h")]=$c
	done
done
# Sides inside work_queue/src: proto is the wire and includes no other side; catalog and
# status use proto; master and worker use proto and catalog and never include each other.
declare -A side
for h in work_queue/src/*/*.h; do
	[ -e "$h" ] || continue
	s=${h#work_queue/src/}
	side[$(basename "$h")]=${s%%/*}
done
declare -A may_use=(
	[proto]="proto"
	[catalog]="proto catalog"
	[status]="proto catalog status"
	[master]="proto catalog master"
	[worker]="proto catalog worker"
)
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
		case "$f" in
		work_queue/src/*/*)
			fs=${f#work_queue/src/}
			fs=${fs%%/*}
			is=${side[$inc]:-}
			if [ -n "$is" ] && [ -n "${may_use[$fs]+x}" ] &&
				! [[ " ${may_use[$fs]} " == *" $is "* ]]; then
				echo "lint: sides: $f ($fs) includes $inc of work_queue/src/$is"
				status=1
			fi
			;;
		esac
	done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
done

for f in $files; do
	case "$f" in
	work_queue/src/*/*) ;;
	work_queue/src/*)
		echo "lint: sides: $f is not in a side of work_queue/src (proto, master, worker, catalog, status)"
		status=1
		;;
	esac
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

# 5. doc/file-map.md is the map of the tree as it is (test/file-map.sh writes it)
if ! bash test/file-map.sh | cmp -s - doc/file-map.md; then
	echo "lint: doc/file-map.md is not the map of this tree (run 'make file-map'):"
	bash test/file-map.sh | diff doc/file-map.md - | sed -n '1,20p' | sed 's/^/    /'
	status=1
fi

# 6. shell scripts parse
for s in configure test/*.sh test/lib/*.sh test/e2e/*.sh test/bench/*.sh .ci/run; do
	[ -f "$s" ] || continue
	bash -n "$s" || { echo "lint: $s has a syntax error"; status=1; }
done

# 7. no mutable state in library code: a variable at file scope, or static in a function, that
# is not const is an error in COMPONENT/src/**/*.c (not *_main.c, which are programs) unless
# test/lint-globals.txt names it with its reason (doc/design.md lists them: the process-wide
# states). Universal Ctags finds the variables and their types.
ctags=$(command -v ctags-universal || command -v ctags || true)
if [ -z "$ctags" ] || ! "$ctags" --version 2>/dev/null | grep -q Universal; then
	echo "lint: Universal Ctags is not installed (apt-get install universal-ctags)"
	status=1
else
	libsrc=$(printf '%s\n' $files | grep -E '^[a-z_]+/src/.*\.c$' | grep -v '_main\.c$')
	allowed=$(sed -e 's/#.*//' test/lint-globals.txt 2>/dev/null | awk 'NF >= 2 {print $1, $2}')
	found=$(
		# shellcheck disable=SC2086
		"$ctags" -o - --excmd=number --kinds-C=vl --fields=+tK --language-force=C $libsrc 2>/dev/null |
			awk -F'\t' '
			# The line of FILE numbered N (files are read once).
			function src(file, n,   l, i) {
				if (!(file in seen)) {
					seen[file] = 1
					i = 0
					while ((getline l < file) > 0)
						text[file, ++i] = l
					close(file)
				}
				return text[file, n]
			}
			# 1 when the declaration of the local on line N starts with static (looking
			# back over a multi-line type such as "static union {...} x;").
			function local_static(file, n,   d, l, t) {
				l = src(file, n)
				if (l ~ /^[ \t]*static[ \t]/)
					return 1
				if (l !~ /^[ \t]*}/)
					return 0
				d = 0
				for (; n > 0; n--) {
					l = src(file, n)
					t = l; d += gsub(/}/, "", t)
					t = l; d -= gsub(/{/, "", t)
					if (d <= 0)
						return l ~ /^[ \t]*static[ \t]/
				}
				return 0
			}
			# 1 when type T (ctags typeref) is const at its top level.
			function is_const(t) {
				sub(/^typeref:[a-z]*:/, "", t)
				gsub(/\[[^]]*\]/, "", t)
				if (t ~ /\(\*/)
					return t ~ /\(\*[ \t]*const/
				if (t ~ /\*/) {
					sub(/.*\*/, "", t)
					return t ~ /const/
				}
				return t ~ /(^|[^a-z_])const([^a-z_]|$)/
			}
			/^!/ { next }
			{
				kind = $4; line = $3 + 0; type = ""; fn = ""
				for (i = 5; i <= NF; i++) {
					if ($i ~ /^typeref:/) type = $i
					else if ($i ~ /^function:/) fn = substr($i, 10)
				}
				if (kind == "local" && !local_static($2, line))
					next
				if (kind != "local" && kind != "variable")
					next
				if (is_const(type))
					next
				print $2, (fn != "" ? fn "/" : "") $1
			}' | sort -u
	)
	while IFS= read -r v; do
		[ -n "$v" ] || continue
		if ! grep -qxF "$v" <<<"$allowed"; then
			echo "lint: mutable state in a library: $v (put it in its module's context struct, or name it with the reason in test/lint-globals.txt)"
			status=1
		fi
	done <<<"$found"
	while IFS= read -r a; do
		[ -n "$a" ] || continue
		if ! grep -qxF "$a" <<<"$found"; then
			echo "lint: test/lint-globals.txt names $a, which is no longer there"
			status=1
		fi
	done <<<"$allowed"
fi

# 6. nothing but the project's own files at the top of the tree (a test run's
# outputs committed by mistake would otherwise travel with every clone).
if git rev-parse --git-dir >/dev/null 2>&1; then
	top=$(git ls-files | sed 's,/.*,,' | sort -u | grep -vxE '\.clang-format|\.gitignore|\.ci|Makefile|README\.md|VERSION|configure|doc|test|dttools|resource_monitor|work_queue|batch_drivers|makeflow')
	if [ -n "$top" ]; then
		echo "lint: unexpected files at the top of the tree:" $top
		status=1
	fi
fi

[ $status = 0 ] && echo "lint: ok"
exit $status
