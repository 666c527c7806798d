//! One [`ToolSpec`] rendered into each provider's `tools` payload: OpenAI Chat Completions,
//! OpenAI Responses (function and freeform `custom` tools), Anthropic Messages and MCP
//! `tools/list`. Pure functions.

use std::fmt;
use std::str::FromStr;

use serde_json::{Value, json};

use crate::tool::{GrammarSyntax, ToolSpec};

/// A provider wire format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireFormat {
    /// OpenAI Chat Completions `tools[]`.
    OpenAiChat,
    /// OpenAI Responses `tools[]`.
    OpenAiResponses,
    /// Anthropic Messages `tools[]`.
    Anthropic,
    /// MCP `tools/list` result `tools[]`.
    Mcp,
}

impl WireFormat {
    /// Every format, in the order the CLI lists them.
    pub const ALL: [WireFormat; 4] =
        [WireFormat::OpenAiChat, WireFormat::OpenAiResponses, WireFormat::Anthropic, WireFormat::Mcp];

    /// The format's name on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            WireFormat::OpenAiChat => "openai-chat",
            WireFormat::OpenAiResponses => "openai-responses",
            WireFormat::Anthropic => "anthropic",
            WireFormat::Mcp => "mcp",
        }
    }
}

impl fmt::Display for WireFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for WireFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        WireFormat::ALL.into_iter().find(|f| f.as_str() == s).ok_or_else(|| {
            let names: Vec<&str> = WireFormat::ALL.iter().map(|f| f.as_str()).collect();
            format!("unknown format `{s}`; expected one of: {}", names.join(", "))
        })
    }
}

/// The `tools` array for `format`.
pub fn render(format: WireFormat, tools: &[&ToolSpec]) -> Value {
    Value::Array(tools.iter().map(|t| render_one(format, t)).collect())
}

/// One tool in `format`.
pub fn render_one(format: WireFormat, spec: &ToolSpec) -> Value {
    match format {
        WireFormat::OpenAiChat => openai_chat(spec),
        WireFormat::OpenAiResponses => openai_responses(spec),
        WireFormat::Anthropic => anthropic(spec),
        WireFormat::Mcp => mcp(spec),
    }
}

fn syntax(s: GrammarSyntax) -> &'static str {
    match s {
        GrammarSyntax::Lark => "lark",
        GrammarSyntax::Regex => "regex",
    }
}

/// Chat Completions: `{"type":"function","function":{...}}`, or a `custom` tool whose grammar is
/// nested under `format.grammar`.
pub fn openai_chat(spec: &ToolSpec) -> Value {
    match &spec.freeform {
        Some(g) => json!({
            "type": "custom",
            "custom": {
                "name": spec.name,
                "description": spec.description,
                "format": { "type": "grammar", "grammar": { "syntax": syntax(g.syntax), "definition": g.definition } }
            }
        }),
        None => json!({
            "type": "function",
            "function": { "name": spec.name, "description": spec.description, "parameters": spec.parameters }
        }),
    }
}

/// Responses: flat function tools with `strict: false`, or a flat `custom` tool with the grammar.
pub fn openai_responses(spec: &ToolSpec) -> Value {
    match &spec.freeform {
        Some(g) => json!({
            "type": "custom",
            "name": spec.name,
            "description": spec.description,
            "format": { "type": "grammar", "syntax": syntax(g.syntax), "definition": g.definition }
        }),
        None => json!({
            "type": "function",
            "name": spec.name,
            "description": spec.description,
            "parameters": spec.parameters,
            "strict": false
        }),
    }
}

/// Anthropic: `{name, description, input_schema}`. Anthropic has no freeform tools, so a freeform
/// tool is sent as its JSON fallback (one string field `input`).
pub fn anthropic(spec: &ToolSpec) -> Value {
    json!({ "name": spec.name, "description": spec.description, "input_schema": spec.parameters })
}

/// MCP `tools/list`: `{name, description, inputSchema, annotations}`; freeform tools use the JSON
/// fallback, as MCP has no freeform input.
pub fn mcp(spec: &ToolSpec) -> Value {
    let mut tool = json!({
        "name": spec.name,
        "description": spec.description,
        "inputSchema": spec.parameters,
        "annotations": { "readOnlyHint": spec.flags.read_only }
    });
    // An upstream MCP tool's own fields (title, outputSchema, all its annotations, ...) pass
    // through; name, description and inputSchema stay toolshed's (the qualified name, the
    // normalised schema).
    for (key, value) in &spec.mcp {
        match (key.as_str(), value) {
            ("name" | "description" | "inputSchema", _) => {}
            ("annotations", Value::Object(upstream)) => {
                if let Some(Value::Object(annotations)) = tool.get_mut("annotations") {
                    for (k, v) in upstream {
                        annotations.entry(k.clone()).or_insert_with(|| v.clone());
                    }
                }
            }
            _ => {
                tool[key] = value.clone();
            }
        }
    }
    tool
}

/// Size in bytes of `{name, description, parameters}` as compact JSON.
pub fn definition_bytes(spec: &ToolSpec) -> usize {
    let v = json!({ "name": spec.name, "description": spec.description, "parameters": spec.parameters });
    v.to_string().len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::freeform_parameters;
    use crate::tool::{Grammar, ToolFlags};

    fn read_spec() -> ToolSpec {
        ToolSpec::new(
            "read",
            "Read a file.",
            json!({"type": "object", "properties": {"file_path": {"type": "string", "description": "Path."}}, "required": ["file_path"]}),
        )
        .with_flags(ToolFlags::READ_ONLY)
    }

    fn patch_spec() -> ToolSpec {
        ToolSpec::new("apply_patch", "Apply a patch.", freeform_parameters("The patch."))
            .with_flags(ToolFlags::MUTATING)
            .with_freeform(Grammar {
                syntax: GrammarSyntax::Lark,
                definition: "start: begin_patch hunk+ end_patch".into(),
            })
    }

    #[test]
    fn openai_chat_snapshot() {
        insta::assert_json_snapshot!(render(WireFormat::OpenAiChat, &[&read_spec(), &patch_spec()]));
    }

    #[test]
    fn openai_responses_snapshot() {
        insta::assert_json_snapshot!(render(WireFormat::OpenAiResponses, &[&read_spec(), &patch_spec()]));
    }

    #[test]
    fn anthropic_snapshot() {
        insta::assert_json_snapshot!(render(WireFormat::Anthropic, &[&read_spec(), &patch_spec()]));
    }

    #[test]
    fn mcp_snapshot() {
        insta::assert_json_snapshot!(render(WireFormat::Mcp, &[&read_spec(), &patch_spec()]));
    }

    #[test]
    fn format_names_round_trip_and_unknown_is_explained() {
        for f in WireFormat::ALL {
            assert_eq!(f.as_str().parse::<WireFormat>(), Ok(f));
        }
        let err = "gemini".parse::<WireFormat>().unwrap_err();
        assert!(err.contains("openai-chat, openai-responses, anthropic, mcp"), "{err}");
    }

    #[test]
    fn definition_bytes_counts_compact_json() {
        let spec = ToolSpec::new("t", "d", json!({"type": "object", "properties": {}}));
        assert_eq!(
            definition_bytes(&spec),
            r#"{"name":"t","description":"d","parameters":{"type":"object","properties":{}}}"#.len()
        );
    }
}
