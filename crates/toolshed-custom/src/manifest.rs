//! Manifest tools: a `NAME.toml` in `.toolshed/tools/` declares a tool written in any language
//! (a description, a command and the arguments), run as a process in the worktree.
//!
//! ```toml
//! description = "Count the lines of a file."
//! command = ["python3", "{dir}/count_lines.py"]   # {dir}: the manifest's directory
//! timeout_ms = 10000                              # optional
//! read_only = true                                # optional: runs alongside other reads
//! exposure = "deferred"                           # optional: direct | deferred | hidden
//!
//! [args.path]                                     # a JSON Schema property...
//! type = "string"
//! description = "File to count, relative to the worktree."
//!
//! [args.blank]
//! type = "boolean"
//! optional = true                                 # ...not required
//! ```
//!
//! The compact form `[args]` `path = "string"` declares a required argument of that type. A
//! manifest may instead hold several `[tool.NAME]` tables with the same keys; each becomes the
//! tool `<file>_<NAME>`.

use std::fmt;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::time::Duration;
use toolshed_core::env::ChildEnv;

use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::{Map, Value, json};
use toml::Spanned;
use toolshed_core::permission::PermissionRequest;
use toolshed_core::tool::{Exposure, Invocation, Tool, ToolContext, ToolError, ToolFlags, ToolSpec};

use super::process::{Command, run_command};
use super::{Problem, Run, Unavailable, custom_permission, find_program, invalid_name, stem};

/// The JSON Schema types an argument may have.
const TYPES: &[&str] = &["string", "number", "integer", "boolean", "array", "object", "null"];
/// Keywords of which an argument needs at least one, so it says what it accepts.
const SHAPE_KEYWORDS: &[&str] = &["type", "enum", "const", "anyOf", "oneOf", "allOf", "$ref"];
/// Replaced by the manifest's directory in every element of `command`.
const DIR_PLACEHOLDER: &str = "{dir}";

/// A tool declared by a manifest.
pub(crate) struct ManifestTool {
    spec: ToolSpec,
    program: PathBuf,
    args: Vec<String>,
    dir: PathBuf,
    timeout: Option<Duration>,
    /// What its process inherits of toolshed's environment.
    pub(crate) env: ChildEnv,
    /// How its process is confined.
    pub(crate) confine: Option<crate::Confine>,
    /// Checked before each call (`None`: a directory no one needs to accept).
    pub(crate) gate: Option<crate::Gate>,
}

impl Tool for ManifestTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn prepare(&self, args: Value) -> Result<Box<dyn Invocation + '_>, ToolError> {
        Ok(Box::new(ManifestCall { tool: self, args }))
    }
}

struct ManifestCall<'a> {
    tool: &'a ManifestTool,
    args: Value,
}

impl Invocation for ManifestCall<'_> {
    fn permissions(&self, _ctx: &ToolContext) -> Result<Vec<PermissionRequest>, ToolError> {
        Ok(custom_permission(&self.tool.spec))
    }

    fn time_limit(&self) -> Option<Duration> {
        self.tool.timeout
    }

    fn run(self: Box<Self>, ctx: ToolContext) -> Run {
        if let Some(Err(refused)) = self.tool.gate.as_ref().map(|g| g.check(&self.tool.spec.name)) {
            return Box::pin(async move { Err(refused) });
        }
        let command = Command {
            tool: self.tool.spec.name.clone(),
            program: self.tool.program.clone(),
            args: self.tool.args.clone(),
            tool_dir: self.tool.dir.clone(),
            env: self.tool.env.clone(),
            confine: self.tool.confine.clone(),
        };
        Box::pin(run_command(command, self.args, ctx))
    }
}

/// What one manifest file yielded.
#[derive(Default)]
pub(crate) struct Loaded {
    pub tools: Vec<ManifestTool>,
    pub unavailable: Vec<Unavailable>,
    pub problems: Vec<Problem>,
}

/// One tool's table as written; every key optional so each gap can be reported with its line.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTool {
    description: Option<Spanned<String>>,
    command: Option<Spanned<Vec<String>>>,
    args: Option<Spanned<Ordered<Spanned<toml::Value>>>>,
    timeout_ms: Option<Spanned<u64>>,
    read_only: Option<bool>,
    exposure: Option<Exposure>,
    tool: Option<Spanned<Ordered<Spanned<RawTool>>>>,
}

