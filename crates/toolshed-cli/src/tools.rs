//! `toolshed tools`: what a model would see for (agent, model), as JSON or as a provider's
//! exact `tools` payload, or for a stored session (`--session`, with what its searches found);
//! `--check` validates every custom tool instead.

use std::collections::HashSet;
use std::path::Path;
use std::process::ExitCode;

use clap::Args;
use serde_json::{Value, json};
use toolshed_agent::store::{SessionInfo, Store, StoreError};
use toolshed_core::registry::Registry;
use toolshed_core::registry::{Source, View, Visible};
use toolshed_core::render::{WireFormat, render};
use toolshed_core::tool::Exposure;
use toolshed_tools::custom::{Problem, Scope, Unavailable};

use crate::CliError;
use crate::workspace::Workspace;

#[derive(Args)]
pub struct ToolsArgs {
    /// The agent whose permissions apply.
    #[arg(short, long)]
    agent: Option<String>,
    /// The model id (`provider/model`); picks apply_patch or edit/write by model family.
    /// Default: the agent's model, else the config's `model`, else anthropic/claude-sonnet-4-5
    /// (edit and write).
    #[arg(short, long)]
    model: Option<String>,
    /// List what this stored session gets: its agent and model (unless -a / -m say otherwise),
    /// and the deferred tools its `tool_search` calls found, shown as `found`.
    #[arg(short, long, value_name = "ID")]
    session: Option<String>,
    /// Also list deferred and hidden tools.
    #[arg(long)]
    all: bool,
    /// `json`, `table` (for people: name, exposure, source, size, description), or a provider's
    /// wire format: openai-chat, openai-responses, anthropic, mcp.
    #[arg(long, default_value = "json", value_name = "FORMAT", value_parser = parse_format)]
    format: Format,
    /// Validate every custom tool (importing OpenCode tool files afresh) and print each problem
    /// with its file and line; exit 1 if there is any.
    #[arg(long)]
    check: bool,
}

impl ToolsArgs {
    /// The custom tools this command needs loaded.
    pub fn scope(&self) -> Scope {
        if self.check { Scope::Fresh } else { Scope::All }
    }
}

pub const EXAMPLES: &str = "Examples:
  toolshed tools --format table                  # for people
  toolshed tools -a plan --all --format table     # plan mode, deferred and hidden tools too
  toolshed tools -m openai/gpt-5.1               # per model family (apply_patch instead of edit/write)
  toolshed tools --format anthropic              # the exact `tools` payload of a request
  toolshed tools -s ses_01J9 --format table       # a session's list, with the tools its searches found
  toolshed tools --check                         # validate the custom tools";

#[derive(Clone, Copy)]
enum Format {
    Json,
    Table,
    Wire(WireFormat),
}

fn parse_format(s: &str) -> Result<Format, String> {
    match s {
        "json" => return Ok(Format::Json),
        "table" => return Ok(Format::Table),
        _ => {}
    }
    s.parse::<WireFormat>().map(Format::Wire).map_err(|_| {
        let wire: Vec<&str> = WireFormat::ALL.iter().map(|f| f.as_str()).collect();
        format!("expected json, table, {}", wire.join(", "))
    })
}

/// The model `tools` lists for when none is given or configured: its family gets edit and
/// write, as every family but OpenAI's GPT models does.
pub const DEFAULT_LISTING_MODEL: &str = "anthropic/claude-sonnet-4-5";

/// What `--session` names: the stored session, the tools its searches found, and whether it
/// started background tasks.
fn stored_session(id: &str) -> Result<(SessionInfo, HashSet<String>, bool), CliError> {
    let path = Store::default_path(&toolshed_core::paths::data_dir());
    if !path.exists() {
        return Err(CliError::usage(format!(
            "--session {id}: no session has been stored yet ({} does not exist)",
            path.display()
        )));
    }
    let store = Store::open(&path).map_err(CliError::failure)?;
    let usage = |e: StoreError| match e {
        StoreError::NoSession(_) => CliError::usage(format!("--session: {e}")),
        other => CliError::failure(other),
    };
    let id = &store.resolve_id(id).map_err(|e| match e {
        e @ (StoreError::NoSession(_) | StoreError::Ambiguous { .. }) => CliError::usage(format!("--session: {e}")),
        other => CliError::failure(other),
    })?;
    let info = store.session(id).map_err(usage)?;
    let found = store.found_tools(id).map_err(usage)?.into_iter().collect();
    let has_tasks = !store.tasks(id).map_err(usage)?.is_empty();
    Ok((info, found, has_tasks))
}

