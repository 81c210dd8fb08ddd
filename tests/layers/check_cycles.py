#!/usr/bin/env python3
"""check_cycles.py - no file of the library calls back into a file that
depends on it, beyond the cycles listed as inherent.

Usage: check_cycles.py NM ALLOWED OBJECT...

NM       the nm program of the build (CMAKE_NM)
ALLOWED  the inherent cycles: one per line, the sources of the cycle (paths
         from the repository root, separated by spaces), then " # " and
         why it is inherent; blank lines and lines starting with "#" are
         comments
OBJECT   the object files of the library, as CMake names them
         (.../<target>.dir/<source path>.o); @FILE reads more of them
         from FILE, one per line

File A depends on file B when A's object refers to a symbol B's object
defines (a function or a variable, nm's U against T/D/B/R). A cycle is a
strongly connected set of two or more files. Each cycle found must be
listed exactly: a file that joins a listed cycle, or a new cycle, fails;
so does a listed cycle that is gone or smaller (the list must stay true).
Prints each cycle with the references that close it, then "check_cycles:
N files, E dependencies, C cycles, U not listed, S stale"; exit status 0
when U and S are 0, 1 otherwise, 2 on a usage error.
"""
import subprocess
import sys


def source_of(obj):
    """The source path of an object file: after the target's .dir/."""
    path = obj.replace("\\", "/")
    if ".dir/" not in path or not path.endswith(".o"):
        sys.exit("check_cycles: %s is not a CMake object file" % obj)
    return path.split(".dir/", 1)[1][:-2]


def symbols(nm, obj):
    out = subprocess.run([nm, obj], check=True, capture_output=True,
                         text=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TDBRVWG":
            defined.add(parts[2])
        elif len(parts) == 2 and parts[0] == "U":
            used.add(parts[1])
    return defined, used


def strongly_connected(nodes, edges):
    """Tarjan's algorithm, iterative; the components of 2 or more nodes."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = 0
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    comp.append(top)
                    if top == node:
                        break
                if len(comp) > 1:
                    found.append(frozenset(comp))
    return found


def read_allowed(path):
    allowed = {}
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            files, _, why = text.partition(" # ")
            if not why.strip():
                sys.exit("check_cycles: %s:%d: no reason after \" # \""
                         % (path, number))
            allowed[frozenset(files.split())] = number
    return allowed


def main(argv):
    if len(argv) < 4:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    nm, allowed_path, objects = argv[1], argv[2], []
    for arg in argv[3:]:
        if arg.startswith("@"):
            with open(arg[1:], encoding="utf-8") as f:
                objects += [line.strip() for line in f if line.strip()]
        else:
            objects.append(arg)
    allowed = read_allowed(allowed_path)
    defines, uses = {}, {}
    for obj in objects:
        src = source_of(obj)
        defined, used = symbols(nm, obj)
        uses[src] = used
        for sym in defined:
            defines[sym] = src
    edges = {src: {} for src in uses}
    for src, used in uses.items():
        for sym in sorted(used):
            dst = defines.get(sym)
            if dst is not None and dst != src:
                edges[src].setdefault(dst, sym)
    cycles = strongly_connected(uses, edges)
    unlisted = 0
    for comp in sorted(cycles, key=sorted):
        listed = comp in allowed
        unlisted += not listed
        print("%s cycle: %s" % ("listed" if listed else "NEW",
                                " ".join(sorted(comp))))
        if listed:
            continue
        for src in sorted(comp):
            for dst, sym in sorted(edges[src].items()):
                if dst in comp:
                    print("  %s -> %s (%s)" % (src, dst, sym))
    stale = [files for files in allowed if files not in cycles]
    for files in sorted(stale, key=lambda f: allowed[f]):
        print("%s:%d: listed cycle not found (gone or changed): %s"
              % (allowed_path, allowed[files], " ".join(sorted(files))))
    ndeps = sum(len(e) for e in edges.values())
    print("check_cycles: %d files, %d dependencies, %d cycles, %d not "
          "listed, %d stale" % (len(uses), ndeps, len(cycles), unlisted,
                                len(stale)))
    return 0 if unlisted == 0 and not stale else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
