//! Stage 2, decode: turn what the model sent into arguments that satisfy the tool's schema.
//!
//! Raw argument strings are parsed; a freeform tool's raw text becomes `{"input": text}`,
//! unless it is a JSON object (the arguments) or a JSON string (the input).
//! Schema violations are all reported at once, each naming the field (as `a.b[0].c`), what
//! was expected and what was sent.

use serde_json::{Map, Value, json};

use super::CallInput;
use crate::registry::{Entry, Source};
use crate::tool::{Alias, ToolError};
use jsonschema::error::{TypeKind, ValidationErrorKind};

/// Parses and validates `input` for the tool of `entry`.
pub fn decode(entry: &Entry, input: &CallInput) -> Result<Value, ToolError> {
    let spec = entry.spec();
    let name = &spec.name;
    let args = match (spec.freeform.is_some(), input) {
        (true, CallInput::Raw(text)) => match serde_json::from_str::<Value>(text) {
            // A JSON object is the arguments (and checked as such: `{"patch": ...}` is told
            // what the parameter is called); a JSON string is the input; anything else is the
            // input itself (a patch never starts with `{` or `"`).
            Ok(Value::Object(obj)) => Value::Object(obj),
            Ok(Value::String(input)) => json!({ "input": input }),
            _ => json!({ "input": text }),
        },
        (true, CallInput::Json(Value::String(text))) => json!({ "input": text }),
        (_, CallInput::Json(value)) => value.clone(),
        (false, CallInput::Raw(text)) if text.trim().is_empty() => Value::Object(Map::new()),
        (false, CallInput::Raw(text)) => serde_json::from_str(text).map_err(|e| {
            ToolError::model(format!(
                "The arguments for {name} are not valid JSON ({e}). Send one JSON object that matches the tool's parameters."
            ))
        })?,
    };
    if !args.is_object() {
        return Err(ToolError::model(format!(
            "The arguments for {name} must be a JSON object, not {}. Send an object that matches the tool's parameters.",
            describe_type(&args)
        )));
    }
    // Only toolshed's own schemas were written without `null`; another's (an MCP server's, a
    // custom tool's) says what it takes, and a `null` it does not take may mean "clear this".
    // toolshed's own tools refuse unknown parameters; a parameter's name in another case
    // convention (`replaceAll`, `filePath`, as other agents' tools spell them) is the same word
    // and is taken as it, and so is another agent's name for it that the tool lists.
    let mut problems = Vec::new();
    let mut renamed = Renamed::default();
    let args = match entry.source {
        Source::Builtin | Source::Runtime => {
            let mut args = args;
            renamed = canonical_names(&spec.parameters, spec.aliases, &mut args);
            for (name, param, other) in &renamed.conflicts {
                if let Some(obj) = args.as_object_mut() {
                    obj.remove(name);
                }
                problems.push(if other == param {
                    format!("`{name}` stands for `{param}`, which was also given, with another value; send `{param}` once")
                } else {
                    format!(
                        "`{other}` and `{name}` both stand for `{param}` here, with different values; send `{param}` once"
                    )
                });
            }
            without_null_optionals(&spec.parameters, args)
        }
        _ => args,
    };
    // A broken definition is the tool's fault, not the model's and not the run's: the call
    // fails, the session goes on.
    let validator = entry.validator().map_err(|e| {
        ToolError::model(format!(
            "The tool {name} cannot be called: {e}. This is a fault in the tool's definition, not in your arguments: use another tool, or tell the user."
        ))
    })?;
    // A parameter the model sent under another name is named as it sent it too.
    problems.extend(validator.iter_errors(&args).map(|e| {
        let mut text = problem(&spec.parameters, &e);
        if let Some((param, name)) = renamed.from.iter().find(|(p, _)| text.starts_with(&format!("`{p}`"))) {
            text.insert_str(param.len() + 2, &format!(" (sent as `{name}`)"));
        }
        text
    }));
    if problems.is_empty() {
        let mut args = args;
        whole_numbers_as_integers(&mut args);
        return Ok(args);
    }
    let mut message = format!("Invalid arguments for {name}:\n");
    for p in &problems {
        message.push_str("- ");
        message.push_str(p);
        message.push('\n');
    }
    message.push_str(&format!("Fix the arguments and call {name} again."));
    Err(ToolError::RespondToModel(message))
}

