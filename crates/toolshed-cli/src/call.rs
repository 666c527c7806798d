//! `toolshed call`: one tool call through the full chain, as a model would make it.

use std::io::Read;
use std::process::ExitCode;

use clap::Args;
use toolshed_agent::store::new_id;
use toolshed_core::exec::{Session, Stage, ToolCall};
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
    #[arg(short, long)]
    agent: Option<String>,
    /// Record the call in this stored session (default: an in-memory session of its own).
    #[arg(short, long, value_name = "ID")]
    session: Option<String>,
    /// Approve every permission request that asks (never one that denies).
    #[arg(short, long)]
    yes: bool,
    /// Print the result as one JSON object.
    #[arg(long)]
    json: bool,
}

pub const EXAMPLES: &str = "Examples:
  toolshed call read '{\"file_path\": \"src/main.rs\", \"offset\": 40, \"limit\": 20}'
  echo '{\"pattern\": \"TODO\", \"include\": \"*.rs\"}' | toolshed call grep -
  toolshed call bash '{\"command\": \"cargo test -q\"}' -y
  toolshed call apply_patch - < change.patch          # a freeform tool takes raw text
  toolshed call edit '{...}' -a plan --json             # as the plan agent, result as JSON";

impl CallArgs {
    /// The custom tools this call needs loaded.
    pub fn scope(&self) -> Scope {
        Scope::Tool(self.tool.clone())
    }
}

