//! `toolshed tools`: what a model would see for (agent, model), as JSON or as a provider's
//! exact `tools` payload; `--check` validates every custom tool instead.

use std::path::Path;
use std::process::ExitCode;

use clap::Args;
use serde_json::{Value, json};
use toolshed_core::registry::Registry;
use toolshed_core::registry::View;
use toolshed_core::render::{WireFormat, render};
use toolshed_core::tool::Exposure;
use toolshed_tools::custom::{Problem, Scope};

use crate::CliError;
use crate::workspace::Workspace;

#[derive(Args)]
pub struct ToolsArgs {
    /// The agent whose permissions apply.
    #[arg(long)]
    agent: Option<String>,
    /// The model id (`provider/model`); picks apply_patch or edit/write by model family.
    #[arg(long)]
    model: Option<String>,
    /// Also list deferred and hidden tools.
    #[arg(long)]
    all: bool,
    /// `json`, or a provider's wire format: openai-chat, openai-responses, anthropic, mcp.
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

#[derive(Clone, Copy)]
enum Format {
    Json,
    Wire(WireFormat),
}

fn parse_format(s: &str) -> Result<Format, String> {
    if s == "json" {
        return Ok(Format::Json);
    }
    s.parse::<WireFormat>().map(Format::Wire).map_err(|_| {
        let wire: Vec<&str> = WireFormat::ALL.iter().map(|f| f.as_str()).collect();
        format!("expected json, {}", wire.join(", "))
    })
}

pub fn run(ws: &Workspace, args: ToolsArgs) -> Result<ExitCode, CliError> {
    let agent = ws.agent(args.agent.as_deref())?;
    if let Some(model) = &args.model {
        toolshed_llm::provider::ModelRef::parse(model).map_err(|e| CliError::usage(format!("--model: {e}")))?;
    }
    let mut registry = ws.registry();
    let _mcp = crate::mcp::attach(ws, &mut registry, crate::mcp::Scope::All)?;
    if args.check {
        return Ok(check(ws, &registry));
    }
    for u in ws.custom.unavailable() {
        eprintln!(
            "toolshed: custom tool `{}` is unavailable: {} ({}); see `toolshed tools --check`",
            u.name,
            u.reason,
            shown(&u.file, &ws.root)
        );
    }
    let view = View { agent: &agent, model: ws.model(args.model.as_deref()), found: None };
    let shown: Vec<_> =
        registry.exposed(&view).into_iter().filter(|v| args.all || v.exposure == Exposure::Direct).collect();
    let out = match args.format {
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
                    if let Some(replaced) = &v.entry.overrides {
                        item["overrides"] = Value::String(replaced.to_string());
                    }
                    if let Some(u) = ws.custom.unavailable().iter().find(|u| {
                        u.name == spec.name && v.entry.source == toolshed_core::registry::Source::Custom(u.file.clone())
                    }) {
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
        crate::out(format_args!("ok  {}  {}{replaces}", spec.name, shown(file, &ws.root)));
    }
    let problems = ws.custom.problems();
    for problem in problems {
        let relative = Problem { file: shown(&problem.file, &ws.root).into(), ..problem.clone() };
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
fn shown(file: &Path, root: &Path) -> String {
    file.strip_prefix(root).unwrap_or(file).display().to_string()
}
