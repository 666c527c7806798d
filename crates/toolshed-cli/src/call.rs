//! `toolshed call`: one tool call through the full chain, as a model would make it.

use std::io::Read;
use std::process::ExitCode;

use clap::Args;
use toolshed_core::exec::{Executor, Session, ToolCall};
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
    /// Run as this agent (its permissions apply).
    #[arg(long)]
    agent: Option<String>,
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
    let agent = ws.agent(args.agent.as_deref())?;
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
    let permission = ws.permission();
    let registry = ws.registry(permission.clone());
    let approver = crate::approver::for_command(args.yes);
    let executor = Executor::builder(registry, ws.root.clone())
        .cwd(ws.cwd.clone())
        .data_dir(toolshed_core::paths::data_dir())
        .limits(ws.config.output)
        .permission(permission)
        .approver(approver)
        .build();
    let session = Session::new(format!("call-{}", std::process::id()), agent);
    let call = ToolCall::raw("call_1", &args.tool, input);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::failure(format!("cannot start the async runtime: {e}")))?;
    let cancel = call.cancel.clone();
    let result = runtime.block_on(async {
        // Ctrl-C cancels the call; the chain stops the tool and returns its partial output.
        let interrupted = async {
            let _ = tokio::signal::ctrl_c().await;
            cancel.cancel();
            std::future::pending().await
        };
        tokio::select! {
            result = executor.call(&session, call) => result,
            never = interrupted => never,
        }
    });
    if args.json {
        crate::out(format_args!("{}", result.to_json()));
    } else if result.is_error {
        crate::err(format_args!("{}", result.output));
    } else {
        crate::out(format_args!("{}", result.output));
    }
    Ok(if result.is_error { ExitCode::from(1) } else { ExitCode::SUCCESS })
}
