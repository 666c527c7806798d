"""Write ../SOURCES.md from servers/*.json (the table) and the fixed text below. Usage: python3 sources.py"""
import glob, json, os, re
HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
rows = []
for p in sorted(glob.glob(os.path.join(HERE, 'servers', '*.json'))):
    d = json.load(open(p))
    how = d.get('package') or 'repository snapshot'
    m = re.search(r'(\d+) of (\d+) tool names', d.get('note', ''))
    found = f'{m.group(1)}/{m.group(2)}' if m else 'all'
    files = ', '.join(f'`{f}`' for f in d['files'][:4]) + (f' (+{len(d["files"]) - 4} more)' if len(d['files']) > 4 else '')
    extra = ''
    if 'left out for an empty description' in d.get('note', ''):
        extra = ' (' + d['note'].split('; ')[-1] + ')'
    rows.append(f"| {d['server']} | {d['source']} | `{d['commit'][:12]}` | {how} | {found} | {files} | {len(d['tools'])}{extra} |")
text = open(os.path.join(os.path.dirname(__file__), 'SOURCES.head.md')).read()
with open(os.path.join(HERE, 'SOURCES.md'), 'w') as f:
    f.write(text)
    f.write('\n| server | repository | commit | definitions taken from | names found in repo | files read (where the names are defined) | tools |\n')
    f.write('| --- | --- | --- | --- | --- | --- | --- |\n')
    f.write('\n'.join(rows) + '\n')
print(len(rows), 'servers')
