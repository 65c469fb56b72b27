#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""layers.py - the module layering of agent/, rdzv/ and netdetect/, checked.

Every folder of ours has a rank (RANKS below, lowest first). The rules:
  faces    a header of another folder is included only through that folder's face:
           agent/X/X.h (agent/agent.h for the agent base), never another folder's *_int.h
  ranks    an include or a call runs to the file's own folder or to a folder of strictly
           lower rank: never upward, never between siblings (equal ranks)
  unranked every folder has a rank
  circles  no circle of files calling each other has more than 2 files (a circle of two,
           a state machine and its messages, is allowed)
Calls come from the debug build's objects (nm: each undefined symbol is matched to the
object that defines it); includes from the sources' #include "..." lines. tests/ is exempt.

A finding in a folder under ENFORCED fails (exit 1), and so does a circle in one under
ENFORCED_CIRCLES; the others are printed as reported findings, and so is an include listed in
PENDING (one that no longer occurs fails). `--report` prints the whole graph (folder edges,
upward edges, circles) and exits 0; `--selftest` plants one violation per rule in a scratch
tree and fails unless each is caught (and a 2-file circle, a downward call, a pending include
and a reported finding pass; a stale pending entry fails).
"""
import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile

# Lowest first. Equal ranks are siblings: they may not include or call each other.
RANKS = {
    'rdzv/gx': 0,  # the base layer: errors, logging, the event loop, sockets
    'netdetect': 1,  # interfaces and RDMA devices
    'rdzv': 1,  # the rendezvous protocol
    'rdzv/rdma': 2,  # RDMA-CM verification
    'agent': 3,  # the vocabulary: options, command names, the variables gxboot sets
    'agent/peers': 4,  # the peer list, job systems, DNS
    'agent/fabric': 4,  # the transport watcher (given plain data by the pipeline)
    'agent/launch': 5,  # exec, supervise, launch-line rewrites
    'agent/remote': 5,  # remote exec: serve, rsh
    'agent/check': 5,  # check's probes, service, streams, report (check and preflight)
    'agent/preflight': 6,  # --preflight during the meeting
    'agent/pipeline': 7,  # one run: prepare, meet, files, exec; init, serve, exec, hosts
    'agent/cli': 8,  # main, options, help, install; the netdetect and check commands
}
# The folders whose findings fail (rdzv/ and netdetect/ are reported only, for now).
ENFORCED = ('agent',)
# The folders whose circles fail (their other findings as ENFORCED says): rdzv/'s files follow
# its state machine, each side's protocol beside its handshake, so no circle of 3 comes back.
ENFORCED_CIRCLES = ('rdzv',)
# Includes of another folder's internals still allowed in an enforced folder, each with why.
# An entry that no longer occurs fails as well: the list only shrinks.
PENDING = {}
SCANNED = ('agent', 'rdzv', 'netdetect')

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def folder(path):
    return os.path.dirname(path)


def enforced(path, prefixes):
    return any(path == p or path.startswith(p + '/') for p in prefixes)


def sources(root):
    """Our .c and .h files under SCANNED, relative to root."""
    out = []
    for top in SCANNED:
        for d, dirs, files in os.walk(os.path.join(root, top)):
            dirs.sort()
            for f in sorted(files):
                if f.endswith(('.c', '.h')):
                    out.append(os.path.relpath(os.path.join(d, f), root))
    return out


def includes(root, files):
    """(file, header) for each #include "..." of one of our headers."""
    out = []
    for f in files:
        with open(os.path.join(root, f), encoding='utf-8', errors='replace') as fh:
            for h in INCLUDE.findall(fh.read()):
                if h.split('/')[0] in SCANNED:
                    out.append((f, h))
    return out


