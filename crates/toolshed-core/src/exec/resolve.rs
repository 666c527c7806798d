//! Stage 1, resolve: find the tool by name; an unknown name gets an error naming the closest
//! existing tools, so the model can correct itself.

use crate::registry::{Entry, Registry};
use crate::tool::ToolError;

/// How many names an unknown-tool error suggests, or lists when nothing is similar.
const SUGGESTIONS: usize = 3;
const LISTED: usize = 30;

/// The registered tool called `name`.
pub fn resolve<'a>(registry: &'a Registry, name: &str) -> Result<&'a Entry, ToolError> {
    if let Some(entry) = registry.get(name) {
        return Ok(entry);
    }
    let similar = registry.closest(name, SUGGESTIONS);
    let quoted: Vec<String> = similar.iter().map(|n| format!("\"{n}\"")).collect();
    let message = if quoted.len() == 1 {
        format!("Unknown tool \"{name}\". Did you mean {}?", quoted[0])
    } else if !quoted.is_empty() {
        format!("Unknown tool \"{name}\". Did you mean one of {}?", quoted.join(", "))
    } else if registry.is_empty() {
        format!("Unknown tool \"{name}\". No tools are available.")
    } else {
        let names: Vec<&str> = registry.entries().iter().take(LISTED).map(|e| e.spec().name.as_str()).collect();
        let more = registry.len().saturating_sub(LISTED);
        let more = if more > 0 { format!(" and {more} more") } else { String::new() };
        format!("Unknown tool \"{name}\". Available tools: {}{more}.", names.join(", "))
    };
    Err(ToolError::RespondToModel(message))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::{ToolOutput, tool_fn};

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct NoArgs {}

    fn registry(names: &[&str]) -> Registry {
        let mut r = Registry::new();
        for &n in names {
            r.register_builtin(tool_fn(n.to_string(), "t", |_: NoArgs, _| async { Ok(ToolOutput::text("")) }));
        }
        r
    }

    #[test]
    fn unknown_tool_names_similar_tools() {
        let r = registry(&["read", "grep", "glob", "write"]);
        let err = resolve(&r, "read_file").err().unwrap();
        insta::assert_snapshot!(err.to_string(), @r#"Unknown tool "read_file". Did you mean "read"?"#);
    }

    #[test]
    fn unknown_tool_without_similar_lists_available() {
        let r = registry(&["read", "grep"]);
        let err = resolve(&r, "xyzzy").err().unwrap();
        insta::assert_snapshot!(err.to_string(), @r#"Unknown tool "xyzzy". Available tools: read, grep."#);
    }
}