pub fn run(ws: &Workspace, args: ToolsArgs) -> Result<ExitCode, CliError> {
    let stored = args.session.as_deref().map(stored_session).transpose()?;
    if let Some((info, ..)) = &stored {
        crate::agent::in_this_worktree(ws, info)?;
    }
    let agent = ws.agent(args.agent.as_deref().or(stored.as_ref().map(|(info, ..)| info.agent.as_str())))?;
    let mut registry = ws.registry();
    // What `run`, `chat` and `acp` add: sub-agents, background tasks, leaving plan mode.
    for tool in toolshed_agent::tasks::listed_tools() {
        registry.register_arc(tool, Source::Runtime);
    }
    let _mcp = crate::mcp::attach(ws, &mut registry, crate::mcp::Scope::All)?;
    if args.check {
        return Ok(check(ws, &registry));
    }
    for u in ws.custom.unavailable() {
        eprintln!(
            "toolshed: custom tool `{}` is unavailable: {} ({}); see `toolshed tools --check`",
            u.name,
            u.reason,
            shown_path(&u.file, &ws.root)
        );
    }
    // What one model gets, never the union of the families: the flag's model, else the agent's,
    // else the config's, else the documented default.
    let (model, from) = args
        .model
        .clone()
        .map(|m| (m, "--model"))
        .or_else(|| stored.as_ref().and_then(|(info, ..)| info.model.clone()).map(|m| (m, "the session's model")))
        .or_else(|| ws.agents.get(&agent).and_then(|a| a.model.clone()).map(|m| (m, "the agent's `model`")))
        .or_else(|| ws.config.model.clone().map(|m| (m, "the config's `model`")))
        .unwrap_or_else(|| (DEFAULT_LISTING_MODEL.to_string(), "the default"));
    // Checked wherever it came from: a config's `model = "gpt5"` is as wrong as `--model gpt5`.
    let parsed =
        toolshed_llm::provider::ModelRef::parse(&model).map_err(|e| CliError::usage(format!("{from}: {e}")))?;
    toolshed_llm::provider::check(&ws.config, &parsed).map_err(|e| CliError::usage(format!("{from}: {e}")))?;
    let (found, has_tasks) = stored.map(|(_, found, tasks)| (found, tasks)).unwrap_or_default();
    let view = View { agent: &agent, model: Some(&model), found: Some(&found) };
    let shown: Vec<_> = registry
        .exposed(&view)
        .into_iter()
        .filter(|v| {
            args.all || (v.exposure == Exposure::Direct && toolshed_agent::tasks::sent(&v.spec().name, has_tasks))
        })
        .collect();
    // A found tool is sent as a direct one; it is told apart by name. The task follow-ups are
    // direct but sent only once a background task exists; `lsp` is hidden where no language
    // server can serve the worktree.
    let exposure = |v: &Visible<'_>| {
        let name = v.spec().name.as_str();
        match v.exposure {
            Exposure::Direct if found.contains(name) => "found",
            Exposure::Direct if !toolshed_agent::tasks::sent(name, has_tasks) => "after a task",
            Exposure::Hidden if name == "lsp" && v.entry.spec().exposure == Exposure::Direct => "hidden (no server)",
            other => other.as_str(),
        }
    };
    let out = match args.format {
        Format::Table => {
            table(&shown, &exposure, &ws.root, ws.custom.unavailable());
            return Ok(ExitCode::SUCCESS);
        }
        Format::Json => Value::Array(
            shown
                .iter()
                .map(|v| {
                    let spec = v.spec();
                    let mut item = json!({
                        "name": spec.name,
                        "description": spec.description,
                        "parameters": spec.parameters,
                        "exposure": v.exposure.as_str(),
                        "source": v.entry.source.to_string(),
                        "bytes": toolshed_core::render::definition_bytes(spec),
                    });
                    if exposure(v) == "found" {
                        item["found"] = Value::Bool(true);
                    }
                    if !spec.aliases.is_empty() {
                        // Other agents' names taken for parameters; `null`: taken, with no effect.
                        let aliases = spec.aliases.iter().map(|(name, to)| {
                            let to = match to {
                                toolshed_core::tool::Alias::Param(p) => Value::String((*p).to_string()),
                                toolshed_core::tool::Alias::NoEffect => Value::Null,
                            };
                            ((*name).to_string(), to)
                        });
                        item["aliases"] = Value::Object(aliases.collect());
                    }
                    if let Some(replaced) = &v.entry.overrides {
                        item["overrides"] = Value::String(replaced.to_string());
                    }
                    if let Some(u) = unavailable(ws.custom.unavailable(), v) {
                        item["unavailable"] = Value::String(u.reason.clone());
                    }
                    item
                })
                .collect(),
        ),
        Format::Wire(format) => {
            let specs: Vec<_> = shown.iter().map(toolshed_core::registry::Visible::spec).collect();
            render(format, &specs)
        }
    };
    let text = serde_json::to_string_pretty(&out).map_err(CliError::failure)?;
    crate::out(format_args!("{text}"));
    Ok(ExitCode::SUCCESS)
}