impl RawTool {
    /// The span of the first top-level tool key that is set, if any.
    fn first_tool_key(&self) -> Option<std::ops::Range<usize>> {
        [
            self.description.as_ref().map(Spanned::span),
            self.command.as_ref().map(Spanned::span),
            self.args.as_ref().map(Spanned::span),
            self.timeout_ms.as_ref().map(Spanned::span),
        ]
        .into_iter()
        .flatten()
        .min_by_key(|s| s.start)
        .or_else(|| (self.read_only.is_some() || self.exposure.is_some()).then_some(0..0))
    }
}

/// A TOML table whose key order is kept.
struct Ordered<V>(Vec<(String, V)>);

impl<'de, V: Deserialize<'de>> Deserialize<'de> for Ordered<V> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct OrderedVisitor<V>(PhantomData<V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for OrderedVisitor<V> {
            type Value = Ordered<V>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a table")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut entries = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    entries.push((key, map.next_value()?));
                }
                Ok(Ordered(entries))
            }
        }
        d.deserialize_map(OrderedVisitor(PhantomData))
    }
}

/// Reads one manifest. Nothing here fails: each problem is reported with its line, and a tool
/// whose table has a problem is unavailable.
pub(crate) fn load(file: &Path, root: &Path) -> Loaded {
    let stem = stem(file);
    let mut loaded = Loaded::default();
    let fail = |loaded: &mut Loaded, name: &str, line: Option<usize>, message: String| {
        loaded.unavailable.push(Unavailable {
            name: name.to_string(),
            file: file.to_path_buf(),
            reason: message.clone(),
        });
        loaded.problems.push(Problem { file: file.to_path_buf(), line, message });
    };
    let text = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(e) => {
            fail(&mut loaded, &stem, None, format!("cannot read the manifest: {e}"));
            return loaded;
        }
    };
    let mut raw: RawTool = match toml::from_str(&text) {
        Ok(raw) => raw,
        Err(e) => {
            let line = e.span().map(|s| line_of(&text, s.start));
            fail(&mut loaded, &stem, line, e.message().trim().to_string());
            return loaded;
        }
    };
    let dir = file.parent().unwrap_or(Path::new(".")).to_path_buf();
    let site = Site { text: &text, root, dir: &dir };
    match raw.tool.take() {
        None => match site.build(&stem, raw, None) {
            Ok(tool) => loaded.tools.push(tool),
            Err((line, message)) => fail(&mut loaded, &stem, Some(line), message),
        },
        Some(tables) => {
            if let Some(span) = raw.first_tool_key() {
                let message = "declare either one tool at the top level or several [tool.NAME] tables, not both; \
                               move the top-level keys into a [tool.NAME] table"
                    .to_string();
                fail(&mut loaded, &stem, Some(line_of(&text, span.start).max(1)), message);
                return loaded;
            }
            let tables_span = tables.span();
            let tables = tables.into_inner().0;
            if tables.is_empty() {
                let message = "[tool] declares no tools; add [tool.NAME] tables".to_string();
                fail(&mut loaded, &stem, Some(line_of(&text, tables_span.start)), message);
            }
            for (name, table) in tables {
                let full = format!("{stem}_{name}");
                let span = table.span();
                match site.build(&full, table.into_inner(), Some(span)) {
                    Ok(tool) => loaded.tools.push(tool),
                    Err((line, message)) => fail(&mut loaded, &full, Some(line), format!("[tool.{name}]: {message}")),
                }
            }
        }
    }
    loaded
}

/// Where a manifest is: its text (for line numbers), the worktree and its directory.
struct Site<'a> {
    text: &'a str,
    root: &'a Path,
    dir: &'a Path,
}