def calls(root, objs, files):
    """{(caller.c, callee.c): {symbols}} from nm on each source's object."""
    pairs = [(f, os.path.join(objs, f[:-2] + '.o')) for f in files if f.endswith('.c')]
    missing = [f for f, o in pairs if not os.path.exists(o)]
    if missing:
        raise SystemExit('layers: no object for %s in %s (make MODE=debug '
                         'build/debug/libgx.a build/debug/agent/cli/main.o)' %
                         (', '.join(missing), objs))
    if not pairs:
        return {}
    byobj = {o: f for f, o in pairs}
    res = subprocess.run(['nm', '-o'] + [o for _, o in pairs], capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit('layers: nm failed: ' + res.stderr.strip())
    defs, uses = {}, collections.defaultdict(set)
    for line in res.stdout.splitlines():
        obj, _, rest = line.partition(':')
        p = rest.split()
        if len(p) == 2 and p[0] == 'U':
            uses[byobj[obj]].add(p[1])
        elif len(p) == 3 and p[1] in 'TDBRCGSVW':
            defs.setdefault(p[2], byobj[obj])
    edges = collections.defaultdict(set)
    for f, syms in uses.items():
        for s in syms:
            d = defs.get(s)
            if d and d != f:
                edges[(f, d)].add(s)
    return edges


def circles(edges):
    """Strongly connected components of more than one file (Tarjan, iterative)."""
    g = collections.defaultdict(set)
    for a, b in edges:
        g[a].add(b)
    index, low, stack, on, out = {}, {}, [], set(), []
    n = 0
    for v0 in sorted(g):
        if v0 in index:
            continue
        work = [(v0, iter(sorted(g[v0])))]
        index[v0] = low[v0] = n
        n += 1
        stack.append(v0)
        on.add(v0)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = n
                    n += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(g[w]))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return sorted(out)


def face_of(fold):
    return 'agent/agent.h' if fold == 'agent' else fold + '/' + os.path.basename(fold) + '.h'


class Graph:
    def __init__(self, root, objs):
        files = sources(root)
        self.incs = includes(root, files)
        self.calls = calls(root, objs, files)
        self.folders = sorted({folder(f) for f in files})
        self.circles = circles(self.calls)

    def findings(self, pending=None):
        """[(rule, path, line, detail)]: path decides whether it is enforced; an include in
        pending is reported, and a pending entry that does not occur is a finding."""
        pending = pending or {}
        out = []
        for (f, h), why in sorted(pending.items()):
            if (f, h) not in self.incs:
                out.append(('pending', f, '%s no longer includes %s: remove the entry from '
                            'tests/layers.py PENDING' % (f, h), ''))
        for fold in self.folders:
            if fold not in RANKS:
                out.append(('unranked', fold, '%s has no rank: give it one in tests/layers.py '
                            'RANKS' % fold, ''))
        for f, h in self.incs:
            a, b = folder(f), folder(h)
            if a == b:
                continue
            if h.endswith('_int.h') and (f, h) in pending:
                out.append(('faces', 'pending:' + f, '%s includes %s: pending (%s)' %
                            (f, h, pending[(f, h)]), ''))
            elif h.endswith('_int.h'):
                out.append(('faces', f, '%s includes %s: another folder\'s internal header '
                            '(include its face, %s)' % (f, h, face_of(b)), ''))
            elif a.startswith('agent') and b.startswith('agent') and h != face_of(b):
                out.append(('faces', f, '%s includes %s: not %s\'s face (%s)' %
                            (f, h, b, face_of(b)), ''))
            out.extend(self.rank_finding(f, a, b, 'includes ' + h))
        for (f, d), syms in sorted(self.calls.items()):
            a, b = folder(f), folder(d)
            if a != b:
                out.extend(self.rank_finding(f, a, b, 'calls %s (%s)' % (
                    d, ', '.join(sorted(syms)[:4]) + (', ...' if len(syms) > 4 else ''))))
        for comp in self.circles:
            if len(comp) > 2:
                ties = ['%s -> %s: %s' % (os.path.basename(a), os.path.basename(b),
                                         ', '.join(sorted(self.calls[(a, b)])))
                        for a in comp for b in comp if (a, b) in self.calls]
                for f in comp:  # enforced when any of its files is
                    if f.startswith('agent/'):
                        break
                out.append(('circles', f, 'a circle of %d files: %s' % (len(comp), ', '.join(comp)),
                            '\n    '.join(ties)))
        return out

    @staticmethod
    def rank_finding(f, a, b, what):
        if a not in RANKS or b not in RANKS:
            return []
        if RANKS[b] < RANKS[a]:
            return []
        how = 'a sibling' if RANKS[a] == RANKS[b] else 'a higher layer'
        return [('ranks', f, '%s %s: %s (rank %d) -> %s (rank %d), %s' %
                 (f, what, a, RANKS[a], b, RANKS[b], how), '')]

    def report(self, out):
        edges = collections.defaultdict(lambda: [set(), set()])
        for (f, d), syms in self.calls.items():
            if folder(f) != folder(d):
                edges[(folder(f), folder(d))][0].update(
                    '%s->%s:%s' % (os.path.basename(f), os.path.basename(d), s) for s in syms)
        for f, h in self.incs:
            if folder(f) != folder(h):
                edges[(folder(f), folder(h))][1].add('%s:%s' % (os.path.basename(f), h))
        out.write('ranks (lowest first; equal ranks are siblings):\n')
        for fold in sorted(RANKS, key=lambda x: (RANKS[x], x)):
            out.write('  %d %s\n' % (RANKS[fold], fold))
        out.write('folder edges (calls; includes):\n')
        up = 0
        for (a, b), (c, i) in sorted(edges.items()):
            bad = a in RANKS and b in RANKS and RANKS[b] >= RANKS[a]
            up += bad
            out.write('  %s%s -> %s\n' % ('UP ' if bad else '', a, b))
            if c:
                out.write('      calls: %s\n' % ' '.join(sorted(c)))
            if i:
                out.write('      includes: %s\n' % ' '.join(sorted(i)))
        ints = [(f, h) for f, h in self.incs if folder(f) != folder(h) and h.endswith('_int.h')]
        out.write('edges upward or between siblings: %d\n' % up)
        out.write('foreign *_int.h includes: %d\n' % len(ints))
        for f, h in ints:
            out.write('  %s: %s\n' % (f, h))
        out.write('circles of files (calls):\n')
        for comp in self.circles:
            out.write('  %d: %s\n' % (len(comp), ', '.join(comp)))
            for a in comp:
                for b in comp:
                    if (a, b) in self.calls:
                        out.write('      %s -> %s: %s\n' % (os.path.basename(a), os.path.basename(b),
                                                          ', '.join(sorted(self.calls[(a, b)]))))


