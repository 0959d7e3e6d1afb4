#!/usr/bin/env python3
"""How the two hand-unrolled kernel folders of run 5 were made (tried through
TT_WEBGPU_WGSL_DIR; see README.md here). Usage:
  python3 unroll_experiments.py matmul SRC_WGSL_DIR OUT_DIR      # call 2 (matmul.wgsl at aa75b65)
  python3 unroll_experiments.py attention SRC_WGSL_DIR OUT_DIR   # call 3 (attn_m_* at e26a3f5)
matmul: the k loop `for (var kk = 0u; kk < BK; kk++) { B }` becomes 32 copies
`if (BK > iu) { let kk = iu; B }` (BK is 16 or 32). attention: every loop over
head-size blocks (d4 < nd4), key columns (c < nbc) and prefetch slots
(i < nk, nl) becomes 16 / 32 / 8 guarded copies plus a loop for the rest."""
import re, shutil, sys

def block_end(s, j):
    depth = 1
    while depth:
        depth += {'{': 1, '}': -1}.get(s[j], 0)
        j += 1
    return j  # past the closing brace

def matmul(src, out):
    p = out + '/matmul.wgsl'
    s = open(p).read()
    head = '        for (var kk = 0u; kk < BK; kk++) {\n'
    i = s.index(head)
    k = block_end(s, i + len(head))
    body = s[i + len(head):k - 1]
    rep = ''.join('        if (BK > %du) {\n            let kk = %du;\n%s        }\n' % (n, n, body) for n in range(32))
    open(p, 'w').write(s[:i] + rep + s[k + 1:])

def attention(src, out):
    pat = re.compile(r'for \(var (d4|c|i) = 0u; \1 < (nd4|nbc|nk|nl); \1\+\+\) \{')
    for f in ['attn_m_fwd', 'attn_m_bwd_dq', 'attn_m_bwd_dkdv']:
        p = '%s/%s.wgsl' % (out, f)
        s = open(p).read()
        res, pos = '', 0
        while True:
            m = pat.search(s, pos)
            if not m:
                res += s[pos:]
                break
            var, bound = m.group(1), m.group(2)
            k = block_end(s, m.end())
            body = s[m.end():k - 1]
            if 'continue' in body or 'break' in body or 'for (var %s =' % var in body:
                res += s[pos:k]
                pos = k
                continue
            cnt = {'d4': 16, 'c': 32, 'i': 8}[var]
            rep = ''.join('if (%du < %s) { let %s = %du;%s}\n' % (q, bound, var, q, body) for q in range(cnt))
            rep += 'for (var %s = %du; %s < %s; %s++) {%s}' % (var, cnt, var, bound, var, body)
            res += s[pos:m.start()] + rep
            pos = k
        open(p, 'w').write(res)

if __name__ == '__main__':
    what, src, out = sys.argv[1:4]
    shutil.copytree(src, out)
    {'matmul': matmul, 'attention': attention}[what](src, out)
