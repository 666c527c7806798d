"""Servers whose definitions were taken from their published npm package by asking the
running server for tools/list (see mcp_list.mjs and npm_servers.sh). The repository and
commit named are the public source of that package, which was read to check the names.
Usage: python3 npm_servers.py RAW_DIR [server ...]   (RAW_DIR holds <server>.json from mcp_list.mjs)
"""
import json, os, sys
from common import write_server, source_files, MIRROR

MCP = 'https://github.com/modelcontextprotocol/servers'
HEAD = '76d64c822f5125032f89eb71dbdb94e42b434821'     # modelcontextprotocol/servers HEAD read
ARCH = '1f705677a930ec618b7a16d87d00cee7db747ff2'     # last commit before "Archive unmaintained servers"
# server id: (npm package@version, repository, commit read, files read)
CONFIG = {
    'filesystem': ('@modelcontextprotocol/server-filesystem@2026.8.31', MCP, HEAD, ['src/filesystem/index.ts']),
    'memory': ('@modelcontextprotocol/server-memory@2026.8.31', MCP, HEAD, ['src/memory/index.ts']),
    'sequentialthinking': ('@modelcontextprotocol/server-sequential-thinking@2026.8.31', MCP, HEAD, ['src/sequentialthinking/index.ts']),
    'everything': ('@modelcontextprotocol/server-everything@2026.8.31', MCP, HEAD, ['src/everything/']),
    'gitlab-ref': ('@modelcontextprotocol/server-gitlab@2025.4.25', MCP, ARCH, ['src/gitlab/index.ts', 'src/gitlab/schemas.ts']),
    'slack': ('@modelcontextprotocol/server-slack@2025.4.25', MCP, ARCH, ['src/slack/index.ts']),
    'postgres': ('@modelcontextprotocol/server-postgres@0.6.2', MCP, ARCH, ['src/postgres/index.ts']),
    'puppeteer': ('@modelcontextprotocol/server-puppeteer@2025.5.12', MCP, ARCH, ['src/puppeteer/index.ts']),
    'brave-search-ref': ('@modelcontextprotocol/server-brave-search@0.6.2', MCP, ARCH, ['src/brave-search/index.ts']),
    'google-maps': ('@modelcontextprotocol/server-google-maps@0.6.2', MCP, ARCH, ['src/google-maps/index.ts']),
    'everart': ('@modelcontextprotocol/server-everart@0.6.2', MCP, ARCH, ['src/everart/index.ts']),
    'aws-kb-retrieval': ('@modelcontextprotocol/server-aws-kb-retrieval@0.6.2', MCP, ARCH, ['src/aws-kb-retrieval-server/index.ts']),
}
RAWNAME = {'sequentialthinking': 'sequential-thinking', 'gitlab-ref': 'gitlab', 'brave-search-ref': 'brave-search'}

if __name__ == '__main__':
    raw = sys.argv[1]
    for server in (sys.argv[2:] or CONFIG):
        pkg, repo, commit, files = CONFIG[server]
        p = os.path.join(raw, RAWNAME.get(server, server) + '.json')
        if not os.path.exists(p):
            print('missing', p); continue
        tools = json.load(open(p))['tools']
        rdir = MIRROR + '/modelcontextprotocol+servers/repo'
        sub = files[0].rsplit('/', 1)[0] if files[0].endswith('.ts') else files[0].rstrip('/')
        files, found = source_files(rdir, commit, sub, [t['name'] for t in tools])
        write_server(server, repo, commit, files, tools, package='npm:' + pkg,
                     note=(f'definitions copied from tools/list of the published package npm:{pkg}; '
                           f'{len(found)} of {len(tools)} tool names found in the repository files listed at this commit'))