/// Takes a `null` sent for an optional parameter whose schema does not take `null` as "not
/// given", at any depth (a todo's optional field as much as a top-level parameter): models often
/// send `null` for what they leave out, and the schemas the model sees do not list `null` for
/// optional parameters (see [`crate::schema::slim_optional`]).
fn without_null_optionals(schema: &Value, mut args: Value) -> Value {
    drop_null_optionals(schema, schema, &mut args, 0);
    args
}

/// What [`canonical_names`] did.
#[derive(Default)]
struct Renamed {
    /// (parameter, the name it was sent under).
    from: Vec<(String, String)>,
    /// (name, the parameter it stands for, the name that parameter's other value came under):
    /// left in the arguments, for the caller to refuse.
    conflicts: Vec<(String, String, String)>,
    /// Whether the arguments changed.
    changed: bool,
}

/// Renames each top-level argument the schema does not list to the parameter it stands for:
/// one of the tool's [`aliases`](crate::tool::ToolSpec::aliases) (another agent's name for it,
/// in any case convention if it is a word rather than a flag like `-A`), or the one parameter
/// whose name is the same word in another case convention (`replaceAll` or `Replace-All` for
/// `replace_all`). A `null` under such a name is "not given", and so is a flag that changes
/// nothing here. If the parameter was given too, the two must agree (then the extra name is
/// dropped); if they do not, the extra name is left and reported. Anything else is left for
/// validation to refuse.
fn canonical_names(schema: &Value, aliases: &[(&str, Alias)], args: &mut Value) -> Renamed {
    let mut renamed = Renamed::default();
    let (Some(obj), Some(props)) = (args.as_object_mut(), schema.get("properties").and_then(Value::as_object)) else {
        return renamed;
    };
    let word = |name: &str| -> String {
        name.chars().filter(|c| *c != '_' && *c != '-').flat_map(char::to_lowercase).collect()
    };
    let alias_of = |key: &str| {
        aliases
            .iter()
            .find(|(alias, _)| *alias == key || !alias.starts_with('-') && word(alias) == word(key))
            .map(|(_, to)| *to)
    };
    let unknown: Vec<String> = obj.keys().filter(|k| !props.contains_key(*k)).cloned().collect();
    for key in unknown {
        let Some(value) = obj.get(&key) else { continue };
        let canonical = match alias_of(&key) {
            Some(Alias::NoEffect) => {
                if value.is_boolean() || value.is_null() {
                    obj.remove(&key);
                    renamed.changed = true;
                }
                continue;
            }
            Some(Alias::Param(param)) => props.get_key_value(param).map(|(name, _)| name),
            None => {
                let mut same = props.keys().filter(|p| word(p) == word(&key));
                match (same.next(), same.next()) {
                    (Some(canonical), None) => Some(canonical),
                    _ => None,
                }
            }
        };
        let Some(canonical) = canonical else { continue };
        let given = obj.get(canonical).filter(|v| !v.is_null());
        if given.is_some_and(|given| given != value) && !value.is_null() {
            let other = renamed.from.iter().find(|(p, _)| p == canonical).map_or(canonical, |(_, name)| name);
            renamed.conflicts.push((key.clone(), canonical.clone(), other.clone()));
            continue;
        }
        // Said once more, or not given at all (`null`): the other name goes; else it moves.
        let moves = given.is_none() && !value.is_null();
        if let Some(value) = obj.remove(&key)
            && moves
        {
            obj.insert(canonical.clone(), value);
            renamed.from.push((canonical.clone(), key.clone()));
        }
        renamed.changed = true;
    }
    renamed
}