impl Site<'_> {
    fn line(&self, span: std::ops::Range<usize>) -> usize {
        line_of(self.text, span.start)
    }

    /// Builds one tool from its table; an error is (line, message).
    fn build(
        &self,
        name: &str,
        raw: RawTool,
        table: Option<std::ops::Range<usize>>,
    ) -> Result<ManifestTool, (usize, String)> {
        let table_line = table.map_or(1, |s| self.line(s));
        if let Some(problem) = invalid_name(name) {
            return Err((table_line, problem));
        }
        if let Some(nested) = &raw.tool {
            return Err((self.line(nested.span()), "a [tool.NAME] table cannot hold more tools".to_string()));
        }
        let description = raw
            .description
            .ok_or((table_line, "missing `description`: say what the tool does, for the model".to_string()))?;
        if description.get_ref().trim().is_empty() {
            return Err((self.line(description.span()), "`description` is empty".to_string()));
        }
        let command = raw.command.ok_or((
            table_line,
            "missing `command`: the program and its arguments, e.g. command = [\"python3\", \"{dir}/tool.py\"]"
                .to_string(),
        ))?;
        let command_line = self.line(command.span());
        let argv: Vec<String> =
            command.into_inner().into_iter().map(|a| a.replace(DIR_PLACEHOLDER, &self.dir.to_string_lossy())).collect();
        let Some((program, args)) = argv.split_first() else {
            return Err((command_line, "`command` is empty; give the program and its arguments".to_string()));
        };
        if program.is_empty() {
            return Err((command_line, "the program in `command` is empty".to_string()));
        }
        let program = find_program(program, self.root).ok_or_else(|| {
            let place = if program.contains('/') { "relative to the worktree" } else { "on PATH" };
            (command_line, format!("the program `{program}` is not found ({place})"))
        })?;
        let parameters = match raw.args {
            None => json!({"type": "object", "properties": {}, "additionalProperties": false}),
            Some(args) => self.parameters(args.into_inner())?,
        };
        let timeout = match raw.timeout_ms {
            Some(t) if *t.get_ref() == 0 => {
                return Err((self.line(t.span()), "`timeout_ms` must be more than 0".to_string()));
            }
            t => t.map(|t| Duration::from_millis(*t.get_ref())),
        };
        let flags = if raw.read_only == Some(true) { ToolFlags::READ_ONLY } else { ToolFlags::MUTATING };
        if let Some(problem) = crate::too_large(name, description.get_ref(), &parameters) {
            return Err((1, problem));
        }
        let spec = ToolSpec::new(name, description.into_inner(), parameters)
            .with_flags(flags)
            .with_exposure(raw.exposure.unwrap_or_default());
        Ok(ManifestTool {
            spec,
            program,
            args: args.to_vec(),
            dir: self.dir.to_path_buf(),
            timeout,
            env: ChildEnv::default(),
            confine: None,
            gate: None,
        })
    }

    /// The parameters schema of the `[args]` table.
    fn parameters(&self, args: Ordered<Spanned<toml::Value>>) -> Result<Value, (usize, String)> {
        let mut properties = Map::new();
        let mut required = Vec::new();
        for (arg, value) in args.0 {
            let line = self.line(value.span());
            if let Some(problem) = invalid_name(&arg) {
                return Err((line, format!("argument {}", problem.replace("tool name", "argument name"))));
            }
            let (schema, optional) = property(value.get_ref()).map_err(|e| (line, format!("[args.{arg}]: {e}")))?;
            if !optional {
                required.push(Value::String(arg.clone()));
            }
            properties.insert(arg, schema);
        }
        Ok(json!({
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": false,
        }))
    }
}