def check(root, objs, enforce, out=sys.stdout, err=sys.stderr, circles=ENFORCED_CIRCLES,
          pending=None):
    """Prints the findings; returns (enforced, reported) counts."""
    g = Graph(root, objs)
    nbad = nrep = 0
    for rule, path, line, detail in g.findings(pending):
        if enforced(path, enforce) or (rule == 'circles' and enforced(path, circles)):
            err.write('layers: %s: %s\n' % (rule, line))
            if detail:
                err.write('    %s\n' % detail)
            nbad += 1
        else:
            out.write('layers: (reported) %s: %s\n' % (rule, line))
            nrep += 1
    return nbad, nrep


# ---- the self-test: one plant per rule, in a scratch tree ----

BASE = {
    'agent/agent.h': 'int agent_base(void);\n',
    'agent/agent.c': '#include "agent/agent.h"\nint agent_base(void)\n{\n\treturn 0;\n}\n',
    'agent/peers/peers.h': 'int agent_p1(int);\nint agent_p2(int);\n',
    'agent/peers/peers_int.h': 'int agent_p_internal(void);\n',
    'agent/peers/peers_x.h': 'int agent_p_other(void);\n',
    # a 2-file circle: allowed
    'agent/peers/p1.c': '#include "agent/peers/peers.h"\n#include "agent/agent.h"\n'
                        'int agent_p1(int n)\n{\n\treturn n ? agent_p2(n - 1) : agent_base();\n}\n',
    'agent/peers/p2.c': '#include "agent/peers/peers.h"\n'
                        'int agent_p2(int n)\n{\n\treturn n ? agent_p1(n - 1) : 0;\n}\n',
    'agent/pipeline/pipeline.h': 'int agent_run(void);\n',
    # downward: a face included, a call to a lower rank
    'agent/pipeline/run.c': '#include "agent/pipeline/pipeline.h"\n#include "agent/peers/peers.h"\n'
                            'int agent_run(void)\n{\n\treturn agent_p1(2);\n}\n',
    'agent/launch/launch.h': 'int agent_l(void);\n',
    'agent/launch/l.c': '#include "agent/launch/launch.h"\nint agent_l(void)\n{\n\treturn 1;\n}\n',
    'agent/remote/remote.h': 'int agent_r(void);\n',
    'agent/remote/r.c': '#include "agent/remote/remote.h"\nint agent_r(void)\n{\n\treturn 2;\n}\n',
    'rdzv/gx/gx.h': 'int gx_f(void);\n',
    'rdzv/gx/gx.c': '#include "rdzv/gx/gx.h"\nint gx_f(void)\n{\n\treturn 0;\n}\n',
    'rdzv/rdzv.h': 'int rdzv_f(void);\n',
    'rdzv/rdzv.c': '#include "rdzv/rdzv.h"\n#include "rdzv/gx/gx.h"\n'
                   'int rdzv_f(void)\n{\n\treturn gx_f();\n}\n',
}

