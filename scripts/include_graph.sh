#!/bin/sh
# Prints the file circles among src/ and include/dtune/ and exits 1 if there
# is any; 0 and nothing printed otherwise. `make test` runs it.
#
# A node is one module: src/NAME.c together with its own header (NAME.h in
# src/ or include/dtune/). An edge A -> B means A.c names a function or table
# with external linkage (dt_...) that B.c defines, through whichever header
# declares it (a header only declares, so a shared private header ties each
# user of a symbol to the source that defines it, not its includers to one
# another). A circle is a set of nodes
# that reach one another along edges; each is printed with its edges and one
# symbol that makes each edge.
#
# Usage: sh scripts/include_graph.sh [ROOT]   (ROOT: the repository, default .)
set -u
root=${1:-.}
cd "$root" || exit 2
set -- src/*.c src/*.h include/dtune/*.h
awk '
function base(path,    b) { b = path; sub(/.*\//, "", b); sub(/\.[ch]$/, "", b); return b }
# Drops comments and string literals from line (keeps comment state across lines).
function strip(line,    out, i) {
    out = ""
    while (line != "") {
        if (incomment) {
            i = index(line, "*/")
            if (!i) return out
            line = substr(line, i + 2); incomment = 0
        } else {
            i = index(line, "/*")
            if (!i) { out = out line; break }
            out = out substr(line, 1, i - 1); line = substr(line, i + 2); incomment = 1
        }
    }
    sub(/\/\/.*/, "", out)
    gsub(/"([^"\\]|\\.)*"/, "\"\"", out)
    return out
}
FNR == 1 { incomment = 0; isc = (FILENAME ~ /\.c$/); node = base(FILENAME) }
{
    line = strip($0)
    if (line ~ /^#/) next
    # A definition with external linkage starts at column 0 in a .c file.
    if (isc && line ~ /^[A-Za-z_]/ && line !~ /^(static|typedef|extern)[ \t]/ && line !~ /;[ \t]*$/ &&
        match(line, /dt_[a-z0-9_]+[ \t]*(\(|\[|=)/)) {
        sym = substr(line, RSTART, RLENGTH); sub(/[ \t]*[(\[=]$/, "", sym)
        definer[sym] = node
        line = substr(line, RSTART + RLENGTH)
    }
    # A header only declares: its names are used by the .c files that name them.
    while (isc && match(line, /dt_[a-z0-9_]+/)) {
        sym = substr(line, RSTART, RLENGTH)
        if (!((node, sym) in used)) { used[node, sym] = 1; nuse++; usenode[nuse] = node; usesym[nuse] = sym }
        line = substr(line, RSTART + RLENGTH)
    }
}
END {
    for (i = 1; i <= nuse; i++) {
        a = usenode[i]; sym = usesym[i]
        if (!(sym in definer)) continue
        b = definer[sym]
        if (a == b) continue
        nodes[a] = 1; nodes[b] = 1; reach[a, b] = 1
        if (!((a, b) in why)) why[a, b] = sym
    }
    for (k in nodes) for (i in nodes) if ((i, k) in reach) for (j in nodes) if ((k, j) in reach) reach[i, j] = 1
    found = 0
    for (i in nodes) {
        if (done[i] || !((i, i) in reach)) continue
        members = ""
        for (j in nodes) if ((i, j) in reach && (j, i) in reach) { done[j] = 1; members = members " " j }
        found++
        print "circle:" members
        n = split(members, m, " ")
        for (x = 1; x <= n; x++) for (y = 1; y <= n; y++)
            if ((m[x], m[y]) in why) print "  " m[x] " -> " m[y] " (" why[m[x], m[y]] ")"
    }
    exit found ? 1 : 0
}' "$@"
