//! `toolshed call`: one tool call through the full chain, as a model would make it.

use std::io::Read;
use std::process::ExitCode;

use clap::Args;
use toolshed_agent::store::new_id;
use toolshed_core::exec::{Session, ToolCall};
use toolshed_tools::custom::Scope;

use crate::CliError;
use crate::workspace::Workspace;

#[derive(Args)]
pub struct CallArgs {
    /// The tool to call (any registered tool, hidden ones included).
    tool: String,
    /// The arguments as a JSON object, or `-` to read them from standard input. For a
    /// freeform tool (apply_patch), text that is not a JSON object is the raw input.
    #[arg(value_name = "ARGS_JSON")]
    args: Option<String>,
    /// Run as this agent (its permissions apply; default: the session's, else `build`).
    #[arg(long)]
    agent: Option<String>,
    /// Record the call in this stored session (default: an in-memory session of its own).
    #[arg(long, value_name = "ID")]
    session: Option<String>,
    /// Approve every permission request that asks (never one that denies).
    #[arg(long)]
    yes: bool,
    /// Print the result as one JSON object.
    #[arg(long)]
    json: bool,
}

impl CallArgs {
    /// The custom tools this call needs loaded.
    pub fn scope(&self) -> Scope {
        Scope::Tool(self.tool.clone())
    }
}

pub fn run(ws: &Workspace, args: CallArgs) -> Result<ExitCode, CliError> {
    // The database is opened only for --session: a plain call starts nothing it does not need.
    let stored = match &args.session {
        Some(id) => {
            let store = crate::agent::open_store()?;
            let info = store.session(id).map_err(CliError::usage)?;
            Some((store, info))
        }
        None => None,
    };
    let agent = match (&args.agent, &stored) {
        (None, Some((_, info))) => ws.agent(Some(&info.agent))?,
        (flag, _) => ws.agent(flag.as_deref())?,
    };
    let input = match args.args.as_deref() {
        Some("-") => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|e| CliError::usage(format!("cannot read standard input: {e}")))?;
            text
        }
        Some(text) => text.to_string(),
        None => "{}".to_string(),
    };
    let (mut registry, _mcp) = crate::mcp::registry_for_tool(ws, &args.tool)?;
    let approver = crate::approver::for_command(args.yes);
    let (session, call) = match &stored {
        Some((store, info)) => {
            toolshed_tools::register_todo(&mut registry, store.clone());
            let call = ToolCall::raw(new_id("call"), &args.tool, input).with_message(new_id("msg"));
            (Session::new(info.id.clone(), agent), call)
        }
        None => {
            (Session::new(format!("call-{}", std::process::id()), agent), ToolCall::raw("call_1", &args.tool, input))
        }
    };
    let mut builder = ws.executor(registry, approver);
    if let Some((store, _)) = &stored {
        builder = builder.recorder(store.clone());
    }
    let executor = builder.build();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::failure(format!("cannot start the async runtime: {e}")))?;
    let cancel = call.cancel.clone();
    let mut result = runtime.block_on(async {
        // Ctrl-C cancels the call; the chain stops the tool and returns its partial output.
        let interrupted = async {
            crate::stop_requested().await;
            cancel.cancel();
            std::future::pending().await
        };
        tokio::select! {
            result = executor.call(&session, call) => result,
            never = interrupted => never,
        }
    });
    if let Some(id) = result.metadata.get("session_id").filter(|_| result.tool == "bash") {
        // Nothing outlives this process: say so instead of pointing at a session that is gone.
        result.output.push_str(&format!(
            "\n\n(toolshed call ends after this call, so shell session {id} was stopped with it. Long-running commands need a process that stays: `toolshed chat`, `toolshed run` or `toolshed mcp serve`.)"
        ));
        result.metadata.insert("session_stopped".into(), true.into());
    }
    if args.json {
        crate::out_exact(format_args!("{}", result.to_json()));
    } else if result.is_error {
        crate::err(format_args!("{}", result.output));
    } else {
        crate::out(format_args!("{}", result.output));
    }
    // Language servers a write or the lsp tool started get `shutdown` and `exit` (nothing to do
    // when none started).
    runtime.block_on(toolshed_tools::lsp::shared(&ws.config).shutdown());
    Ok(if result.is_error { ExitCode::from(1) } else { ExitCode::SUCCESS })
}
