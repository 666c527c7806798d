//! `toolshed permission explain`: which rules a call meets, and which one decides.

use std::process::ExitCode;
use std::sync::Arc;

use clap::{Args, Subcommand};
use serde_json::{Value, json};
use toolshed_core::context::{CallInfo, CancellationToken, Environment, ToolContext};
use toolshed_core::exec::CallInput;
use toolshed_core::exec::decode::decode;
use toolshed_core::exec::permit::Gate;
use toolshed_core::exec::{Session, Stage};
use toolshed_core::permission::{Action, RejectAll};
use toolshed_core::tool::ToolError;
use toolshed_tools::custom::Scope;

use crate::CliError;
use crate::workspace::Workspace;

#[derive(Subcommand)]
pub enum PermissionCommand {
    /// Show the permission requests of a call, the rules each pattern meets and the decision.
    #[command(after_help = "Examples:
  toolshed permission explain bash '{\"command\": \"git status && rm -rf build\"}'
  toolshed permission explain edit '{\"file_path\": \"src/lib.rs\", \"old_string\": \"a\", \"new_string\": \"b\"}' -a plan
  toolshed permission explain read '{\"file_path\": \".env\"}' --json")]
    Explain(ExplainArgs),
}

#[derive(Args)]
pub struct ExplainArgs {
    /// The tool.
    tool: String,
    /// The call's arguments as a JSON object (raw text for a freeform tool).
    #[arg(value_name = "ARGS_JSON")]
    args: String,
    /// The agent whose rules apply.
    #[arg(short, long)]
    agent: Option<String>,
    /// Print the explanation as JSON.
    #[arg(long)]
    json: bool,
}

impl PermissionCommand {
    /// The custom tools this command needs loaded.
    pub fn scope(&self) -> Scope {
        let PermissionCommand::Explain(args) = self;
        Scope::Tool(args.tool.clone())
    }
}

pub fn run(ws: &Workspace, command: PermissionCommand) -> Result<ExitCode, CliError> {
    let PermissionCommand::Explain(args) = command;
    let agent = ws.agent(args.agent.as_deref())?;
    // The registry `toolshed call` would run this call against: MCP and custom tools included.
    let (registry, _mcp) = crate::mcp::registry_for_tool(ws, &args.tool)?;
    // The model's wording says what the model should do next; a person gets their own.
    let for_person = |stage, e: ToolError| {
        CliError::usage(crate::call::for_person(Some(stage), &args.tool, &e.to_string(), "ARGS_JSON"))
    };
    let entry = registry.get(&args.tool).ok_or_else(|| {
        let view = toolshed_core::registry::View { agent: &agent, ..Default::default() };
        for_person(Stage::Resolve, toolshed_core::exec::resolve::unknown(&registry, &args.tool, &view))
    })?;
    let value = decode(entry, &CallInput::Raw(args.args.clone())).map_err(|e| for_person(Stage::Decode, e))?;
    let invocation = entry.tool.prepare(value).map_err(CliError::usage)?;
    let mut env = Environment::new(ws.root.clone(), toolshed_core::paths::data_dir());
    env.cwd.clone_from(&ws.cwd);
    let info = CallInfo { agent: agent.clone(), tool: args.tool.clone(), ..CallInfo::default() };
    // The rules answer what a tool checks while it prepares (grep -r's files), asking no one.
    let gate = Gate::new(ws.agents.clone(), Arc::new(RejectAll), Session::new("explain", agent.clone()));
    let ctx = ToolContext::new(info, Arc::new(env), CancellationToken::new(), Arc::new(gate));
    let mut requests = Vec::new();
    for request in invocation.permissions(&ctx).map_err(CliError::usage)? {
        // As the chain does: a write to a protected path also needs `protected`, checked first.
        let user_config = toolshed_core::paths::config_dir();
        requests.extend(toolshed_core::protected::implied_request(&request, user_config.as_deref()));
        requests.push(request);
    }

    let mut overall = Action::Allow;
    let mut report = Vec::new();
    for request in &requests {
        let mut patterns = Vec::new();
        for pattern in &request.patterns {
            let e = ws.agents.explain(&agent, &request.permission, pattern);
            let decision = toolshed_core::permission::Decision { action: e.action, rule: e.decided_by.clone() };
            let action = request.action(&decision, ws.agents.as_ref(), &agent);
            overall = strictest(overall, action);
            patterns.push((e, action));
        }
        report.push((request, patterns));
    }

    if args.json {
        let requests: Vec<Value> = report
            .iter()
            .map(|(req, patterns)| {
                json!({
                    "permission": req.permission,
                    "always": req.always,
                    "minimum": req.minimum,
                    "secondary": req.secondary,
                    "opaque": req.opaque,
                    "patterns": patterns.iter().map(|(e, action)| json!({
                        "pattern": e.pattern,
                        "action": action,
                        "decided_by": e.decided_by,
                        "note": e.note,
                        "considered": e.considered.iter().map(|(r, m)| json!({"rule": r, "matched": m})).collect::<Vec<_>>(),
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        let out = json!({"agent": agent, "tool": args.tool, "decision": overall, "requests": requests});
        crate::out_exact(format_args!("{out}"));
        return Ok(ExitCode::SUCCESS);
    }

    crate::out(format_args!("agent {agent}, tool {} (permission key `{}`)", args.tool, entry.spec().permission));
    for (req, patterns) in &report {
        if req.opaque {
            let why = req.metadata.get("opaque").and_then(Value::as_str).unwrap_or("it runs code no rule can read");
            crate::out(format_args!(
                "\nopaque request `{}`: {why}; asks where a rule denies some `{}` command, unless a rule naming it allows it",
                req.permission, req.permission
            ));
        } else if req.secondary {
            crate::out(format_args!(
                "\nsecondary request `{}`: words that may only be arguments; a deny asks, nothing else counts",
                req.permission
            ));
        } else {
            crate::out(format_args!(
                "\nrequest `{}` (\"always\" would allow: {})",
                req.permission,
                req.always.join(", ")
            ));
        }
        if req.minimum == Action::Ask {
            let why = req.metadata.get("unclassified").and_then(Value::as_str).unwrap_or("the tool cannot analyse it");
            crate::out(format_args!("  at least ask: {why}"));
        }
        for (e, action) in patterns {
            crate::out(format_args!("  pattern `{}`", e.pattern));
            // The deciding rule as listed: the last matching entry equal to it.
            let decider = e.considered.iter().rposition(|(s, m)| *m && Some(&s.rule) == e.decided_by.as_ref());
            for (i, (sourced, matched)) in e.considered.iter().enumerate() {
                let mark = if Some(i) == decider {
                    "  <- decides"
                } else if *matched {
                    "  (matches, not deciding)"
                } else {
                    ""
                };
                crate::out(format_args!("    {}  [{}]{mark}", sourced.rule, sourced.origin(&agent)));
            }
            if let Some(note) = &e.note {
                crate::out(format_args!("    ({note})"));
            }
            if e.decided_by.is_none() {
                crate::out(format_args!("    no rule matches: ask"));
            }
            crate::out(format_args!("    => {action}"));
        }
    }
    crate::out(format_args!("\ndecision: {overall}"));
    Ok(ExitCode::SUCCESS)
}

fn strictest(a: Action, b: Action) -> Action {
    match (a, b) {
        (Action::Deny, _) | (_, Action::Deny) => Action::Deny,
        (Action::Ask, _) | (_, Action::Ask) => Action::Ask,
        _ => Action::Allow,
    }
}