/// A built-in tool's arguments as the model sent them (`raw`, a JSON object) under the tool's
/// own parameter names, if any name was another's (see [`canonical_names`]) and the call will
/// pass decoding; `None` otherwise. What the session records, shows and runs, so a summary, a
/// screen or an editor that looks for `file_path` or `command` finds it whatever the model
/// called it. A call that will be refused is left as sent, so the refusal speaks of the names
/// the model used (`` `-A` and `-B` both stand for `context` ``, `(sent as `-i`)`).
pub fn canonical_arguments(entry: &Entry, raw: &str) -> Option<String> {
    let spec = entry.spec();
    // A freeform tool's input is recorded as the model wrote it (the provider replays it so).
    if !matches!(entry.source, Source::Builtin | Source::Runtime) || spec.freeform.is_some() {
        return None;
    }
    let mut args: Value = serde_json::from_str(raw).ok()?;
    let renamed = canonical_names(&spec.parameters, spec.aliases, &mut args);
    if !renamed.changed || !renamed.conflicts.is_empty() {
        return None;
    }
    let checked = without_null_optionals(&spec.parameters, args.clone());
    entry.validator().ok()?.is_valid(&checked).then(|| args.to_string())
}

/// How deep [`drop_null_optionals`] follows nested objects and arrays (and `$ref`s, which may
/// be cyclic).
const NULL_DEPTH: usize = 16;

