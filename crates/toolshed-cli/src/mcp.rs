//! `toolshed mcp serve | list | import`, and attaching configured MCP servers' tools to a
//! registry for `tools` and `call`, lazily: `call` of a built-in tool starts no server, and
//! `call` of an MCP tool starts only the server(s) whose name prefixes the tool's.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Args, Subcommand};
use serde_json::json;
use tokio::sync::mpsc;
use toolshed_core::config::McpAsk;
use toolshed_core::registry::Registry;
use toolshed_mcp::server::{ElicitingApprover, Exported, Peers};
use toolshed_mcp::{McpClients, McpServer, State};

use crate::CliError;
use crate::workspace::Workspace;

/// `toolshed mcp ...`.
#[derive(Subcommand)]
pub enum McpCommand {
    /// Serve an agent's tools to an MCP client, over stdio (default) or streamable HTTP.
    #[command(after_help = "Examples:
  toolshed mcp serve                             # over stdio, for a client that starts it
  toolshed mcp serve -a plan                     # only what plan mode may do
  toolshed mcp serve --http 127.0.0.1:8700")]
    Serve(ServeArgs),
    /// Show each configured MCP server: connected (with its tools), disabled or unavailable (why).
    #[command(after_help = "Examples:\n  toolshed mcp list\n  toolshed mcp list --json")]
    List(ListArgs),
    /// Add the servers of an `mcpServers` JSON file (Claude Desktop, Cursor, .mcp.json, VS Code)
    /// to the worktree's toolshed.toml.
    #[command(after_help = "Examples:
  toolshed mcp import .mcp.json
  toolshed mcp import ~/.config/Claude/claude_desktop_config.json --print")]
    Import(ImportArgs),
}

#[derive(Args)]
pub struct ServeArgs {
    /// Serve this agent's tools, under its permission rules (default: build).
    #[arg(short, long)]
    agent: Option<String>,
    /// Serve streamable HTTP on this loopback address (e.g. 127.0.0.1:8700; port 0 picks a free
    /// one). Only requests addressed to localhost, from no browser origin or a local one, and
    /// carrying `Authorization: Bearer TOKEN` are answered. TOKEN is $TOOLSHED_MCP_TOKEN, else
    /// one made on the first start and shown then (`mcp-http-token` in toolshed's data
    /// directory keeps its digest; delete it for a new token). Another machine reaches it
    /// through an SSH tunnel.
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    /// With --http: answer requests without the token (any user of this machine can then run
    /// the tools).
    #[arg(long, requires = "http")]
    no_auth: bool,
}

#[derive(Args)]
pub struct ListArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct ImportArgs {
    /// The JSON file with an `mcpServers` (or `servers`) object.
    file: std::path::PathBuf,
    /// Print the TOML instead of appending it to toolshed.toml.
    #[arg(long)]
    print: bool,
}

pub fn run(ws: &Workspace, command: McpCommand) -> Result<ExitCode, CliError> {
    match command {
        McpCommand::Serve(args) => serve(ws, args),
        McpCommand::List(args) => list(ws, args),
        McpCommand::Import(args) => import(ws, args),
    }
}

/// Which servers a command needs.
pub use toolshed_runtime::mcp::{Attached, McpScope as Scope};
use toolshed_runtime::mcp::{enabled, io_runtime, options, report_unavailable};

/// Connects the servers `scope` needs and registers their tools; unreachable servers are
/// reported on standard error.
pub fn attach(ws: &Workspace, registry: &mut Registry, scope: Scope<'_>) -> Result<Option<Attached>, CliError> {
    Ok(toolshed_runtime::mcp::attach(ws, registry, scope, &|line| eprintln!("toolshed: {line}"))?)
}

/// The registry a call of `tool` runs against, with its MCP server(s) attached; unreachable
/// servers are reported on standard error.
pub fn registry_for_tool(ws: &Workspace, tool: &str) -> Result<(Registry, Option<Attached>), CliError> {
    Ok(toolshed_runtime::mcp::registry_for_tool(ws, tool, &|line| eprintln!("toolshed: {line}"))?)
}

