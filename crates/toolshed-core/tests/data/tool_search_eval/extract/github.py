"""github: github/github-mcp-server tool snapshots (pkg/github/__toolsnaps__/*.snap are the exact tools/list JSON)."""
import json, sys
from common import *
R = MIRROR + '/github+github-mcp-server/repo'
commit = git(R, 'rev-parse', 'HEAD').strip()
files = sorted(p for p in git(R, 'ls-tree', '-r', '--name-only', commit).split() if '__toolsnaps__/' in p and p.endswith('.snap'))
tools = [json.loads(show(R, commit, p)) for p in files]
write_server('github', 'https://github.com/github/github-mcp-server', commit, files, tools)
