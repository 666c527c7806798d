"""Validate the tool_search evaluation data and print its counts. Usage: python3 check.py"""
import collections, glob, json, os, re, sys

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
KINDS = {'paraphrase', 'synonym', 'foreign', 'misspelling', 'identifier', 'plain'}
errors = []
full = {}
servers = 0
for path in sorted(glob.glob(os.path.join(HERE, 'servers', '*.json'))):
    try:
        d = json.load(open(path))
    except Exception as e:
        errors.append(f'{path}: does not parse: {e}'); continue
    servers += 1
    s = d.get('server', '')
    if not re.fullmatch(r'[a-z0-9-]+', s) or os.path.basename(path) != s + '.json':
        errors.append(f'{path}: bad server id {s!r}')
    if not str(d.get('source', '')).startswith('https://github.com/'):
        errors.append(f'{s}: no source repository')
    if not re.fullmatch(r'[0-9a-f]{40}', str(d.get('commit', ''))):
        errors.append(f'{s}: commit is not 40 hex digits')
    if not d.get('files'):
        errors.append(f'{s}: no files listed')
    for t in d.get('tools', []):
        name = t.get('name')
        if not name:
            errors.append(f'{s}: tool without name'); continue
        if not str(t.get('description', '')).strip():
            errors.append(f'{s}: {name}: empty description')
        sch = t.get('inputSchema')
        if not isinstance(sch, dict) or sch.get('type') != 'object':
            errors.append(f'{s}: {name}: inputSchema is not an object schema')
        fn = f'{s}_{name}'
        if fn in full:
            errors.append(f'duplicate full name {fn}')
        full[fn] = s

queries = []
for i, line in enumerate(open(os.path.join(HERE, 'queries.tsv')), 1):
    line = line.rstrip('\n')
    if not line or line.startswith('#'):
        continue
    f = line.split('\t')
    if len(f) != 4:
        errors.append(f'queries.tsv:{i}: {len(f)} fields'); continue
    q, rel, hard, kind = f
    names = [n for n in rel.split(',') if n]
    if not q.strip() or not names:
        errors.append(f'queries.tsv:{i}: empty query or relevant list')
    for n in names:
        if n not in full:
            errors.append(f'queries.tsv:{i}: unknown tool {n}')
    if hard not in ('0', '1'):
        errors.append(f'queries.tsv:{i}: hard is {hard!r}')
    if kind not in KINDS:
        errors.append(f'queries.tsv:{i}: kind is {kind!r}')
    queries.append((q, names, hard, kind))

dups = [q for q, c in collections.Counter(q for q, *_ in queries).items() if c > 1]
for q in dups:
    errors.append(f'duplicate query {q!r}')
covered = {full[n] for _, names, _, _ in queries for n in names if n in full}
kinds = collections.Counter(k for *_, k in queries)
print(f'servers {servers}, tools {len(full)}, queries {len(queries)}, hard {sum(h == "1" for _, _, h, _ in queries)}')
print('kinds', ', '.join(f'{k} {kinds[k]}' for k in sorted(kinds)))
print(f'servers with at least one query: {len(covered)}; without: {", ".join(sorted(set(full.values()) - covered))}')
print('relevant per query:', dict(sorted(collections.Counter(len(n) for _, n, _, _ in queries).items())))
for e in errors:
    print('ERROR', e)
sys.exit(1 if errors else 0)