pub fn run(ws: &Workspace, args: CallArgs) -> Result<ExitCode, CliError> {
    // The database is opened only for --session: a plain call starts nothing it does not need.
    let stored = match &args.session {
        Some(given) => {
            let id = crate::agent::resolve_session(given)?;
            let store = crate::agent::open_store()?;
            let info = store.session(&id).map_err(CliError::usage)?;
            crate::agent::in_this_worktree(ws, &info)?;
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
    // The runtime's own tools (sub-agents, background tasks, leaving plan mode) act on an agent's
    // turn, which a single call does not have.
    if toolshed_agent::tasks::listed_tools().iter().any(|t| t.spec().name == args.tool) {
        return Err(CliError::usage(format!(
            "`{}` is one of the agent runtime's own tools: it runs only inside `toolshed run`, `chat` and `acp`, where a model's turn is going on; `toolshed call` cannot run it",
            args.tool
        )));
    }
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
        let given = if args.args.as_deref() == Some("-") { "the JSON on standard input" } else { "ARGS_JSON" };
        crate::err(format_args!("{}", for_person(result.refused_at, &result.tool, &result.output, given)));
        if result.tool == "bash_output" && result.refused_at.is_none() {
            // A process of its own can hold no shell session for bash_output to find.
            crate::err(format_args!("{NO_SESSIONS_HERE}"));
        }
    } else {
        crate::out(format_args!("{}", result.output));
    }
    // Language servers a write or the lsp tool started get `shutdown` and `exit` (nothing to do
    // when none started).
    runtime.block_on(toolshed_tools::lsp::shared(&ws.config).shutdown());
    // A command that failed is no error of the tool's (the model reads its exit code), but a
    // script running `toolshed call bash` needs to see it.
    let failed_command = result.metadata.get("exit_code").and_then(serde_json::Value::as_i64).is_some_and(|c| c != 0)
        || ["signal", "timed_out", "interrupted", "session_id"]
            .iter()
            .any(|k| result.metadata.get(*k).is_some_and(|v| !v.is_null() && *v != serde_json::Value::Bool(false)));
    Ok(if result.is_error || failed_command { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// Why `toolshed call bash_output` never finds a session, for the person who typed it.
const NO_SESSIONS_HERE: &str = "Each `toolshed call` is a process of its own, and a shell session that `toolshed call bash` started stops when that call ends, so there is never one to read here. Run long commands in `toolshed chat`, `toolshed run` or `toolshed mcp serve`, where bash and bash_output share the sessions.";

/// A failed call's message for the person who typed the command. The chain's refusals end
/// with what the model should do next ("Fix the arguments and call read again"); here the
/// facts stay and the next step is one a person can take. A tool's own error is shown as is.
/// `given` names where the arguments came from ("ARGS_JSON").
pub fn for_person(refused_at: Option<Stage>, tool: &str, output: &str, given: &str) -> String {
    let output = output.trim_end();
    match refused_at {
        Some(Stage::Resolve) => {
            // toolshed's own tools that appear only once something is set up.
            let why = match tool {
                "websearch" => {
                    Some("websearch is listed only with a search provider set up ([websearch] in the config)")
                }
                "skill" => Some("skill is listed only when there are skills to load"),
                "lsp" => Some("lsp is listed only when a language server for the worktree's languages is found"),
                "tool_search" => Some("tool_search is listed only while some tools are deferred"),
                _ => None,
            };
            match why {
                Some(why) => format!("{output}\n{why}; `toolshed doctor` says what is missing."),
                None => format!("{output}\n`toolshed tools --all --format table` lists the tools you can call."),
            }
        }
        Some(Stage::Decode) => {
            let problems: Vec<&str> = output.lines().filter(|l| l.starts_with("- ")).collect();
            let what = if problems.is_empty() {
                // One sentence: what is wrong with the text (not JSON, not an object).
                first_sentence(output).to_string()
            } else {
                format!("The arguments for {tool} are not valid:\n{}", problems.join("\n"))
            };
            format!(
                "{what}\nCorrect {given} and run the command again; `toolshed tools --all` shows {tool}'s parameters."
            )
        }
        Some(Stage::Permit) => refused(tool, output, "Nothing was run."),
        // A question the tool asked while it ran, refused: it had started.
        None if output.contains(toolshed_core::exec::permit::STOPPED) => {
            refused(tool, output, "The tool stopped there; what it did before asking was done.")
        }
        None => output.to_string(),
    }
}

/// A refused permission request for a person: its facts, `outcome`, and what they can do.
fn refused(tool: &str, output: &str, outcome: &str) -> String {
    let facts = toolshed_core::exec::permit::refusal_facts(output);
    let facts = facts.replace(toolshed_core::permission::NO_APPROVER, "no one could be asked (no terminal)");
    // `--yes` never grants these: a rule or a person's answer does.
    let person_only = asked_permission(output).filter(|p| toolshed_core::permission::PERSON_ONLY.contains(&p.0));
    if let Some((permission, pattern)) = person_only
        && (output.contains(toolshed_core::permission::NO_APPROVER)
            || output.contains("never granted by a blanket approval"))
    {
        let why = if output.contains(toolshed_core::permission::NO_APPROVER) {
            format!("no one could be asked (no terminal), and --yes would not approve `{permission}` either")
        } else {
            format!("--yes never approves `{permission}`")
        };
        return format!(
            "Permission for `{permission}` on `{pattern}` was not granted: {why}. {outcome}\nRun it at a terminal to answer the question yourself, or allow it with a rule in toolshed.toml: [permission] {permission} = {{ \"{pattern}\" = \"allow\" }}"
        );
    }
    let next = if output.starts_with("Permission denied") || output.contains("Permission denied:") {
        format!(
            "`toolshed permission explain {tool} ARGS_JSON` shows the rule that decides; change it in toolshed.toml (or run as another agent with -a) to allow this."
        )
    } else if output.contains(toolshed_core::permission::NO_APPROVER) {
        "Run it at a terminal to answer the question, add --yes to approve what asks (never what the rules deny), or allow it in toolshed.toml.".to_string()
    } else {
        String::new()
    };
    format!("{facts} {outcome}\n{next}").trim_end().to_string()
}

/// The permission and pattern of a refusal ("Permission for `P` on `PATTERN` was not granted").
fn asked_permission(output: &str) -> Option<(&str, &str)> {
    let rest = output.strip_prefix("Permission for `")?;
    let (permission, rest) = rest.split_once("` on `")?;
    let (pattern, _) = rest.split_once("` was not granted")?;
    Some((permission, pattern))
}

/// `text` up to the end of its first sentence.
fn first_sentence(text: &str) -> &str {
    match text.find(". ") {
        Some(end) => &text[..=end],
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_is_told_to_a_person_as_what_ran_and_what_they_can_do() {
        let no_one = toolshed_core::permission::NO_APPROVER;
        let before = format!("Permission for `read` on `.env` was not granted: {no_one}. The call was not run.");
        let said = for_person(Some(Stage::Permit), "read", &before, "ARGS_JSON");
        assert!(said.contains("no one could be asked (no terminal). Nothing was run."), "{said}");
        assert!(said.contains("add --yes"), "{said}");
        let during = format!(
            "Permission for `deploy` on `prod` was not granted: {no_one}. The tool stopped at this request (what it did before asking was done)."
        );
        let said = for_person(None, "asker", &during, "ARGS_JSON");
        assert!(said.contains("The tool stopped there; what it did before asking was done."), "{said}");
        assert!(!said.contains("Nothing was run") && !said.contains("rerun with --yes"), "{said}");
        assert_eq!(for_person(None, "read", "No such file.", "ARGS_JSON"), "No such file.");
    }
}
