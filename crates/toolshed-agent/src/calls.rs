//! How a tool call is named for people, the same in every front-end (the terminal UI's cell
//! header, an editor's tool-call title): what the call works on, and the files it touches.

use serde_json::Value;

/// What a call works on: the command (or, with `describe`, bash's own description of it), the
/// path, the pattern and where, the URL, the query, the task, the files a patch touches.
/// `args` is the call's JSON input; `raw` its input as sent (a freeform tool's patch text).
pub fn subject(tool: &str, args: &Value, raw: &str, describe: bool) -> Option<String> {
    let field = |k: &str| args.get(k).and_then(Value::as_str).map(str::to_string);
    let found = match tool {
        "bash" if describe => field("description").or_else(|| field("command")),
        "bash" => field("command"),
        "read" | "write" | "edit" | "list" => field("file_path").or_else(|| field("path")),
        "grep" | "glob" => field("pattern").map(|p| match field("path") {
            Some(path) => format!("{p} in {path}"),
            None => p,
        }),
        "webfetch" => field("url"),
        "websearch" | "tool_search" => field("query"),
        "task" => field("description"),
        "apply_patch" => Some(files(tool, args, raw).join(", ")),
        _ => None,
    };
    found.filter(|s| !s.trim().is_empty())
}

/// The files a call works on, as the model named them (relative or absolute).
pub fn files(tool: &str, args: &Value, raw: &str) -> Vec<String> {
    let field = |k: &str| args.get(k).and_then(Value::as_str).map(str::to_string);
    match tool {
        "read" | "write" | "edit" | "list" | "lsp" => {
            field("file_path").or_else(|| field("path")).into_iter().collect()
        }
        "grep" | "glob" => field("path").into_iter().collect(),
        "apply_patch" => {
            let patch = field("input").unwrap_or_else(|| raw.to_string());
            patch
                .lines()
                .filter_map(|l| {
                    ["*** Update File: ", "*** Add File: ", "*** Delete File: ", "*** Move to: "]
                        .iter()
                        .find_map(|p| l.strip_prefix(p))
                })
                .map(|p| p.trim().to_string())
                .collect()
        }
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_name_what_the_call_works_on() {
        let bash = serde_json::json!({"command": "cargo test", "description": "run the tests"});
        assert_eq!(subject("bash", &bash, "", false).as_deref(), Some("cargo test"));
        assert_eq!(subject("bash", &bash, "", true).as_deref(), Some("run the tests"));
        let grep = serde_json::json!({"pattern": "fn main", "path": "src"});
        assert_eq!(subject("grep", &grep, "", false).as_deref(), Some("fn main in src"));
        let patch = "*** Begin Patch\n*** Update File: a.rs\n@@\n-x\n+y\n*** Add File: b.rs\n+z\n*** End Patch";
        assert_eq!(subject("apply_patch", &Value::Null, patch, false).as_deref(), Some("a.rs, b.rs"));
        assert_eq!(files("apply_patch", &serde_json::json!({"input": patch}), ""), ["a.rs", "b.rs"]);
        assert_eq!(subject("todo_write", &serde_json::json!({}), "", false), None);
    }
}
