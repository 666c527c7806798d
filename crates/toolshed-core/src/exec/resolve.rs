//! Stage 1, resolve: find the tool by name; an unknown name gets an error naming the closest
//! existing tools, so the model can correct itself.

use crate::registry::{Registry, View, closest_names};
use crate::search::TOOL_SEARCH;
use crate::tool::{Exposure, ToolError};

/// Tools other agents (or earlier toolshed versions) have that toolshed does otherwise: what a
/// model calling one should do instead.
const INSTEAD: &[(&str, &str)] = &[
    ("bash_kill", "To stop a running session, call bash_output with \"stop\": true."),
    ("kill_shell", "To stop a running session, call bash_output with \"stop\": true."),
    ("todo_read", "Your todo list, once it has items, is shown to you in every request."),
];

/// `message`, with what to do instead of calling `name` when that is known.
fn with_instead(message: String, name: &str) -> ToolError {
    match INSTEAD.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)) {
        Some((_, instead)) => ToolError::RespondToModel(format!("{message} {instead}")),
        None => ToolError::RespondToModel(message),
    }
}

/// How many names an unknown-tool error suggests, or lists when nothing is similar.
const SUGGESTIONS: usize = 3;
const LISTED: usize = 30;

/// The error for a call of `name`, which is not registered: it names the closest tools `view`
/// is shown (not those its agent may not use, nor `tool_search` when nothing is deferred).
pub fn unknown(registry: &Registry, name: &str, view: &View<'_>) -> ToolError {
    let exposed = registry.exposed(view);
    let visible: Vec<&str> = exposed.iter().map(|v| v.entry.spec().name.as_str()).collect();
    let similar = closest_names(visible.iter().copied(), name, SUGGESTIONS);
    let quoted: Vec<String> = similar.iter().map(|n| format!("\"{n}\"")).collect();
    let message = if quoted.len() == 1 {
        format!("Unknown tool \"{name}\". Did you mean {}?", quoted[0])
    } else if !quoted.is_empty() {
        format!("Unknown tool \"{name}\". Did you mean one of {}?", quoted.join(", "))
    } else if visible.is_empty() {
        format!("Unknown tool \"{name}\". No tools are available.")
    } else {
        let names: Vec<&str> = visible.iter().take(LISTED).copied().collect();
        let more = visible.len().saturating_sub(LISTED);
        let more = if more > 0 { format!(" and {more} more") } else { String::new() };
        format!("Unknown tool \"{name}\". Available tools: {}{more}.", names.join(", "))
    };
    with_instead(message, name)
}

/// The error for a model's call of `name`, a registered tool it was not sent (`offered`): a tool
/// waiting behind `tool_search` is pointed to it, the other family's edit tool to its own, any
/// other (hidden, not yet needed) is unknown to the model, with the closest of its own tools.
pub fn not_offered(registry: &Registry, name: &str, offered: &[String], view: &View<'_>) -> ToolError {
    let search = offered.iter().any(|n| n == TOOL_SEARCH);
    let deferred =
        registry.exposed(view).iter().any(|v| v.entry.spec().name == name && v.exposure == Exposure::Deferred);
    if deferred && search {
        return ToolError::RespondToModel(format!(
            "The tool \"{name}\" is not loaded yet: find it with {TOOL_SEARCH}, and call it in your next response (a search loads tools for the responses after it)."
        ));
    }
    among(format!("\"{name}\" is not one of your tools."), name, offered)
}

/// The error for a model's call of `name`, which is not registered at all, suggesting only the
/// tools it was sent (`offered`).
pub fn unknown_among(name: &str, offered: &[String]) -> ToolError {
    among(format!("Unknown tool \"{name}\"."), name, offered)
}

/// `message` about a call of `name`, then what to call among `offered`: the model's own edit
/// tool for the other family's, else the closest names and what toolshed does instead.
fn among(message: String, name: &str, offered: &[String]) -> ToolError {
    match other_editor(name, offered) {
        Some(editor) => ToolError::RespondToModel(format!("{message} {editor}")),
        None => with_instead(suggest(message, name, offered), name),
    }
}

/// For a call of one model family's edit tool by a model sent the other's (after a model
/// switch, its history shows the old ones): the tool to use instead.
fn other_editor(name: &str, offered: &[String]) -> Option<&'static str> {
    let has = |n: &str| offered.iter().any(|o| o == n);
    match name {
        "edit" | "write" if has("apply_patch") => Some("Edit and create files with apply_patch."),
        "apply_patch" | "str_replace_based_edit_tool" | "str_replace_editor" if has("edit") && has("write") => {
            Some("Edit files with edit, and write whole files with write.")
        }
        "apply_patch" | "str_replace_based_edit_tool" | "str_replace_editor" if has("edit") => {
            Some("Edit files with edit.")
        }
        _ => None,
    }
}

/// `message`, then the closest of `offered` to `name`, or the advice to call only those.
fn suggest(message: String, name: &str, offered: &[String]) -> String {
    let similar = closest_names(offered.iter().map(String::as_str), name, SUGGESTIONS);
    let quoted: Vec<String> = similar.iter().map(|n| format!("\"{n}\"")).collect();
    match quoted.len() {
        0 => format!("{message} Call only the tools you were given."),
        1 => format!("{message} Did you mean {}?", quoted[0]),
        _ => format!("{message} Did you mean one of {}?", quoted.join(", ")),
    }
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
        let err = unknown(&r, "read_file", &View::default());
        insta::assert_snapshot!(err.to_string(), @r#"Unknown tool "read_file". Did you mean "read"?"#);
    }

    #[test]
    fn tools_the_agent_may_not_use_are_never_suggested() {
        use crate::permission::{Action, Rule, Ruleset};
        let mut r = registry(&["read", "write", "writer_notes"]);
        let rules = Ruleset::new(vec![Rule::new("*", "*", Action::Allow), Rule::new("write", "*", Action::Deny)]);
        r.add_hook(std::sync::Arc::new(crate::registry::PermissionHook(std::sync::Arc::new(rules))));
        let err = unknown(&r, "writ", &View::default());
        insta::assert_snapshot!(err.to_string(), @r#"Unknown tool "writ". Did you mean "writer_notes"?"#);
    }

    #[test]
    fn a_tool_done_otherwise_here_says_what_to_call() {
        let r = registry(&["bash", "bash_output"]);
        let view = View { agent: "build", model: None, found: None };
        let err = unknown(&r, "bash_kill", &view);
        insta::assert_snapshot!(err.to_string(), @r#"Unknown tool "bash_kill". Did you mean "bash"? To stop a running session, call bash_output with "stop": true."#);
    }

    #[test]
    fn a_name_like_no_tool_suggests_none() {
        let r = registry(&["read", "write", "todo_write", "glob"]);
        let err = unknown(&r, "frobnicate", &View::default());
        insta::assert_snapshot!(err.to_string(), @r#"Unknown tool "frobnicate". Available tools: read, write, todo_write, glob."#);
    }

    #[test]
    fn unknown_tool_without_similar_lists_available() {
        let r = registry(&["read", "grep"]);
        let err = unknown(&r, "xyzzy", &View::default());
        insta::assert_snapshot!(err.to_string(), @r#"Unknown tool "xyzzy". Available tools: read, grep."#);
    }
}
