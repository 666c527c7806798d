//! OpenCode tool files (`.opencode/tools/*.{ts,js}`) run unchanged: each export that looks like
//! a tool (`description`, `args`, `execute`) becomes one — the default export named `<file>`, a
//! named export `X` named `<file>_X` — with its zod arguments converted to JSON Schema by the
//! JS host, and its calls run there with OpenCode's context (`sessionID`, `messageID`, `agent`,
//! `directory`, `worktree`, `abort`, `metadata()`, `ask()`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use serde_json::{Value, json};
use toolshed_core::permission::PermissionRequest;
use toolshed_core::tool::{Attachment, Invocation, Tool, ToolContext, ToolError, ToolFlags, ToolOutput, ToolSpec};

use super::cache::{JsSpec, SpecCache, Stamp, fingerprint};
use super::host::{HOST_SOURCE, JsHost, PLUGIN_SHIM, Request, Runtime};
use super::{Discover, Gate, Problem, Run, Scope, Unavailable, custom_permission, dir_stamp, invalid_name, stem};
use toolshed_core::trust::Acceptance;

/// How long importing the tool files may take during discovery.
const LOAD_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a cancelled call may take to return before the host is restarted.
const CANCEL_GRACE: Duration = Duration::from_millis(1500);

/// A tool exported by an OpenCode tool file.
pub(crate) struct JsTool {
    spec: ToolSpec,
    file: PathBuf,
    export: String,
    host: Arc<JsHost>,
    gate: Gate,
}

impl Tool for JsTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn prepare(&self, args: Value) -> Result<Box<dyn Invocation + '_>, ToolError> {
        Ok(Box::new(JsCall { tool: self, args }))
    }
}

struct JsCall<'a> {
    tool: &'a JsTool,
    args: Value,
}

impl Invocation for JsCall<'_> {
    fn permissions(&self, _ctx: &ToolContext) -> Result<Vec<PermissionRequest>, ToolError> {
        Ok(custom_permission(&self.tool.spec))
    }

    fn run(self: Box<Self>, ctx: ToolContext) -> Run {
        if let Err(refused) = self.tool.gate.check(&self.tool.spec.name) {
            return Box::pin(async move { Err(refused) });
        }
        let message = json!({
            "type": "call",
            "file": self.tool.file,
            "stem": stem(&self.tool.file),
            "export": self.tool.export,
            "args": self.args,
            "context": {
                "sessionID": ctx.session_id(),
                "messageID": ctx.message_id(),
                "callID": ctx.call_id(),
                "agent": ctx.agent(),
                "directory": ctx.cwd(),
                "worktree": ctx.root(),
            },
        });
        let host = self.tool.host.clone();
        let name = self.tool.spec.name.clone();
        let dir = self.tool.file.parent().unwrap_or(&self.tool.file).to_path_buf();
        Box::pin(async move {
            // Protected paths the call creates are removed after it.
            let absent = toolshed_core::protected::absent(ctx.root(), ctx.cwd());
            let root = ctx.root().to_path_buf();
            let result = call(host, name, message, dir, ctx).await;
            toolshed_core::protected::settle(&root, &absent, result)
        })
    }
}

/// Runs one call in the host, answering its permission requests and recording its metadata.
async fn call(
    host: Arc<JsHost>,
    name: String,
    message: Value,
    dir: PathBuf,
    ctx: ToolContext,
) -> Result<ToolOutput, ToolError> {
    let unavailable = |e: String| ToolError::model(format!("The custom tool {name} could not run: {e}"));
    // Starting the host may install zod and spawns a process: blocking work.
    let starter = host.clone();
    let agent = ctx.agent().to_string();
    let mut request = tokio::task::spawn_blocking(move || {
        let stamp = dir_stamp(&dir);
        starter.request(message, &agent, Some((&dir, stamp)))
    })
    .await
    .map_err(|e| unavailable(e.to_string()))?
    .map_err(unavailable)?;
    let mut title = None;
    let cancel = ctx.cancellation().clone();
    loop {
        let reply = tokio::select! {
            reply = request.next() => reply.map_err(unavailable)?,
            () = cancel.cancelled() => {
                let _ = request.send(json!({"type": "cancel"}));
                return stop(&host, request).await;
            }
        };
        match reply.get("type").and_then(Value::as_str) {
            Some("ask") => {
                let answer = match permission_request(&reply["request"]) {
                    Ok(req) => ctx.ask(req).await.err().map(|e| e.to_string()),
                    Err(e) => Some(e),
                };
                let ask = reply.get("ask").cloned().unwrap_or(Value::Null);
                request.send(json!({"type": "answer", "ask": ask, "error": answer})).map_err(unavailable)?;
            }
            Some("metadata") => {
                if let Some(t) = reply.get("title").and_then(Value::as_str) {
                    title = Some(t.to_string());
                }
                if let Some(Value::Object(entries)) = reply.get("metadata") {
                    for (k, v) in entries {
                        ctx.set_metadata(k.clone(), v.clone());
                    }
                }
            }
            Some("result") => return result(reply, title),
            _ => {}
        }
    }
}