/// The digest of the token `mcp serve --http` asks clients for, and what to tell people about it:
/// `$TOOLSHED_MCP_TOKEN`, else the data directory's `mcp-http-token`. That file keeps only the
/// token's SHA-256 (a command the model runs can read the user's files, and must not find a
/// token it could send): on first use toolshed makes a token from 32 random bytes, keeps its
/// digest there, readable by its owner only, and shows the token this once.
fn http_token() -> Result<([u8; 32], String), CliError> {
    const NAME: &str = "TOOLSHED_MCP_TOKEN";
    const SHORTEST: usize = 16;
    const PREFIX: &str = "sha256:";
    if let Some(token) = std::env::var_os(NAME).filter(|t| !t.is_empty()) {
        let token = token.to_str().map(str::trim).unwrap_or_default();
        if token.len() < SHORTEST || !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(CliError::usage(format!(
                "{NAME} must be at least {SHORTEST} printable characters without spaces (a random one: `openssl rand -hex 32`)"
            )));
        }
        return Ok((toolshed_mcp::server::token_digest(token.as_bytes()), format!("${NAME}")));
    }
    let file = toolshed_core::paths::data_dir().join("mcp-http-token");
    let fail = |what: &str, e: std::io::Error| CliError::failure(format!("cannot {what} {}: {e}", file.display()));
    let stored = match read_token_file(&file) {
        Ok(stored) => stored,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let mut random = [0u8; 32];
            std::io::Read::read_exact(
                &mut std::fs::File::open("/dev/urandom").map_err(|e| fail("read /dev/urandom for", e))?,
                &mut random,
            )
            .map_err(|e| fail("read /dev/urandom for", e))?;
            let token = hex(&random);
            let digest = toolshed_mcp::server::token_digest(token.as_bytes());
            let stored = hex(&digest);
            if let Some(dir) = file.parent() {
                std::fs::create_dir_all(dir).map_err(|e| fail("create the directory of", e))?;
            }
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create_new(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
            match options.open(&file) {
                Ok(mut out) => {
                    std::io::Write::write_all(&mut out, format!("{PREFIX}{stored}\n").as_bytes())
                        .map_err(|e| fail("write", e))?;
                    return Ok((
                        digest,
                        format!(
                            "this new token, shown only now (keep it in your client's configuration; {} keeps only its digest, delete it for a new token): {token}",
                            file.display()
                        ),
                    ));
                }
                // Another `mcp serve` made it first.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    read_token_file(&file).map_err(|e| fail("read", e))?
                }
                Err(e) => return Err(fail("create", e)),
            }
        }
        Err(e) => return Err(fail("read", e)),
    };
    let digest = stored
        .strip_prefix(PREFIX)
        .filter(|hex| hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
        .map(|hex| {
            let mut digest = [0u8; 32];
            for (i, byte) in digest.iter_mut().enumerate() {
                *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap_or_default();
            }
            digest
        })
        .ok_or_else(|| {
            CliError::failure(format!(
                "{} does not hold a token's digest (`{PREFIX}` and 64 hex digits); delete it and toolshed makes a new token",
                file.display()
            ))
        })?;
    Ok((digest, format!("the token made when {} was (it is not kept; delete the file for a new one)", file.display())))
}

/// `bytes` as lowercase hex digits.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What `file` holds: it must be a plain file of this user, not a link (made readable by its
/// owner only if it was not).
fn read_token_file(file: &std::path::Path) -> std::io::Result<String> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NOFOLLOW | libc::O_NONBLOCK);
    let opened = options.open(file).map_err(|e| {
        if e.raw_os_error() == Some(libc::ELOOP) {
            std::io::Error::other("it is a symbolic link; it must be a file of its own")
        } else {
            e
        }
    })?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
        let meta = opened.metadata()?;
        // SAFETY: geteuid cannot fail.
        if !meta.is_file() || meta.uid() != unsafe { libc::geteuid() } {
            return Err(std::io::Error::other("it is not a file of this user"));
        }
        // A hard link's other name may lie where someone else writes (review 16).
        if meta.nlink() != 1 {
            return Err(std::io::Error::other("it has other names (hard links); it must be a file of its own"));
        }
        if meta.mode() & 0o077 != 0 {
            opened.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        }
    }
    let mut text = String::new();
    std::io::Read::read_to_string(&mut std::io::Read::take(&opened, 4096), &mut text)?;
    Ok(text.trim().to_string())
}