/// One argument's JSON Schema and whether it is optional.
fn property(value: &toml::Value) -> Result<(Value, bool), String> {
    match value {
        toml::Value::String(ty) => {
            check_type(ty)?;
            Ok((json!({ "type": ty }), false))
        }
        toml::Value::Table(table) => {
            let Value::Object(mut schema) = toml_to_json(value)? else {
                return Err("expected a table".to_string());
            };
            let optional = match schema.remove("optional") {
                None => false,
                Some(Value::Bool(b)) => b,
                Some(_) => return Err("`optional` must be true or false".to_string()),
            };
            match schema.get("type") {
                Some(Value::String(ty)) => check_type(ty)?,
                Some(Value::Array(types)) => {
                    for ty in types {
                        check_type(ty.as_str().ok_or("`type` lists type names, as strings")?)?;
                    }
                }
                Some(_) => return Err("`type` must be a type name or a list of them".to_string()),
                None if !table.keys().any(|k| SHAPE_KEYWORDS.contains(&k.as_str())) => {
                    return Err(format!("say what the argument accepts: add `type` (one of {})", TYPES.join(", ")));
                }
                None => {}
            }
            let schema = Value::Object(schema);
            jsonschema::meta::validate(&schema).map_err(|e| format!("not a valid JSON Schema: {e}"))?;
            // The meta-schema does not look inside `pattern`s; compiling does.
            jsonschema::validator_for(&schema).map_err(|e| format!("not a usable JSON Schema: {e}"))?;
            Ok((schema, optional))
        }
        _ => Err(format!(
            "write a type name (`path = \"string\"`) or a table of JSON Schema keywords ([args.path] with `type`, `description`, ...); got {}",
            value.type_str()
        )),
    }
}

fn check_type(ty: &str) -> Result<(), String> {
    if TYPES.contains(&ty) { Ok(()) } else { Err(format!("unknown type `{ty}`; use one of {}", TYPES.join(", "))) }
}

fn toml_to_json(value: &toml::Value) -> Result<Value, String> {
    Ok(match value {
        toml::Value::String(s) => Value::String(s.clone()),
        toml::Value::Integer(i) => Value::from(*i),
        toml::Value::Float(f) => {
            serde_json::Number::from_f64(*f).map(Value::Number).ok_or("NaN and infinity are not JSON")?
        }
        toml::Value::Boolean(b) => Value::Bool(*b),
        toml::Value::Datetime(d) => return Err(format!("dates are not JSON; quote it: \"{d}\"")),
        toml::Value::Array(items) => Value::Array(items.iter().map(toml_to_json).collect::<Result<_, _>>()?),
        toml::Value::Table(table) => Value::Object(
            table.iter().map(|(k, v)| Ok((k.clone(), toml_to_json(v)?))).collect::<Result<Map<_, _>, String>>()?,
        ),
    })
}