/// After a cancel: the call's own result if it comes back in time, else the host is restarted
/// (a tool stuck in a loop would block every later call).
async fn stop(host: &JsHost, mut request: Request) -> Result<ToolOutput, ToolError> {
    let deadline = tokio::time::sleep(CANCEL_GRACE);
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            reply = request.next() => match reply {
                Ok(reply) if reply.get("type").and_then(Value::as_str) == Some("result") => {
                    return Ok(ToolOutput::text(reply.get("output").and_then(Value::as_str).unwrap_or_default()));
                }
                Ok(_) => {}
                Err(_) => return Ok(ToolOutput::default()),
            },
            () = &mut deadline => {
                request.stop_host(host);
                return Ok(ToolOutput::default());
            }
        }
    }
}

/// The permission request a tool's `ctx.ask({permission, patterns, always, metadata})` makes.
fn permission_request(value: &Value) -> Result<PermissionRequest, String> {
    let strings = |key: &str| -> Vec<String> {
        value
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect()
    };
    let permission = value.get("permission").and_then(Value::as_str).ok_or("ask() needs a `permission` string")?;
    let patterns = strings("patterns");
    let mut request = PermissionRequest::new(permission, patterns.clone());
    if value.get("always").is_some() {
        request = request.with_always(strings("always"));
    }
    if let Some(Value::Object(metadata)) = value.get("metadata") {
        request.metadata.clone_from(metadata);
    }
    Ok(request)
}

/// The tool's result: `output`, `title`, `metadata`, image attachments; or its error.
fn result(reply: Value, title: Option<String>) -> Result<ToolOutput, ToolError> {
    if let Some(error) = reply.get("error").and_then(Value::as_str) {
        return Err(ToolError::model(error));
    }
    let mut output = ToolOutput::text(reply.get("output").and_then(Value::as_str).unwrap_or_default());
    output.title = reply.get("title").and_then(Value::as_str).map(String::from).or(title);
    if let Some(Value::Object(metadata)) = reply.get("metadata") {
        output.metadata.clone_from(metadata);
    }
    for attachment in reply.get("attachments").and_then(Value::as_array).into_iter().flatten() {
        match image(attachment) {
            Some(image) => output.attachments.push(image),
            None => {
                let what =
                    attachment.get("filename").or(attachment.get("mime")).and_then(Value::as_str).unwrap_or("file");
                output
                    .text
                    .push_str(&format!("\n[attachment {what} omitted: only images given as data: URLs are passed on]"));
            }
        }
    }
    Ok(output)
}

/// An OpenCode file attachment `{type: "file", mime: "image/...", url: "data:...;base64,..."}`.
fn image(attachment: &Value) -> Option<Attachment> {
    let mime = attachment.get("mime").and_then(Value::as_str)?;
    let url = attachment.get("url").and_then(Value::as_str)?;
    let data = url.strip_prefix("data:")?.split_once(";base64,")?.1;
    let data = base64::engine::general_purpose::STANDARD.decode(data).ok()?;
    mime.starts_with("image/").then(|| Attachment::Image { mime_type: mime.to_string(), data })
}

/// What the OpenCode files yielded: per file, its tools (in file order).
pub(crate) struct Loaded {
    pub tools: Vec<Vec<Arc<dyn Tool>>>,
    pub unavailable: Vec<Unavailable>,
    pub problems: Vec<Problem>,
}