/// `toolshed tools --format table`: one row per tool under a header, the description's first
/// sentence cut to one line; unavailable custom tools say so.
fn table(shown: &[Visible<'_>], exposure: &dyn Fn(&Visible<'_>) -> &'static str, root: &Path, missing: &[Unavailable]) {
    let rows: Vec<[String; 5]> = shown
        .iter()
        .map(|v| {
            let spec = v.spec();
            let source = match &v.entry.source {
                Source::Custom(file) => shown_path(file, root),
                other => other.to_string(),
            };
            let description = match unavailable(missing, v) {
                Some(u) => format!("UNAVAILABLE: {}", u.reason),
                None => spec.description.clone(),
            };
            [
                spec.name.clone(),
                exposure(v).to_string(),
                source,
                toolshed_core::render::definition_bytes(spec).to_string(),
                summary(&description, 72),
            ]
        })
        .collect();
    let header = ["TOOL", "EXPOSURE", "SOURCE", "BYTES", "DESCRIPTION"].map(String::from);
    let mut widths = [0; 4];
    for row in std::iter::once(&header).chain(&rows) {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    for row in std::iter::once(&header).chain(&rows) {
        let [name, exposure, source, bytes, description] = row;
        crate::out(format_args!(
            "{name:<w0$}  {exposure:<w1$}  {source:<w2$}  {bytes:>w3$}  {description}",
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2],
            w3 = widths[3]
        ));
    }
    if shown.is_empty() {
        crate::err("no tools: this agent's rules deny every tool (`toolshed permission explain` shows why)");
    }
}

/// The custom tool `v` stands in for, if it is unavailable.
fn unavailable<'u>(missing: &'u [Unavailable], v: &Visible<'_>) -> Option<&'u Unavailable> {
    missing.iter().find(|u| u.name == v.spec().name && v.entry.source == Source::Custom(u.file.clone()))
}

/// The first sentence of `text` on one line, cut to `max` characters.
fn summary(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let first = match flat.find(". ") {
        Some(end) => &flat[..=end],
        None => flat.as_str(),
    };
    if first.chars().count() <= max {
        return first.to_string();
    }
    let cut: String = first.chars().take(max - 1).collect();
    format!("{}…", cut.trim_end())
}

/// `toolshed tools --check`: one line per working custom tool, then each problem as
/// `file:line: message`; exit 1 if there is any problem.
fn check(ws: &Workspace, registry: &Registry) -> ExitCode {
    let mut working = 0;
    for (spec, file) in ws.custom.tools() {
        working += 1;
        // Several files may declare one name: the one registered replaces what came before,
        // the others are not used.
        let replaces = match registry.get(&spec.name) {
            Some(e) if e.source == toolshed_core::registry::Source::Custom(file.to_path_buf()) => {
                e.overrides.as_ref().map(|old| format!(" (replaces {old})")).unwrap_or_default()
            }
            Some(e) => format!(" (not used: {} takes its place)", e.source),
            None => String::new(),
        };
        crate::out(format_args!("ok  {}  {}{replaces}", spec.name, shown_path(file, &ws.root)));
    }
    let problems = ws.custom.problems();
    for problem in problems {
        let relative = Problem { file: shown_path(&problem.file, &ws.root).into(), ..problem.clone() };
        crate::out(format_args!("{relative}"));
    }
    crate::out(format_args!(
        "{working} custom tool{} ok, {} problem{}",
        if working == 1 { "" } else { "s" },
        problems.len(),
        if problems.len() == 1 { "" } else { "s" }
    ));
    if problems.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) }
}

/// `file` relative to the worktree when it lies inside it.
fn shown_path(file: &Path, root: &Path) -> String {
    file.strip_prefix(root).unwrap_or(file).display().to_string()
}
