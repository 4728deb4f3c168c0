#!/bin/bash
# Checks the reference pages in docs/man/man3 against the public headers.
#
#  - every MPIX_ function declared in mpix_gpuic.h and mpix_gpuic_device.cuh (a line that starts
#    with its return type: the headers' declaration style) has a page MPIX_<name>.3, either a
#    full page whose NAME and SYNOPSIS show it, or a ".so" link to such a page;
#  - every page is named after a declared function, and every MPIX_ function a page names (in
#    NAME, or as a cross-reference "MPIX_x (3)") is declared;
#  - the top-level Makefile.am installs exactly the pages in the directory;
#  - groff formats every page (links resolved) without a single warning (-ww).
# Adding a function to a header without a page makes this test fail, on purpose.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
mandir="$top/docs/man/man3"
headers="$top/ompi/mpiext/gpuic/mpix_gpuic.h $top/ompi/include/gpuic_shared/mpix_gpuic_device.cuh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
problems=0

problem() {
    echo "man_pages: $*"
    problems=$((problems + 1))
}

command -v groff >/dev/null 2>&1 ||
    { echo "man_pages: FAIL: groff not found (contrib/install-deps.sh installs groff-base)"; exit 1; }

# Declared functions, one per line.  A header that yields none means the parsing is broken.
for h in $headers; do
    grep -E '^[A-Za-z_][A-Za-z0-9_ ]*[ *]MPIX_[A-Za-z0-9_]+\(' "$h" | grep -v '^typedef' |
        sed -E 's/^.*[ *](MPIX_[A-Za-z0-9_]+)\(.*$/\1/' >"$tmp/one"
    [ -s "$tmp/one" ] || problem "no MPIX_ function found in $h (header style changed?)"
    cat "$tmp/one" >>"$tmp/functions"
done
sort -u -o "$tmp/functions" "$tmp/functions"
declared() { grep -qxF "$1" "$tmp/functions"; }

# The page text of @1 with a ".so" link followed (one level, as man-db does).
page_text() {
    local first
    first=$(head -n 1 "$1")
    case $first in
        .so\ *) cat "$top/docs/man/${first#.so }" 2>/dev/null ;;
        *) cat "$1" ;;
    esac
}

# 1. Functions without a page, or whose page does not show them.
while read -r f; do
    page="$mandir/$f.3"
    if [ ! -f "$page" ]; then
        problem "$f has no page ($page): see README, 'Reference pages'"
        continue
    fi
    first=$(head -n 1 "$page")
    if [[ $first == .so\ * ]] && [ ! -f "$top/docs/man/${first#.so }" ]; then
        problem "$page links to ${first#.so }, which does not exist"
        continue
    fi
    text=$(page_text "$page")
    name_line=$(printf '%s\n' "$text" | sed -n '/^\.SH NAME/{n;p;q}')
    printf '%s\n' "$name_line" | grep -qE "(^|[ ,])$f(,| )" ||
        problem "$page: NAME does not list $f"
    printf '%s\n' "$text" | sed -n '/^\.SH SYNOPSIS/,/^\.SH DESCRIPTION/p' | grep -qF "$f(" ||
        problem "$page: SYNOPSIS does not show $f("
done <"$tmp/functions"

# 2. Pages that name functions that do not exist.
for page in "$mandir"/*.3; do
    [ -e "$page" ] || { problem "no pages in $mandir"; break; }
    base=$(basename "$page" .3)
    declared "$base" || problem "$page: no function $base is declared in the headers"
    text=$(page_text "$page")
    {
        printf '%s\n' "$text" | sed -n '/^\.SH NAME/{n;p;q}' | sed 's/ \\-.*//' |
            grep -oE 'MPIX_[A-Za-z0-9_]+'
        printf '%s\n' "$text" | grep -oE '^\.BR? MPIX_[A-Za-z0-9_]+ \(3\)' |
            grep -oE 'MPIX_[A-Za-z0-9_]+'
    } | sort -u | while read -r f; do
        declared "$f" || echo "man_pages: $page names $f, which is not declared"
    done >>"$tmp/unknown"
done
if [ -s "$tmp/unknown" ]; then
    cat "$tmp/unknown"
    problems=$((problems + $(wc -l <"$tmp/unknown")))
fi

# 3. The installed list is the directory.
grep -oE 'docs/man/man3/[A-Za-z0-9_]+\.3' "$top/Makefile.am" | sort -u >"$tmp/installed"
(cd "$top" && ls docs/man/man3/*.3) | sort -u >"$tmp/present"
if ! diff "$tmp/present" "$tmp/installed" >"$tmp/diff"; then
    problem "Makefile.am's dist_man3_MANS differs from docs/man/man3 (< only in the directory, > only in Makefile.am):"
    sed 's/^/    /' "$tmp/diff"
fi

# 4. groff, every warning enabled, links resolved from docs/man like man -M would.
for page in "$mandir"/*.3; do
    [ -e "$page" ] || break
    out=$(groff -s -I "$top/docs/man" -man -Tutf8 -ww -z "$page" 2>&1)
    [ -z "$out" ] || problem "$page: groff: $out"
    # formats to something: an empty page would pass the warning check
    lines=$(groff -s -I "$top/docs/man" -man -Tutf8 "$page" 2>/dev/null | grep -c .)
    [ "$lines" -ge 10 ] || problem "$page: formats to $lines lines"
done

n=$(wc -l <"$tmp/functions")
if [ "$problems" -ne 0 ]; then
    echo "man_pages: FAIL ($problems problems, $n functions declared)"
    exit 1
fi
echo "man_pages: PASS ($n functions declared, $(ls "$mandir"/*.3 | wc -l) pages)"