/// Loads `files`: specs from the cache where allowed and unchanged, the rest from the host.
pub(crate) fn load(
    discover: &Discover,
    files: &[PathBuf],
    scope: &Scope,
    record: &Arc<(Acceptance, PathBuf)>,
) -> Loaded {
    let mut loaded = Loaded { tools: vec![Vec::new(); files.len()], unavailable: Vec::new(), problems: Vec::new() };
    let fail = |loaded: &mut Loaded, file: &Path, line: Option<usize>, message: String| {
        loaded.unavailable.push(Unavailable { name: stem(file), file: file.to_path_buf(), reason: message.clone() });
        loaded.problems.push(Problem { file: file.to_path_buf(), line, message });
    };
    let need_ts = files.iter().any(|f| f.extension().is_some_and(|e| e == "ts"));
    let runtime = match Runtime::find(discover.js_runtime.as_deref(), need_ts, &discover.env, &discover.root) {
        Ok(runtime) => Runtime { confine: discover.confine.clone(), ..runtime },
        Err(reason) => {
            for file in files {
                fail(&mut loaded, file, None, reason.clone());
            }
            return loaded;
        }
    };
    let dir = discover.data_dir.join("custom-tools");
    let needs_zod = files.iter().any(|f| !has_package(f, "@opencode-ai/plugin"));
    let host = Arc::new(JsHost::new(runtime.clone(), discover.root.clone(), dir.clone(), needs_zod));
    let mut cache = SpecCache::open(&dir, fingerprint(&[HOST_SOURCE, PLUGIN_SHIM]));

    let mut to_import = Vec::new();
    for (i, file) in files.iter().enumerate() {
        if let Some(reason) = runtime.cannot_run(file) {
            fail(&mut loaded, file, None, reason);
            continue;
        }
        let Some(stamp) = Stamp::of(file) else {
            fail(&mut loaded, file, None, "cannot read the file".to_string());
            continue;
        };
        if *scope != Scope::Fresh
            && let Some(specs) = cache.get(file, stamp)
        {
            loaded.tools[i] = specs.iter().map(|s| js_tool(s, file, &host, record)).collect();
            continue;
        }
        if let Scope::Tool(name) = scope
            && !may_define(file, name)
        {
            continue;
        }
        to_import.push((i, stamp));
    }
    if to_import.is_empty() {
        return loaded;
    }

    let replies = super::block_on_fresh(import_all(&host, files, &to_import)).unwrap_or_default();
    for ((i, stamp), reply) in to_import.into_iter().zip(replies.into_iter().chain(std::iter::repeat(None))) {
        let file = &files[i];
        let reply = match reply {
            Some(Ok(reply)) => reply,
            Some(Err(e)) => {
                fail(&mut loaded, file, None, e);
                continue;
            }
            None => {
                fail(&mut loaded, file, None, format!("importing took longer than {} s", LOAD_TIMEOUT.as_secs()));
                continue;
            }
        };
        if let Some(error) = reply.get("error") {
            let line = error.get("line").and_then(Value::as_u64).and_then(|l| usize::try_from(l).ok());
            let message = error.get("message").and_then(Value::as_str).unwrap_or("cannot import the file");
            fail(&mut loaded, file, line, format!("cannot import: {message}"));
            cache.remove(file);
            continue;
        }
        let (specs, problems) = check_specs(file, &reply);
        let clean = problems.is_empty();
        for (name, message) in problems {
            loaded.problems.push(Problem { file: file.clone(), line: None, message: message.clone() });
            if let Some(name) = name {
                loaded.unavailable.push(Unavailable { name, file: file.clone(), reason: message });
            }
        }
        loaded.tools[i] = specs.iter().map(|s| js_tool(s, file, &host, record)).collect();
        if clean {
            cache.put(file, stamp, specs);
        } else {
            cache.remove(file);
        }
    }
    cache.save();
    loaded
}

/// Sends every load request at once and collects the replies (`None`: no reply in time).
async fn import_all(
    host: &JsHost,
    files: &[PathBuf],
    to_import: &[(usize, Stamp)],
) -> Vec<Option<Result<Value, String>>> {
    let mut requests = Vec::new();
    for (i, _) in to_import {
        let file = &files[*i];
        let dir = file.parent().unwrap_or(file);
        let message = json!({"type": "load", "file": file, "stem": stem(file)});
        requests.push(host.request(message, "", Some((dir, dir_stamp(dir)))));
    }
    let deadline = tokio::time::Instant::now() + LOAD_TIMEOUT;
    let mut replies = Vec::new();
    for request in requests {
        let reply = match request {
            Err(e) => Some(Err(e)),
            Ok(mut request) => tokio::time::timeout_at(deadline, request.next()).await.ok(),
        };
        replies.push(reply);
    }
    replies
}

/// The valid specs of a load reply, and the problems: (tool name if known, message).
fn check_specs(file: &Path, reply: &Value) -> (Vec<JsSpec>, Vec<(Option<String>, String)>) {
    let mut specs = Vec::new();
    let mut problems: Vec<(Option<String>, String)> = Vec::new();
    for problem in reply.get("problems").and_then(Value::as_array).into_iter().flatten() {
        let export = problem.get("export").and_then(Value::as_str).unwrap_or("default");
        let message = problem.get("message").and_then(Value::as_str).unwrap_or("not a usable tool");
        problems.push((Some(tool_name(file, export)), format!("export `{export}`: {message}")));
    }
    for tool in reply.get("tools").and_then(Value::as_array).into_iter().flatten() {
        let Ok(spec) = serde_json::from_value::<JsSpec>(tool.clone()) else { continue };
        if let Some(problem) = invalid_name(&spec.name) {
            problems.push((None, problem));
            continue;
        }
        if !spec.parameters.is_object() {
            problems.push((
                Some(spec.name.clone()),
                format!("{}: `args` did not convert to a JSON Schema object", spec.name),
            ));
            continue;
        }
        if let Err(e) = jsonschema::validator_for(&spec.parameters) {
            problems
                .push((Some(spec.name.clone()), format!("{}: its arguments' JSON Schema is invalid: {e}", spec.name)));
            continue;
        }
        if let Some(problem) = crate::too_large(&spec.name, &spec.description, &spec.parameters) {
            problems.push((Some(spec.name.clone()), problem));
            continue;
        }
        specs.push(spec);
    }
    // A file that exports no tool (a helper module the tools import) is not a problem: OpenCode
    // ignores exports that are not tools, and so does toolshed.
    (specs, problems)
}

