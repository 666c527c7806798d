"""Write servers/<id>.json for every server whose tools/list was saved by npm_run.sh / py_run.sh
(or, for the reference servers, by mcp_list.mjs directly; see npm_servers.py).

The definitions (name, description, inputSchema) are copied unchanged from the running published
package's tools/list answer. `source` and `commit` name the public repository snapshot that was read to
confirm them: `files` lists the repository files (under `subdir`) in which the tool names were found,
and `note` says how many of the names were found there (a package can be newer or older than the
snapshot). Usage: python3 build.py [server ...]
"""
import json, os, re, subprocess, sys
from common import write_server, MIRROR, git, source_files

NPM_RAW, PY_RAW = '/tmp/npm2/raw', '/tmp/py/raw'
MCP_HEAD, MCP_ARCH = 'HEAD', '1f705677a930ec618b7a16d87d00cee7db747ff2'
# id: (raw dir, package, owner/repo, ref, subdir)
S = {}
def add(id, raw, pkg, repo, ref='HEAD', sub=''):
    S[id] = (raw, pkg, repo, ref, sub)

def runtxt(name):
    rows = {}
    for line in open(os.path.join(os.path.dirname(__file__), name)):
        if line.startswith('#') or not line.strip():
            continue
        f = line.rstrip('\n').split('|')
        rows[f[0]] = f
    return rows

NPM = runtxt('npm_run.txt'); PY = runtxt('py_run.txt')
def npm(id, repo, ref='HEAD', sub=''):
    d, pkg = NPM[id][1], NPM[id][2]
    v = json.load(open(f'/tmp/npm2/i/{d}/node_modules/{pkg}/package.json'))['version']
    add(id, NPM_RAW, f'npm:{pkg}@{v}', repo, ref, sub)

def py(id, repo, ref='HEAD', sub=''):
    venv = PY[id][1]
    out = subprocess.run([f'/tmp/py/v/{venv}/bin/python', '-c',
        'import sys,importlib.metadata as m;print(m.version(sys.argv[1]))', pkgname(id, venv)],
        capture_output=True, text=True).stdout.strip()
    add(id, PY_RAW, f'pypi:{pkgname(id, venv)}=={out}', repo, ref, sub)

def pkgname(id, venv):
    return {'aws-api': 'awslabs.aws-api-mcp-server', 'aws-mysql': 'awslabs.mysql-mcp-server'}.get(id, venv)

for id, repo, *rest in [
    ('playwright', 'microsoft/playwright', 'HEAD', 'packages/playwright-core/src/tools/backend'), ('chrome-devtools', 'ChromeDevTools/chrome-devtools-mcp'),
    ('browserbase', 'browserbase/mcp-server-browserbase'), ('gitlab', 'zereight/gitlab-mcp'),
    ('kubernetes', 'Flux159/mcp-server-kubernetes'), ('sentry', 'getsentry/sentry-mcp'),
    ('notion', 'makenotion/notion-mcp-server'), ('stripe', 'stripe/agent-toolkit'),
    ('neon', 'neondatabase/mcp-server-neon'), ('context7', 'upstash/context7'),
    ('mongodb', 'mongodb-js/mongodb-mcp-server'), ('tavily', 'tavily-ai/tavily-mcp'),
    ('firecrawl', 'firecrawl/firecrawl-mcp-server'), ('elasticsearch', 'elastic/mcp-server-elasticsearch'),
    ('desktop-commander', 'wonderwhy-er/DesktopCommanderMCP'), ('exa', 'exa-labs/exa-mcp-server'),
    ('figma', 'GLips/Figma-Context-MCP'), ('pinecone', 'pinecone-io/pinecone-mcp'),
    ('heroku', 'heroku/heroku-mcp-server'), ('airtable', 'domdomegg/airtable-mcp-server'),
    ('circleci', 'CircleCI-Public/mcp-server-circleci'), ('asana', 'roychri/mcp-server-asana'),
    ('discord', 'barryyip0625/mcp-discord'), ('google-calendar', 'nspady/google-calendar-mcp'),
    ('gmail', 'GongRzhe/Gmail-MCP-Server'), ('git-cyanheads', 'cyanheads/git-mcp-server'),
    ('apify', 'apify/apify-mcp-server'), ('mysql-node', 'benborla/mcp-server-mysql'),
    ('netlify', 'netlify/netlify-mcp'), ('shopify', 'Shopify/dev-mcp'),
    ('brave-search', 'brave/brave-search-mcp-server'), ('perplexity', 'perplexityai/modelcontextprotocol'),
    ('playwright-ea', 'executeautomation/mcp-playwright'), ('upstash', 'upstash/mcp-server'),
    ('linear', 'tacticlaunch/mcp-linear'), ('mapbox', 'mapbox/mcp-server'),
    ('gcloud', 'googleapis/gcloud-mcp'), ('line', 'line/line-bot-mcp-server'),
    ('firebase', 'gannonh/firebase-mcp'), ('gcs', 'googleapis/gcloud-mcp'),
    ('sanity', 'sanity-io/sanity-mcp-server'), ('browser-tools', 'AgentDeskAI/browser-tools-mcp'),
    ('cloud-run', 'GoogleCloudPlatform/cloud-run-mcp'), ('browsermcp', 'BrowserMCP/mcp'),
    ('youtube-transcript', 'kimtaeyoon83/mcp-server-youtube-transcript'),
    ('airbnb', 'openbnb-org/mcp-server-airbnb'), ('excel-go', 'negokaz/excel-mcp-server'),
    ('azure', 'microsoft/mcp'), ('clarity', 'microsoft/clarity-mcp-server'),
    ('cloudflare', 'cloudflare/mcp-server-cloudflare'), ('lara', 'translated/lara-mcp'),
    ('pdf', 'modelcontextprotocol/ext-apps'), ('dbhub', 'bytebase/dbhub'),
    ('database-ea', 'executeautomation/mcp-database-server'),
]:
    if id in NPM:
        npm(id, repo, *rest)