fn drop_null_optionals(root: &Value, schema: &Value, value: &mut Value, depth: usize) {
    if depth > NULL_DEPTH {
        return;
    }
    let schema = resolve_ref(root, schema);
    match value {
        Value::Object(obj) => {
            let Some(props) = schema.get("properties").and_then(Value::as_object) else { return };
            let required = schema.get("required").and_then(Value::as_array);
            let is_required = |name: &str| required.is_some_and(|r| r.iter().any(|n| n == name));
            obj.retain(|name, value| {
                !(value.is_null()
                    && !is_required(name)
                    && props.get(name).is_some_and(|p| !crate::schema::admits_null(resolve_ref(root, p))))
            });
            for (name, value) in obj.iter_mut() {
                if let Some(prop) = props.get(name) {
                    drop_null_optionals(root, prop, value, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = schema.get("items").filter(|i| i.is_object()) {
                for value in items {
                    drop_null_optionals(root, item, value, depth + 1);
                }
            }
        }
        _ => {}
    }
}

/// The schema a local `$ref` (`#/$defs/Name`, `#/definitions/Name`) points at, else `schema`.
fn resolve_ref<'a>(root: &'a Value, schema: &'a Value) -> &'a Value {
    schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix('#'))
        .and_then(|pointer| root.pointer(pointer))
        .unwrap_or(schema)
}

/// Turns numbers like `1000.0` or `1e3`, which JSON Schema counts as integers, into JSON
/// integers, so typed arguments decode them as the schema promised.
fn whole_numbers_as_integers(value: &mut Value) {
    match value {
        Value::Number(n) if !n.is_i64() && !n.is_u64() => {
            if let Some(f) = n.as_f64().filter(|f| f.fract() == 0.0) {
                if f >= 0.0 && f < u64::MAX as f64 {
                    *value = Value::from(f as u64);
                } else if f < 0.0 && f >= i64::MIN as f64 {
                    *value = Value::from(f as i64);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(whole_numbers_as_integers),
        Value::Object(map) => map.values_mut().for_each(whole_numbers_as_integers),
        _ => {}
    }
}

/// A stable identity of a call, for spotting identical consecutive calls: a hash of the tool
/// name and the input as sent (raw text is hashed as it came, never re-serialised, so a
/// megabyte patch costs one pass over its bytes).
pub fn fingerprint(tool: &str, input: &CallInput) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    tool.hash(&mut h);
    match input {
        CallInput::Raw(text) => text.hash(&mut h),
        CallInput::Json(value) => value.to_string().hash(&mut h),
    }
    h.finish()
}

/// One validation error as a line for the model.
fn problem(schema: &Value, err: &jsonschema::ValidationError<'_>) -> String {
    let at = field_path(err.instance_path().as_str());
    let sent = preview(err.instance());
    match err.kind() {
        ValidationErrorKind::Required { property } => {
            let prop = property.as_str().unwrap_or_default();
            let field = if at.is_empty() { prop.to_string() } else { format!("{at}.{prop}") };
            let parent = err.schema_path().as_str().strip_suffix("/required").unwrap_or_default();
            let about = schema.pointer(parent).and_then(|s| s.get("properties")).and_then(|p| p.get(prop));
            match about.map(describe_property) {
                Some(about) if !about.is_empty() => format!("missing required parameter `{field}` ({about})"),
                _ => format!("missing required parameter `{field}`"),
            }
        }
        ValidationErrorKind::Type { kind } => {
            let expected = match kind {
                TypeKind::Single(t) => article(&t.to_string()),
                TypeKind::Multiple(set) => set.iter().map(|t| article(&t.to_string())).collect::<Vec<_>>().join(" or "),
            };
            format!("`{}` must be {expected}, but got {} {sent}", display(&at), describe_type(err.instance()))
        }
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            let names: Vec<String> = unexpected.iter().map(|u| format!("`{u}`")).collect();
            let parent = err.schema_path().as_str().strip_suffix("/additionalProperties").unwrap_or_default();
            let allowed: Vec<String> = schema
                .pointer(parent)
                .and_then(|s| s.get("properties"))
                .and_then(Value::as_object)
                .map(|p| p.keys().map(|k| format!("`{k}`")).collect())
                .unwrap_or_default();
            let place = if at.is_empty() { String::new() } else { format!(" in `{at}`") };
            if allowed.is_empty() {
                let what = if at.is_empty() { "this tool takes no parameters" } else { "it takes no fields" };
                return format!("unknown parameter {}{place}; {what}: send {{}}", names.join(", "));
            }
            format!("unknown parameter {}{place}; the parameters are {}", names.join(", "), allowed.join(", "))
        }
        ValidationErrorKind::OneOfNotValid { .. } | ValidationErrorKind::AnyOf { .. } => {
            // Enums whose values carry descriptions are a `oneOf` of constants: name the values.
            let branches = schema.pointer(err.schema_path().as_str()).and_then(Value::as_array);
            let values: Option<Vec<String>> = branches.map(|b| {
                b.iter()
                    .flat_map(|branch| match (branch.get("const"), branch.get("enum").and_then(Value::as_array)) {
                        (Some(c), _) => vec![c.to_string()],
                        (None, Some(options)) => options.iter().map(Value::to_string).collect(),
                        (None, None) => vec![String::new()],
                    })
                    .collect()
            });
            match values {
                Some(values) if !values.is_empty() && values.iter().all(|v| !v.is_empty()) => {
                    format!("`{}` must be one of {}, but got {sent}", display(&at), values.join(", "))
                }
                _ => format!("`{}` matches none of the allowed forms (got {sent})", display(&at)),
            }
        }
        ValidationErrorKind::Minimum { limit } => {
            format!("`{}` must be at least {limit}, but got {sent}", display(&at))
        }
        ValidationErrorKind::Maximum { limit } => {
            format!("`{}` must be at most {limit}, but got {sent}", display(&at))
        }
        ValidationErrorKind::Enum { options } => {
            format!("`{}` must be one of {}, but got {sent}", display(&at), options)
        }
        ValidationErrorKind::Constant { expected_value } => {
            format!("`{}` must be {expected_value}, but got {sent}", display(&at))
        }
        _ => format!("`{}`: {err} (got {sent})", display(&at)),
    }
}

fn display(at: &str) -> &str {
    if at.is_empty() { "(arguments)" } else { at }
}

/// `/edits/0/old_string` → `edits[0].old_string`.
fn field_path(pointer: &str) -> String {
    let mut out = String::new();
    for seg in pointer.split('/').skip(1) {
        let seg = seg.replace("~1", "/").replace("~0", "~");
        if !seg.is_empty() && seg.bytes().all(|b| b.is_ascii_digit()) {
            out.push_str(&format!("[{seg}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&seg);
        }
    }
    out
}

fn article(t: &str) -> String {
    match t {
        "integer" | "array" | "object" => format!("an {t}"),
        "null" => "null".to_string(),
        _ => format!("a {t}"),
    }
}

fn describe_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "an integer",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn describe_property(schema: &Value) -> String {
    let ty = match schema.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" or "),
        _ => String::new(),
    };
    let desc = schema.get("description").and_then(Value::as_str).unwrap_or_default();
    let desc = desc.lines().next().unwrap_or_default();
    match (ty.is_empty(), desc.is_empty()) {
        (false, false) => format!("{ty}: {desc}"),
        (false, true) => ty,
        (true, false) => desc.to_string(),
        (true, true) => String::new(),
    }
}

/// A short rendering of a sent value.
fn preview(v: &Value) -> String {
    const MAX: usize = 60;
    let text = v.to_string();
    if text.len() <= MAX {
        return text;
    }
    let mut end = MAX;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;
    use crate::tool::{Grammar, GrammarSyntax, ToolOutput, ToolSpec, tool_fn};
    use serde::Deserialize;

    #[allow(dead_code)]
    #[derive(Deserialize, schemars::JsonSchema)]
    struct Edit {
        /// Text to find.
        old_string: String,
        /// Replacement.
        new_string: String,
    }

    #[allow(dead_code)]
    #[derive(Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Args {
        /// The file to edit, relative to the worktree.
        file_path: String,
        /// 1-based line to start at.
        offset: Option<u32>,
        /// The edits.
        #[serde(default)]
        edits: Vec<Edit>,
    }

    fn entry() -> Registry {
        let mut r = Registry::new();
        r.register_builtin(tool_fn("edit", "Edit.", |_: Args, _| async { Ok(ToolOutput::text("")) }));
        r
    }

    fn err(input: CallInput) -> String {
        let r = entry();
        decode(r.get("edit").unwrap(), &input).unwrap_err().to_string()
    }

    #[test]
    fn missing_required_names_the_field_its_type_and_purpose() {
        insta::assert_snapshot!(err(CallInput::Json(json!({}))), @r"
        Invalid arguments for edit:
        - missing required parameter `file_path` (string: The file to edit, relative to the worktree.)
        Fix the arguments and call edit again.
        ");
    }

    #[test]
    fn wrong_types_name_path_expected_and_sent() {
        let input = json!({"file_path": 7, "offset": "ten", "edits": [{"old_string": "a", "new_string": false}]});
        insta::assert_snapshot!(err(CallInput::Json(input)), @r#"
        Invalid arguments for edit:
        - `file_path` must be a string, but got an integer 7
        - `offset` must be an integer, but got a string "ten"
        - `edits[0].new_string` must be a string, but got a boolean false
        Fix the arguments and call edit again.
        "#);
    }

    #[test]
    fn unknown_parameters_list_the_real_ones() {
        insta::assert_snapshot!(err(CallInput::Json(json!({"file_path": "a", "path": "b"}))), @r"
        Invalid arguments for edit:
        - unknown parameter `path`; the parameters are `file_path`, `offset`, `edits`
        Fix the arguments and call edit again.
        ");
    }

    /// A tool that is only its spec (its schema as given).
    struct Spec(ToolSpec);
    impl crate::tool::Tool for Spec {
        fn spec(&self) -> &ToolSpec {
            &self.0
        }
        fn prepare(&self, _: Value) -> Result<Box<dyn crate::tool::Invocation + '_>, ToolError> {
            Err(ToolError::model("unused"))
        }
    }

    #[test]
    fn null_for_an_optional_parameter_means_not_given() {
        let r = entry();
        let e = r.get("edit").unwrap();
        let args = decode(e, &CallInput::Json(json!({"file_path": "x", "offset": null}))).unwrap();
        assert_eq!(args, json!({"file_path": "x"}));
        // A required parameter's null is still an error.
        let msg = err(CallInput::Json(json!({"file_path": null})));
        assert!(msg.contains("`file_path` must be a string, but got null"), "{msg}");
        // Another's schema says what it takes: an MCP tool's optional string is not given null.
        let mut r = Registry::new();
        let schema = json!({"type": "object", "properties": {"id": {"type": "integer"}, "assignee": {"type": "string"}}, "required": ["id"]});
        r.register(Spec(ToolSpec::new("assign", "Assign.", schema)), Source::Mcp("tracker".into()));
        let msg = decode(r.get("assign").unwrap(), &CallInput::Json(json!({"id": 5, "assignee": null})))
            .unwrap_err()
            .to_string();
        assert!(msg.contains("`assignee` must be a string, but got null"), "{msg}");
    }

    #[test]
    fn null_for_a_nested_optional_field_means_not_given() {
        // An item's optional field, through `items` and a `$ref`, as schemars writes a list of
        // structs; a nested required field's null is still an error, and so is one its schema
        // takes (kept for the tool to see).
        let schema = json!({
            "type": "object",
            "properties": {
                "todos": {"type": "array", "items": {"$ref": "#/$defs/Todo"}},
                "meta": {"type": "object", "properties": {"note": {"type": "string"}, "clear": {"type": ["string", "null"]}}},
            },
            "required": ["todos"],
            "$defs": {"Todo": {"type": "object", "properties": {
                "content": {"type": "string"}, "priority": {"type": "string"}}, "required": ["content"]}},
        });
        let mut r = Registry::new();
        r.register(Spec(ToolSpec::new("plan", "Plan.", schema)), Source::Builtin);
        let e = r.get("plan").unwrap();
        let sent = json!({"todos": [{"content": "a", "priority": null}], "meta": {"note": null, "clear": null}});
        let args = decode(e, &CallInput::Json(sent)).unwrap();
        assert_eq!(args, json!({"todos": [{"content": "a"}], "meta": {"clear": null}}));
        let msg = decode(e, &CallInput::Json(json!({"todos": [{"content": null}]}))).unwrap_err().to_string();
        assert!(msg.contains("`todos[0].content` must be a string, but got null"), "{msg}");
    }

    #[test]
    fn a_built_in_tool_refuses_unknown_parameters_its_schema_does_not_mention() {
        // The schema a model sees does not say `additionalProperties: false`; a built-in tool
        // refuses other parameters anyway, and an MCP tool with the same schema does not.
        let schema = json!({"type": "object", "properties": {"file_path": {"type": "string"}, "replace_all": {"type": "boolean"}}, "required": ["file_path"]});
        let mut r = Registry::new();
        r.register(Spec(ToolSpec::new("mine", "Mine.", schema.clone())), Source::Builtin);
        r.register(Spec(ToolSpec::new("theirs", "Theirs.", schema)), Source::Mcp("s".into()));
        let sent = json!({"file_path": "a", "all": true});
        let msg = decode(r.get("mine").unwrap(), &CallInput::Json(sent.clone())).unwrap_err().to_string();
        assert!(msg.contains("unknown parameter `all`; the parameters are `file_path`, `replace_all`"), "{msg}");
        assert_eq!(decode(r.get("theirs").unwrap(), &CallInput::Json(sent.clone())).unwrap(), sent);
        // The same word in another case convention is taken as the parameter it spells; another
        // word, or a spelling of one that was sent too, is still refused.
        let args =
            decode(r.get("mine").unwrap(), &CallInput::Json(json!({"filePath": "a", "replaceAll": true}))).unwrap();
        assert_eq!(args, json!({"file_path": "a", "replace_all": true}));
        let both = json!({"file_path": "a", "filePath": "b"});
        let msg = decode(r.get("mine").unwrap(), &CallInput::Json(both)).unwrap_err().to_string();
        assert!(msg.contains("`filePath` stands for `file_path`, which was also given, with another value"), "{msg}");
        let same = json!({"file_path": "a", "filePath": "a"});
        assert_eq!(decode(r.get("mine").unwrap(), &CallInput::Json(same)).unwrap(), json!({"file_path": "a"}));
        let theirs = json!({"file_path": "a", "replaceAll": true});
        assert_eq!(decode(r.get("theirs").unwrap(), &CallInput::Json(theirs.clone())).unwrap(), theirs);
        // A built-in whose parameters are shapes of a `oneOf` (an enum of argument types, as a
        // program embedding toolshed may register) is not closed at its root.
        let shapes = json!({"type": "object", "properties": {}, "oneOf": [
            {"type": "object", "properties": {"action": {"const": "create"}, "title": {"type": "string"}}, "required": ["action"]}]});
        r.register(Spec(ToolSpec::new("notes", "Notes.", shapes)), Source::Builtin);
        let sent = json!({"action": "create", "title": "x"});
        assert_eq!(decode(r.get("notes").unwrap(), &CallInput::Json(sent.clone())).unwrap(), sent);
    }

    #[test]
    fn another_agents_name_for_a_parameter_is_taken_as_the_parameter_it_names() {
        use crate::tool::Alias;
        const ALIASES: &[(&str, Alias)] = &[
            ("-i", Alias::Param("case_insensitive")),
            ("ignore_case", Alias::Param("case_insensitive")),
            ("-A", Alias::Param("context")),
            ("-B", Alias::Param("context")),
            ("-n", Alias::NoEffect),
            ("typo", Alias::Param("no_such_parameter")),
        ];
        let schema = json!({"type": "object", "properties": {
            "pattern": {"type": "string"}, "case_insensitive": {"type": "boolean"}, "context": {"type": "integer"}},
            "required": ["pattern"]});
        let spec = |name: &str| ToolSpec { aliases: ALIASES, ..ToolSpec::new(name, "Find.", schema.clone()) };
        let mut r = Registry::new();
        r.register(Spec(spec("find")), Source::Builtin);
        r.register(Spec(spec("mcp_find")), Source::Mcp("s".into()));
        let mine = |args: Value| decode(r.get("find").unwrap(), &CallInput::Json(args));
        // Renamed; a flag that changes nothing is dropped; two names that agree are one.
        assert_eq!(
            mine(json!({"pattern": "x", "-i": true, "-n": true, "-A": 2, "-B": 2})).unwrap(),
            json!({"pattern": "x", "case_insensitive": true, "context": 2})
        );
        // Two names that disagree are refused, each problem said once.
        let msg = mine(json!({"pattern": "x", "-A": 1, "-B": 3})).unwrap_err().to_string();
        assert!(
            msg.contains("- `-A` and `-B` both stand for `context` here, with different values; send `context` once"),
            "{msg}"
        );
        assert!(!msg.contains("unknown parameter"), "{msg}");
        let msg = mine(json!({"pattern": "x", "context": 1, "-A": 2})).unwrap_err().to_string();
        assert!(msg.contains("- `-A` stands for `context`, which was also given, with another value"), "{msg}");
        let msg = mine(json!({"pattern": "x", "context": 1, "-C": 1})).unwrap_err().to_string();
        assert!(msg.contains("unknown parameter `-C`"), "{msg}");
        // A null under another name is "not given", as under the parameter's own (where it
        // leaves room for another name's value).
        assert_eq!(
            mine(json!({"pattern": "x", "context": null, "-A": 2})).unwrap(),
            json!({"pattern": "x", "context": 2})
        );
        assert_eq!(
            mine(json!({"pattern": "x", "-A": null, "-B": null, "-n": null, "context": 2})).unwrap(),
            json!({"pattern": "x", "context": 2})
        );
        // A word alias is the same in any case convention; a flag's case is its meaning (`-a`
        // is not `-A`).
        assert_eq!(
            mine(json!({"pattern": "x", "IgnoreCase": true})).unwrap(),
            json!({"pattern": "x", "case_insensitive": true})
        );
        let msg = mine(json!({"pattern": "x", "-a": 1})).unwrap_err().to_string();
        assert!(msg.contains("unknown parameter `-a`"), "{msg}");
        // What validation says of a renamed parameter names what the model sent.
        let msg = mine(json!({"pattern": "x", "-i": "yes"})).unwrap_err().to_string();
        assert!(msg.contains("- `case_insensitive` (sent as `-i`) must be a boolean"), "{msg}");
        // A no-effect flag takes only a boolean; an alias of no listed parameter is unknown.
        let msg = mine(json!({"pattern": "x", "-n": "yes"})).unwrap_err().to_string();
        assert!(msg.contains("unknown parameter `-n`"), "{msg}");
        let msg = mine(json!({"pattern": "x", "typo": 1})).unwrap_err().to_string();
        assert!(msg.contains("unknown parameter `typo`"), "{msg}");
        // What a session records: the tool's own names; a call that will be refused (two names
        // that disagree, a wrong type) as sent; nothing for a call that needs no renaming or for
        // another's tool.
        let canonical = |tool: &str, raw: &str| canonical_arguments(r.get(tool).unwrap(), raw);
        assert_eq!(
            canonical("find", r#"{"pattern":"x","-i":true}"#).as_deref(),
            Some(r#"{"pattern":"x","case_insensitive":true}"#)
        );
        assert_eq!(canonical("find", r#"{"pattern":"x","-A":1,"-B":3}"#), None);
        assert_eq!(canonical("find", r#"{"pattern":"x","-i":"yes"}"#), None);
        assert_eq!(canonical("find", r#"{"pattern":"x"}"#), None);
        assert_eq!(canonical("find", "not json"), None);
        assert_eq!(canonical("mcp_find", r#"{"pattern":"x","-i":true}"#), None);
        // Another's tool is called with what was sent.
        let sent = json!({"pattern": "x", "-i": true});
        assert_eq!(decode(r.get("mcp_find").unwrap(), &CallInput::Json(sent.clone())).unwrap(), sent);
    }

    #[test]
    fn malformed_json_and_non_objects_are_explained() {
        let e = err(CallInput::Raw("{\"file_path\": ".into()));
        assert!(e.starts_with("The arguments for edit are not valid JSON (EOF while parsing"), "{e}");
        let e = err(CallInput::Json(json!([1, 2])));
        assert!(e.starts_with("The arguments for edit must be a JSON object, not an array."), "{e}");
    }

    #[test]
    fn raw_json_and_empty_strings_decode() {
        let r = entry();
        let e = r.get("edit").unwrap();
        assert_eq!(decode(e, &CallInput::Raw(r#"{"file_path":"x"}"#.into())).unwrap(), json!({"file_path": "x"}));
        let msg = decode(e, &CallInput::Raw("  ".into())).unwrap_err().to_string();
        assert!(msg.contains("missing required parameter `file_path`"), "{msg}");
    }

    #[test]
    fn freeform_raw_text_becomes_input() {
        let mut r = Registry::new();
        #[derive(Deserialize, schemars::JsonSchema)]
        struct Free {
            #[allow(dead_code)]
            input: String,
        }
        let spec_tool = tool_fn("apply_patch", "p", |_: Free, _| async { Ok(ToolOutput::text("")) });
        r.register_builtin(spec_tool);
        let mut spec: ToolSpec = r.get("apply_patch").unwrap().spec().clone();
        spec.freeform = Some(Grammar { syntax: GrammarSyntax::Lark, definition: "start: x".into() });
        r.register_builtin(Spec(spec));
        let e = r.get("apply_patch").unwrap();
        let text = "*** Begin Patch\n*** End Patch";
        assert_eq!(decode(e, &CallInput::Raw(text.into())).unwrap(), json!({"input": text}));
        assert_eq!(decode(e, &CallInput::Json(json!(text))).unwrap(), json!({"input": text}));
        let wrapped = json!({"input": text}).to_string();
        assert_eq!(decode(e, &CallInput::Raw(wrapped)).unwrap(), json!({"input": text}));
        assert_eq!(decode(e, &CallInput::Raw(json!(text).to_string())).unwrap(), json!({"input": text}));
        // An object is checked as the arguments, not taken for the patch.
        let msg = decode(e, &CallInput::Raw(r#"{"input": 5}"#.into())).unwrap_err().to_string();
        assert!(msg.contains("`input`") && msg.contains("string"), "{msg}");
        let msg = decode(e, &CallInput::Raw(r#"{"patch": "x"}"#.into())).unwrap_err().to_string();
        assert!(msg.contains("missing required parameter `input`"), "{msg}");
    }

    #[test]
    fn a_tool_with_a_broken_schema_fails_its_call_not_the_run() {
        let mut r = Registry::new();
        let schema = json!({"type": "object", "properties": {"p": {"type": "string", "pattern": "([unclosed"}}});
        r.register_builtin(Spec(ToolSpec::new("pat", "p", schema)));
        let err = decode(r.get("pat").unwrap(), &CallInput::Json(json!({"p": "x"}))).unwrap_err();
        assert!(matches!(err, ToolError::RespondToModel(_)), "{err:?}");
        assert!(err.to_string().starts_with("The tool pat cannot be called: "), "{err}");
    }

    #[test]
    fn whole_floats_become_integers() {
        let mut v = json!({"a": 1000.0, "b": [1e3, -2.0, 2.5], "c": {"d": 7}});
        whole_numbers_as_integers(&mut v);
        assert_eq!(v, json!({"a": 1000, "b": [1000, -2, 2.5], "c": {"d": 7}}));
        assert!(v["a"].is_u64() && v["b"][1].is_i64());
    }

    #[test]
    fn field_paths_read_like_code() {
        assert_eq!(field_path(""), "");
        assert_eq!(field_path("/edits/0/old_string"), "edits[0].old_string");
        assert_eq!(field_path("/a~1b"), "a/b");
    }
}