fn serve(ws: &Workspace, args: ServeArgs) -> Result<ExitCode, CliError> {
    // The tools run commands and write files, and nothing authenticates a client: a request
    // from the network that names `localhost` as its host would pass the host check.
    // Only the addresses the host check answers for (127.0.0.1 and ::1): another loopback
    // address would be served, and every request refused.
    let answered = |a: &SocketAddr| a.ip() == std::net::Ipv4Addr::LOCALHOST || a.ip() == std::net::Ipv6Addr::LOCALHOST;
    if let Some(addr) = args.http.filter(|a| !answered(a)) {
        let port = addr.port();
        return Err(CliError::usage(format!(
            "mcp serve --http listens only on a loopback address (127.0.0.1:{port} or [::1]:{port}): its tools run commands in this worktree. To reach it from another machine, forward the port over SSH: ssh -L {port}:127.0.0.1:{port} THIS-HOST"
        )));
    }
    let token = match (args.http, args.no_auth) {
        (Some(_), false) => Some(http_token()?),
        _ => None,
    };
    // Any agent, sub-agents included: `explore` serves the read-only tools.
    let agent = ws.agent(args.agent.as_deref())?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| CliError::failure(format!("cannot start the async runtime: {e}")))?;
    let served = runtime.block_on(async {
        // Upstream servers start in the background: the client gets its answer to
        // `initialize` (and the built-in tools) at once, and each server's tools join with
        // `notifications/tools/list_changed` when it is up.
        let connected: std::sync::Mutex<Vec<(usize, Arc<McpServer>)>> = std::sync::Mutex::default();
        let clients = || {
            let servers = connected.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            McpClients::new(servers.iter().map(|(_, s)| s.clone()).collect())
        };
        // An MCP client's requests do not carry the todo list: it reads it with todo_read.
        // One list for the whole connection, kept when the registry is rebuilt.
        let todos: Arc<dyn toolshed_tools::todo::TodoStore> = Arc::new(toolshed_tools::todo::MemoryTodos::default());
        let build = || {
            let mut registry = ws.registry();
            toolshed_tools::register_todo_standalone(&mut registry, todos.clone());
            clients().register(&mut registry);
            registry
        };
        let peers = Peers::default();
        let approver = ElicitingApprover::new(peers.clone(), ws.config.mcp_server.ask.unwrap_or(McpAsk::Reject));
        // The client runs the loop, so the order of its calls is its own: the doom-loop
        // check is off unless `[mcp_server] doom_loop = true`.
        let executor =
            ws.executor(build(), Arc::new(approver)).doom_loop(ws.config.mcp_server.doom_loop.unwrap_or(false)).build();
        let exported = Exported::new(executor, agent, peers);
        // A server that came up, or whose tool list changed, rebuilds the registry and tells
        // our clients.
        let (changed_tx, mut changed_rx) = mpsc::unbounded_channel::<()>();
        let connect = async {
            let mut tasks = tokio::task::JoinSet::new();
            for (i, (name, config)) in enabled(ws).enumerate() {
                let (name, config, options) = (name.clone(), config.clone(), options(ws));
                tasks.spawn(async move { (i, McpServer::connect(&name, &config, &options).await) });
            }
            while let Some(done) = tasks.join_next().await {
                let Ok((i, server)) = done else { continue };
                report_unavailable(&McpClients::new(vec![server.clone()]), &|line| eprintln!("toolshed: {line}"));
                let mut changes = server.subscribe();
                let tx = changed_tx.clone();
                tokio::spawn(async move {
                    while changes.changed().await.is_ok() {
                        if tx.send(()).is_err() {
                            break;
                        }
                    }
                });
                let mut servers = connected.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                servers.push((i, server));
                servers.sort_by_key(|(i, _)| *i);
                drop(servers);
                let _ = changed_tx.send(());
            }
        };
        let follow = async {
            while changed_rx.recv().await.is_some() {
                // Several servers that came up together need one rebuild.
                while changed_rx.try_recv().is_ok() {}
                exported.replace_registry(build()).await;
            }
        };
        let follow = async {
            tokio::join!(connect, follow);
            std::future::pending::<()>().await;
        };
        let served = match args.http {
            // SIGTERM (or Ctrl-C) ends serving like a closed input, so the clean-up below runs.
            None => tokio::select! {
                served = exported.serve_stdio() => served,
                () = crate::stop_requested() => Ok(()),
                () = follow => Ok(()),
            },
            Some(addr) => {
                let listener =
                    toolshed_mcp::server::bind(addr).await.map_err(|e| format!("cannot listen on {addr}: {e}"))?;
                let local = listener.local_addr().map_err(|e| e.to_string())?;
                eprintln!("toolshed: serving MCP (streamable HTTP) on http://{local}/mcp");
                match &token {
                    Some((_, from)) => eprintln!(
                        "toolshed: clients must send the header `Authorization: Bearer TOKEN`, TOKEN being {from}"
                    ),
                    None => eprintln!(
                        "toolshed: --no-auth: every user of this machine can call these tools through this port"
                    ),
                }
                let cancel = toolshed_core::context::CancellationToken::new();
                let token = token.map(|(digest, _)| digest);
                tokio::select! {
                    () = exported.serve_http(listener, cancel.clone(), token) => Ok(()),
                    () = crate::stop_requested() => { cancel.cancel(); Ok(()) },
                    () = follow => Ok(()),
                }
            }
        };
        clients().shutdown().await;
        // Upstream servers still starting (or given up on) are not among the clients: their
        // process groups go too, whatever their start-up was doing.
        toolshed_mcp::kill_all_servers();
        toolshed_tools::lsp::shared(&ws.config).shutdown().await;
        served
    });
    // Not a plain drop: that waits for the blocked read of standard input, which a client that
    // keeps it open after SIGTERM or SIGHUP never ends.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    served.map_err(CliError::failure)?;
    Ok(ExitCode::SUCCESS)
}