/// The 1-based line of a byte offset.
fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())].iter().filter(|&&b| b == b'\n').count() + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load_text(text: &str) -> (tempfile::TempDir, Loaded) {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join(".toolshed/tools");
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("demo.toml");
        std::fs::write(&file, text).unwrap();
        let loaded = load(&file, tmp.path());
        (tmp, loaded)
    }

    fn problems(loaded: &Loaded) -> Vec<String> {
        loaded.problems.iter().map(|p| format!("{}: {}", p.line.unwrap_or(0), p.message)).collect()
    }

    #[test]
    fn full_and_compact_arguments_build_one_schema_in_file_order() {
        let (_tmp, loaded) = load_text(
            "description = \"Demo.\"\ncommand = [\"sh\", \"-c\", \"cat\"]\n\n[args]\nname = \"string\"\n\n[args.count]\ntype = \"integer\"\nminimum = 1\ndescription = \"How many.\"\noptional = true\n",
        );
        assert!(loaded.problems.is_empty(), "{:?}", problems(&loaded));
        let spec = loaded.tools[0].spec();
        assert_eq!(spec.name, "demo");
        assert_eq!(spec.permission, "demo");
        assert_eq!(
            spec.parameters,
            json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "count": {"type": "integer", "minimum": 1, "description": "How many."}
                },
                "required": ["name"],
                "additionalProperties": false
            })
        );
        assert_eq!(spec.flags, ToolFlags::MUTATING);
    }

    #[test]
    fn tool_tables_become_file_prefixed_tools() {
        let (_tmp, loaded) = load_text(
            "[tool.up]\ndescription = \"Up.\"\ncommand = [\"true\"]\nread_only = true\n\n[tool.down]\ndescription = \"Down.\"\ncommand = [\"true\"]\nexposure = \"deferred\"\n",
        );
        assert!(loaded.problems.is_empty(), "{:?}", problems(&loaded));
        let names: Vec<&str> = loaded.tools.iter().map(|t| t.spec().name.as_str()).collect();
        assert_eq!(names, ["demo_up", "demo_down"]);
        assert_eq!(loaded.tools[0].spec().flags, ToolFlags::READ_ONLY);
        assert_eq!(loaded.tools[1].spec().exposure, Exposure::Deferred);
    }

    #[test]
    fn each_problem_names_its_line() {
        let cases = [
            ("description = \"x\"\ncommand = [\"true\"]\ncolour = 1\n", "3: unknown field `colour`"),
            (
                "description = \"x\"\ncommand = [\"true\"]\n[args]\npath = \"str\"\n",
                "4: [args.path]: unknown type `str`",
            ),
            ("command = [\"true\"]\n", "1: missing `description`"),
            ("description = \"x\"\n\ncommand = []\n", "3: `command` is empty"),
            (
                "description = \"x\"\ncommand = [\"no-such-program-xyz\"]\n",
                "2: the program `no-such-program-xyz` is not found (on PATH)",
            ),
            (
                "description = \"x\"\ncommand = [\"true\"]\n[args.n]\ntype = \"integer\"\nminimum = \"one\"\n",
                "3: [args.n]: not a valid JSON Schema: \"one\" is not of type \"number\"",
            ),
            (
                "description = \"x\"\ncommand = [\"true\"]\n[args.p]\ntype = \"string\"\npattern = \"([unclosed\"\n",
                "3: [args.p]: not a usable JSON Schema: \"([unclosed\" is not a \"regex\"",
            ),
            (
                "description = \"x\"\ncommand = [\"true\"]\n[args.n]\ndescription = \"?\"\n",
                "3: [args.n]: say what the argument accepts",
            ),
            (
                "description = \"x\"\ncommand = [\"true\"]\n[args.n]\ntype = \"string\"\noptional = \"yes\"\n",
                "3: [args.n]: `optional` must be true or false",
            ),
            ("description = \"x\"\ncommand = [\"true\"]\ntimeout_ms = 0\n", "3: `timeout_ms` must be more than 0"),
            ("description = \"x\"\ncommand = [\"true\"\n", "2: "),
            (
                "description = \"x\"\n[tool.a]\ndescription = \"a\"\ncommand = [\"true\"]\n",
                "1: declare either one tool",
            ),
            (
                "[tool.a]\ncommand = [\"true\"]\n\n[tool.b]\ndescription = \"b\"\ncommand = [\"true\"]\n",
                "1: [tool.a]: missing `description`",
            ),
            ("description = \"x\"\ncommand = [\"true\"]\nexposure = \"sometimes\"\n", "3: unknown variant `sometimes`"),
        ];
        for (text, expected) in cases {
            let (_tmp, loaded) = load_text(text);
            let got = problems(&loaded);
            assert!(got.len() == 1 && got[0].starts_with(expected), "{text:?}: expected {expected:?}, got {got:?}");
        }
    }

    #[test]
    fn a_broken_table_leaves_its_siblings_working() {
        let (_tmp, loaded) =
            load_text("[tool.a]\ncommand = [\"true\"]\n\n[tool.b]\ndescription = \"b\"\ncommand = [\"true\"]\n");
        assert_eq!(loaded.tools.len(), 1);
        assert_eq!(loaded.tools[0].spec().name, "demo_b");
        assert_eq!(loaded.unavailable[0].name, "demo_a");
    }

    #[test]
    fn dir_placeholder_and_relative_programs_resolve() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join(".toolshed/tools");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::create_dir_all(tmp.path().join("scripts")).unwrap();
        std::fs::write(tmp.path().join("scripts/run.sh"), "#!/bin/sh\n").unwrap();
        let file = dir.join("t.toml");
        std::fs::write(&file, "description = \"x\"\ncommand = [\"scripts/run.sh\", \"{dir}/helper.py\"]\n").unwrap();
        let loaded = load(&file, tmp.path());
        assert!(loaded.problems.is_empty(), "{:?}", problems(&loaded));
        let tool = &loaded.tools[0];
        assert_eq!(tool.program, tmp.path().join("scripts/run.sh"));
        assert_eq!(tool.args, [format!("{}/helper.py", dir.display())]);
    }
}