MS = 'modelcontextprotocol/servers'
for id, repo, *rest in [
    ('git', MS, MCP_HEAD, 'src/git'), ('time', MS, MCP_HEAD, 'src/time'), ('fetch', MS, MCP_HEAD, 'src/fetch'),
    ('sqlite', MS, MCP_ARCH, 'src/sqlite'), ('sentry-ref', MS, MCP_ARCH, 'src/sentry'),
    ('atlassian', 'sooperset/mcp-atlassian'), ('redis', 'redis/mcp-redis'),
    ('clickhouse', 'ClickHouse/mcp-clickhouse'), ('chroma', 'chroma-core/chroma-mcp'),
    ('qdrant', 'qdrant/mcp-server-qdrant'), ('motherduck', 'motherduckdb/mcp-server-motherduck'),
    ('snowflake', 'isaacwasserman/mcp-snowflake-server'), ('word', 'GongRzhe/Office-Word-MCP-Server'),
    ('powerpoint', 'GongRzhe/Office-PowerPoint-MCP-Server'), ('google-workspace', 'taylorwilsdon/google_workspace_mcp'),
    ('obsidian', 'MarkusPfundstein/mcp-obsidian'), ('kubernetes-go', 'containers/kubernetes-mcp-server'),
    ('mysql', 'designcomputer/mysql_mcp_server'), ('excel', 'haris-musa/excel-mcp-server'),
    ('neo4j-cypher', 'neo4j-contrib/mcp-neo4j', 'HEAD', 'servers/mcp-neo4j-cypher'),
    ('neo4j-memory', 'neo4j-contrib/mcp-neo4j', 'HEAD', 'servers/mcp-neo4j-memory'),
    ('jupyter', 'datalayer/jupyter-mcp-server'), ('arxiv', 'blazickjp/arxiv-mcp-server'),
    ('blender', 'ahujasid/blender-mcp'), ('elasticsearch-py', 'cr7258/elasticsearch-mcp-server'),
    ('tree-sitter', 'wrale/mcp-server-tree-sitter'), ('serena', 'oraios/serena'),
]:
    if id in PY:
        py(id, repo, *rest)
for id in PY:
    if id.startswith('aws-') and id not in S:
        sub = {'aws-ecs': 'ecs-mcp-server', 'aws-api': 'aws-api-mcp-server', 'aws-mysql': 'mysql-mcp-server',
               'aws-billing': 'billing-cost-management-mcp-server', 'aws-sns-sqs': 'amazon-sns-sqs-mcp-server',
               'aws-documentation': 'aws-documentation-mcp-server', 'aws-pricing': 'aws-pricing-mcp-server',
               'aws-serverless': 'aws-serverless-mcp-server', 'aws-healthomics': 'aws-healthomics-mcp-server',
               }.get(id, id[4:] + '-mcp-server')
        py(id, 'awslabs/mcp', 'HEAD', 'src/' + sub)


if __name__ == '__main__':
    for id in (sys.argv[1:] or [i for i in S if i not in LEFT_OUT]):
        raw, pkg, repo, ref, sub = S[id]
        p = os.path.join(raw, id + '.json')
        if not os.path.exists(p):
            print('no raw for', id); continue
        tools = json.load(open(p))['tools']
        if not tools:
            print('no tools for', id); continue
        rdir = f'{MIRROR}/{repo.replace("/", "+")}/repo'
        if not os.path.isdir(rdir):
            print('no mirror for', id, repo); continue
        commit = git(rdir, 'rev-parse', ref).strip()
        files, found = source_files(rdir, commit, sub, [t['name'] for t in tools])
        if len(found) < len(tools) / 2:   # e.g. tools generated elsewhere and listed in the README
            files, found = source_files(rdir, commit, sub, [t['name'] for t in tools], allow_md=True)
        note = (f'definitions copied from tools/list of the published package {pkg}; '
                f'{len(found)} of {len(tools)} tool names found in the repository files listed at this commit')
        write_server(id, f'https://github.com/{repo}', commit, files, tools, note=note, package=pkg)