fn list(ws: &Workspace, args: ListArgs) -> Result<ExitCode, CliError> {
    let runtime = io_runtime()?;
    let clients = runtime.block_on(McpClients::connect(ws.config.mcp.iter(), &options(ws)));
    let statuses = clients.statuses();
    runtime.block_on(clients.shutdown());
    if args.json {
        let items: Vec<_> = statuses
            .iter()
            .map(|s| {
                let (state, reason) = match &s.state {
                    State::Connected => ("connected", None),
                    State::Disabled => ("disabled", None),
                    State::Unavailable(reason) => ("unavailable", Some(reason.clone())),
                };
                json!({
                    "name": s.name,
                    "transport": s.transport,
                    "status": state,
                    "reason": reason,
                    "tools": s.tools,
                    "skipped": s.skipped.iter().map(|(tool, why)| json!({"tool": tool, "reason": why})).collect::<Vec<_>>(),
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&items).map_err(CliError::failure)?);
        return Ok(ExitCode::SUCCESS);
    }
    if statuses.is_empty() && ws.config.project_note.is_some() {
        // Servers just imported or written are in a toolshed.toml no one has accepted yet.
        crate::out(format_args!(
            "No MCP servers apply yet: this project's toolshed.toml is not applied as it is on disk (it changed since it was accepted, or was never accepted). Run `toolshed trust` to review it; its servers apply once you accept it."
        ));
    } else if statuses.is_empty() {
        crate::out(format_args!(
            "No MCP servers are configured. Add [mcp.NAME] tables to toolshed.toml, or run `toolshed mcp import FILE`."
        ));
        return Ok(ExitCode::SUCCESS);
    }
    for s in &statuses {
        let state = match &s.state {
            State::Connected => format!("connected, {} tool(s)", s.tools.len()),
            State::Disabled => "disabled".to_string(),
            State::Unavailable(reason) => format!("unavailable: {reason}"),
        };
        crate::out(format_args!("{}  ({})\n  {state}", s.name, s.transport));
        for (tool, why) in &s.skipped {
            crate::out(format_args!("  skipped tool `{tool}`: {why}"));
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn import(ws: &Workspace, args: ImportArgs) -> Result<ExitCode, CliError> {
    let text = std::fs::read_to_string(&args.file)
        .map_err(|e| CliError::usage(format!("cannot read {}: {e}", args.file.display())))?;
    let imported = toolshed_mcp::import::parse(&text, toolshed_mcp::import::Source::of_path(&args.file))
        .map_err(|e| CliError::usage(format!("{}: {e}", args.file.display())))?;
    for note in &imported.skipped {
        eprintln!("toolshed: skipped {note}");
    }
    for warning in &imported.warnings {
        eprintln!("toolshed: warning: {warning}");
    }
    let (existing, new): (Vec<_>, Vec<_>) =
        imported.servers.into_iter().partition(|(name, _)| ws.config.mcp.contains_key(name));
    for (name, _) in &existing {
        eprintln!("toolshed: skipped {name}: already configured");
    }
    let toml = toolshed_mcp::import::to_toml(&new);
    if args.print {
        print!("{toml}");
        return Ok(ExitCode::SUCCESS);
    }
    if new.is_empty() {
        eprintln!("toolshed: nothing to add");
        return Ok(ExitCode::SUCCESS);
    }
    let path = ws.root.join(toolshed_core::config::PROJECT_FILE);
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(|e| CliError::failure(format!("cannot write {}: {e}", path.display())))?;
    std::io::Write::write_all(&mut file, toml.as_bytes())
        .map_err(|e| CliError::failure(format!("cannot write {}: {e}", path.display())))?;
    let names: Vec<&str> = new.iter().map(|(n, _)| n.as_str()).collect();
    crate::out(format_args!("Added {} MCP server(s) to {}: {}", new.len(), path.display(), names.join(", ")));
    // The file imported may be anyone's (the model's too): its commands run only once a person
    // has read them where `toolshed trust` shows them.
    crate::out(format_args!("They start once you accept the change: `toolshed trust` shows what was added and asks."));
    Ok(ExitCode::SUCCESS)
}