PLANTS = {
    # rule that must fail: files added to BASE
    'faces': ('faces', {'agent/pipeline/bad.c': '#include "agent/peers/peers_int.h"\n'
                        'int agent_bad(void)\n{\n\treturn agent_p_internal();\n}\n'}),
    'faces (not the face)': ('faces', {'agent/pipeline/bad.c': '#include "agent/peers/peers_x.h"\n'
                                       'int agent_bad(void);\nint agent_bad(void)\n{\n\treturn 0;\n}\n'}),
    'ranks (upward call)': ('ranks', {'agent/peers/bad.c': 'int agent_run(void);\nint agent_bad(void);\n'
                                      'int agent_bad(void)\n{\n\treturn agent_run();\n}\n'}),
    'ranks (upward include)': ('ranks', {'agent/peers/bad.c': '#include "agent/pipeline/pipeline.h"\n'
                                         'int agent_bad(void);\nint agent_bad(void)\n{\n\treturn 0;\n}\n'}),
    'ranks (siblings)': ('ranks', {'agent/launch/bad.c': '#include "agent/remote/remote.h"\n'
                                   'int agent_bad(void);\nint agent_bad(void)\n{\n\treturn agent_r();\n}\n'}),
    'unranked': ('unranked', {'agent/newfolder/x.c': 'int agent_x(void);\n'
                              'int agent_x(void)\n{\n\treturn 0;\n}\n'}),
    # two 2-file loops that share a file make one circle of 3
    'circles': ('circles', {
        'agent/peers/c1.c': 'int agent_c1(int);\nint agent_c2(int);\n'
                            'int agent_c1(int n)\n{\n\treturn n ? agent_c2(n - 1) : 0;\n}\n',
        'agent/peers/c2.c': 'int agent_c1(int);\nint agent_c2(int);\nint agent_c3(int);\n'
                            'int agent_c2(int n)\n{\n\treturn n ? agent_c1(n - 1) + agent_c3(n - 1) : 0;\n}\n',
        'agent/peers/c3.c': 'int agent_c2(int);\nint agent_c3(int);\n'
                            'int agent_c3(int n)\n{\n\treturn n ? agent_c2(n - 1) : 0;\n}\n'}),
    # the same circle in rdzv/, which is not in the enforced folders: its circles still fail
    'circles (rdzv)': ('circles', {
        'rdzv/r1.c': 'int rdzv_c1(int);\nint rdzv_c2(int);\n'
                     'int rdzv_c1(int n)\n{\n\treturn n ? rdzv_c2(n - 1) : 0;\n}\n',
        'rdzv/r2.c': 'int rdzv_c1(int);\nint rdzv_c2(int);\nint rdzv_c3(int);\n'
                     'int rdzv_c2(int n)\n{\n\treturn n ? rdzv_c1(n - 1) + rdzv_c3(n - 1) : 0;\n}\n',
        'rdzv/r3.c': 'int rdzv_c2(int);\nint rdzv_c3(int);\n'
                     'int rdzv_c3(int n)\n{\n\treturn n ? rdzv_c2(n - 1) : 0;\n}\n'}),
}
# reported, not enforced: must not fail, must be printed
REPORTED = {'rdzv/gx/up.c': 'int rdzv_f(void);\nint gx_up(void);\n'
                            'int gx_up(void)\n{\n\treturn rdzv_f();\n}\n'}


