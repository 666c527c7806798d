"""Shared helpers: write servers/<id>.json in the evaluation's format."""
import json, os, re, subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
SERVERS = os.path.join(HERE, '..', 'servers')
MIRROR = '/work/.mirror'


def git(repo_dir, *args):
    return subprocess.run(['git', '-C', repo_dir] + list(args), check=True,
                          capture_output=True, text=True).stdout


def show(repo_dir, commit, path):
    return git(repo_dir, 'show', f'{commit}:{path}')


def clean_tool(t):
    schema = t.get('inputSchema') or {'type': 'object', 'properties': {}}
    if 'type' not in schema:
        schema = dict(schema, type='object')
    return {'name': t['name'], 'description': (t.get('description') or '').strip(),
            'inputSchema': schema}


def write_server(server, source, commit, files, tools, note=None, package=None):
    seen = set()
    out = []
    empty = [t['name'] for t in tools if not (t.get('description') or '').strip()]
    if empty:   # a tool without a description cannot be searched by meaning: left out, and said so
        note = (note + '; ' if note else '') + 'left out for an empty description: ' + ', '.join(empty)
    for t in tools:
        if t['name'] in empty:
            continue
        t = clean_tool(t)
        if t['name'] in seen:
            raise SystemExit(f'{server}: duplicate tool {t["name"]}')
        seen.add(t['name'])
        out.append(t)
    doc = {'server': server, 'source': source, 'commit': commit, 'files': files}
    if package:
        doc['package'] = package
    if note:
        doc['note'] = note
    doc['tools'] = out
    with open(os.path.join(SERVERS, server + '.json'), 'w') as f:
        json.dump(doc, f, indent=1, ensure_ascii=False)
        f.write('\n')
    print(f'{server}: {len(out)} tools')


def source_files(rdir, ref, sub, names, allow_md=False):
    hits = {}
    found = set()
    for n in names:
        fs = []
        # the name itself, or (for names a server prefixes at run time, e.g. `API-`, `browserbase_`) its tail
        for cand in [n] + ([re.split(r'[-_]', n, 1)[1]] if re.search(r'[-_]', n) else []):
            try:
                out = git(rdir, 'grep', '-l', '-w', '-F', cand, ref, '--', sub or '.')
            except subprocess.CalledProcessError:
                continue
            fs = [l.split(':', 1)[1] for l in out.split('\n') if l]
            bad = r'(^|/)(tests?|__tests__|spec|docs?|examples?)/|\.(txt|lock|snap)$|test|CHANGELOG'
            if not allow_md:
                bad += r'|\.md$'
            fs = [f for f in fs if not re.search(bad, f)]
            if fs:
                break
        if fs:
            found.add(n)
        for f in fs:
            hits[f] = hits.get(f, 0) + 1
    files = sorted(hits, key=lambda f: (-hits[f], f))[:15]
    return sorted(files), found


# Listed and run, but left out of the evaluation: too large or too specialised for its share of the set.
LEFT_OUT = {'azure', 'aws-healthomics',
            'browserbase'}   # its repository snapshot no longer has the package's tool names
