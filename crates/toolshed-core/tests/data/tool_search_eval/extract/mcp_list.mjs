// Ask a stdio MCP server for its tools: node mcp_list.mjs OUT.json -- CMD ARGS...
// Sends initialize, notifications/initialized, then tools/list (following nextCursor),
// and writes {"tools": [...]} exactly as the server returned them.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
const argv = process.argv.slice(2);
const out = argv[0];
const cmd = argv.slice(argv.indexOf('--') + 1);
const child = spawn(cmd[0], cmd.slice(1), { stdio: ['pipe', 'pipe', 'inherit'], env: process.env });
let buf = '';
const pending = new Map();
let id = 0;
function send(method, params, isNotif) {
  const msg = { jsonrpc: '2.0', method, params };
  if (!isNotif) msg.id = ++id;
  child.stdin.write(JSON.stringify(msg) + '\n');
  if (!isNotif) return new Promise((res) => pending.set(msg.id, res));
}
child.stdout.on('data', (d) => {
  buf += d.toString();
  let i;
  while ((i = buf.indexOf('\n')) >= 0) {
    const line = buf.slice(0, i).trim(); buf = buf.slice(i + 1);
    if (!line.startsWith('{')) continue;
    let m; try { m = JSON.parse(line); } catch { continue; }
    if (m.id !== undefined && pending.has(m.id)) { pending.get(m.id)(m); pending.delete(m.id); }
  }
});
const timer = setTimeout(() => { console.error('timeout'); child.kill(); process.exit(2); }, 60000);
const init = await send('initialize', { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'toolshed-eval-extract', version: '0' } });
const serverInfo = init.result?.serverInfo;
send('notifications/initialized', {}, true);
let tools = [], cursor;
do {
  const r = await send('tools/list', cursor ? { cursor } : {});
  if (r.error) { console.error(JSON.stringify(r.error)); break; }
  tools.push(...r.result.tools); cursor = r.result.nextCursor;
} while (cursor);
writeFileSync(out, JSON.stringify({ serverInfo, tools }, null, 1));
console.error(`${tools.length} tools -> ${out}`);
clearTimeout(timer); child.kill(); process.exit(0);