def build_tree(files):
    root = tempfile.mkdtemp(prefix='gxlayers.')
    cc = os.environ.get('CC', 'cc')
    for path, text in files.items():
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, 'w') as fh:
            fh.write(text)
    for path in files:
        if path.endswith('.c'):
            obj = os.path.join(root, 'build/debug', path[:-2] + '.o')
            os.makedirs(os.path.dirname(obj), exist_ok=True)
            subprocess.run([cc, '-c', '-I', root, '-o', obj, os.path.join(root, path)],
                           check=True)
    return root


def run_tree(files, enforce, pending=None):
    import io
    root = build_tree(files)
    out, err = io.StringIO(), io.StringIO()
    try:
        n = check(root, os.path.join(root, 'build/debug'), enforce, out, err, pending=pending)
    finally:
        shutil.rmtree(root)
    return n, out.getvalue(), err.getvalue()


def selftest():
    fail = 0
    (bad, rep), _, err = run_tree(BASE, ('agent',))
    if bad or rep:
        sys.stderr.write('layers selftest: the clean tree was refused:\n' + err)
        fail = 1
    for name, (rule, plant) in PLANTS.items():
        (bad, _), _, err = run_tree(dict(BASE, **plant), ('agent',))
        if not bad or ('layers: %s:' % rule) not in err:
            sys.stderr.write('layers selftest: %s was not caught\n%s' % (name, err))
            fail = 1
    # a pending include is reported, not enforced; a pending entry that does not occur fails
    plant = PLANTS['faces'][1]
    pair = ('agent/pipeline/bad.c', 'agent/peers/peers_int.h')
    (bad, rep), out, err = run_tree(dict(BASE, **plant), ('agent',), {pair: 'being moved'})
    if bad or not rep or 'pending (being moved)' not in out:
        sys.stderr.write('layers selftest: a pending include must be reported, not enforced\n' +
                         out + err)
        fail = 1
    (bad, _), _, err = run_tree(BASE, ('agent',), {pair: 'being moved'})
    if not bad or 'layers: pending:' not in err:
        sys.stderr.write('layers selftest: a stale pending entry was not caught\n' + err)
        fail = 1
    (bad, rep), out, err = run_tree(dict(BASE, **REPORTED), ('agent',))
    if bad or not rep or 'rdzv/gx/up.c' not in out:
        sys.stderr.write('layers selftest: an rdzv finding must be reported, not enforced\n' +
                         out + err)
        fail = 1
    if not fail:
        print('layers selftest: ok')
    return fail


def main():
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--root', default=here)
    ap.add_argument('--objs', help='the debug objects (default ROOT/build/debug)')
    ap.add_argument('--report', action='store_true', help='print the graph, exit 0')
    ap.add_argument('--selftest', action='store_true')
    a = ap.parse_args()
    if a.selftest:
        return selftest()
    objs = a.objs or os.path.join(a.root, 'build/debug')
    if a.report:
        Graph(a.root, objs).report(sys.stdout)
        check(a.root, objs, (), sys.stdout, sys.stdout, (), pending=PENDING)
        return 0
    bad, rep = check(a.root, objs, ENFORCED, pending=PENDING)
    if bad:
        sys.stderr.write('layers: %d finding(s) in %s (tests/layers.py --report for the graph)\n'
                         % (bad, ', '.join(ENFORCED + tuple(c + ' (circles)'
                                                            for c in ENFORCED_CIRCLES))))
        return 1
    print('layers: ok (%s enforced; %s circles enforced; %d reported)' %
          (', '.join(ENFORCED) or 'nothing', ', '.join(ENFORCED_CIRCLES) or 'no', rep))
    return 0


if __name__ == '__main__':
    sys.exit(main())