fn tool_name(file: &Path, export: &str) -> String {
    if export == "default" { stem(file) } else { format!("{}_{export}", stem(file)) }
}

fn js_tool(spec: &JsSpec, file: &Path, host: &Arc<JsHost>, record: &Arc<(Acceptance, PathBuf)>) -> Arc<dyn Tool> {
    let parameters = toolshed_core::schema::ensure_object_schema(spec.parameters.clone());
    let spec_full =
        ToolSpec::new(spec.name.clone(), spec.description.clone(), parameters).with_flags(ToolFlags::MUTATING);
    let gate = Gate::new(record, file.parent().unwrap_or(file));
    Arc::new(JsTool {
        spec: spec_full,
        file: file.to_path_buf(),
        export: spec.export.clone(),
        host: host.clone(),
        gate,
    })
}

/// Whether the tools of `file` may include one called `name` (`<file>` or `<file>_<export>`).
fn may_define(file: &Path, name: &str) -> bool {
    let stem = stem(file);
    name == stem || name.strip_prefix(&stem).is_some_and(|rest| rest.starts_with('_'))
}

/// Whether the package `name` is installed for `file` (in a `node_modules` above it).
fn has_package(file: &Path, name: &str) -> bool {
    file.ancestors().skip(1).any(|d| d.join("node_modules").join(name).join("package.json").is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_name_selects_the_files_that_may_define_it() {
        let file = Path::new("/w/.opencode/tools/git.ts");
        assert!(may_define(file, "git"));
        assert!(may_define(file, "git_log"));
        assert!(!may_define(file, "gitlog"));
        assert!(!may_define(file, "read"));
    }

    #[test]
    fn ask_requests_carry_patterns_and_always() {
        let req = permission_request(
            &json!({"permission": "deploy", "patterns": ["prod"], "always": ["*"], "metadata": {"a": 1}}),
        )
        .unwrap();
        assert_eq!(req.permission, "deploy");
        assert_eq!(req.patterns, ["prod"]);
        assert_eq!(req.always, ["*"]);
        assert_eq!(req.metadata["a"], 1);
        assert!(permission_request(&json!({"patterns": []})).is_err());
    }

    #[test]
    fn results_keep_output_title_metadata_and_images() {
        let png = base64::engine::general_purpose::STANDARD.encode([137u8, 80, 78, 71]);
        let reply = json!({
            "type": "result", "output": "done", "metadata": {"n": 2},
            "attachments": [
                {"type": "file", "mime": "image/png", "url": format!("data:image/png;base64,{png}")},
                {"type": "file", "mime": "application/pdf", "url": "https://x/y.pdf", "filename": "y.pdf"}
            ]
        });
        let out = result(reply, Some("live title".into())).unwrap();
        assert_eq!(out.title.as_deref(), Some("live title"));
        assert_eq!(out.metadata["n"], 2);
        assert_eq!(out.attachments, [Attachment::Image { mime_type: "image/png".into(), data: vec![137, 80, 78, 71] }]);
        assert!(out.text.starts_with("done\n[attachment y.pdf omitted"), "{}", out.text);
        assert_eq!(result(json!({"error": "boom"}), None), Err(ToolError::model("boom")));
    }

    #[test]
    fn replies_without_tools_are_no_problem_but_bad_names_are() {
        let (specs, problems) = check_specs(Path::new("/w/t.ts"), &json!({"tools": [], "problems": []}));
        assert!(specs.is_empty());
        assert!(problems.is_empty(), "{problems:?}");
        let reply = json!({"tools": [{"name": "t x", "export": "default", "description": "d", "parameters": {}}], "problems": [{"export": "b", "message": "t_b: `description` must be a string"}]});
        let (specs, problems) = check_specs(Path::new("/w/t.ts"), &reply);
        assert!(specs.is_empty());
        assert_eq!(problems.len(), 2);
        assert_eq!(
            problems[0],
            (Some("t_b".to_string()), "export `b`: t_b: `description` must be a string".to_string())
        );
    }
}
