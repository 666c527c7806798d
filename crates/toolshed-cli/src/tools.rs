//! `toolshed tools`: what a model would see for (agent, model), as JSON or as a provider's
//! exact `tools` payload.

use std::process::ExitCode;

use clap::Args;
use serde_json::{Value, json};
use toolshed_core::registry::View;
use toolshed_core::render::{WireFormat, render};
use toolshed_core::tool::Exposure;

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
    let registry = ws.registry(ws.permission());
    let view = View { agent: &agent, model: ws.model(args.model.as_deref()), found: None };
    let shown: Vec<_> =
        registry.exposed(&view).into_iter().filter(|v| args.all || v.exposure == Exposure::Direct).collect();
    let out = match args.format {
        Format::Json => Value::Array(
            shown
                .iter()
                .map(|v| {
                    let spec = v.entry.spec();
                    let mut item = json!({
                        "name": spec.name,
                        "description": spec.description,
                        "parameters": spec.parameters,
                        "exposure": v.exposure.as_str(),
                        "source": v.entry.source.to_string(),
                        "bytes": spec.definition_bytes(),
                    });
                    if let Some(replaced) = &v.entry.overrides {
                        item["overrides"] = Value::String(replaced.to_string());
                    }
                    item
                })
                .collect(),
        ),
        Format::Wire(format) => {
            let specs: Vec<_> = shown.iter().map(|v| v.entry.spec()).collect();
            render(format, &specs)
        }
    };
    let text = serde_json::to_string_pretty(&out).map_err(CliError::failure)?;
    crate::out(format_args!("{text}"));
    Ok(ExitCode::SUCCESS)
}
