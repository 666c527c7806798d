//! `lsp`: asks the file's language server for diagnostics, a definition, references, hover
//! text or symbols, and answers in `path:line:col: text` lines.

use std::sync::Arc;

use lsp_types::request::{DocumentSymbolRequest, GotoDefinition, HoverRequest, References, WorkspaceSymbolRequest};
use lsp_types::{
    DocumentSymbol, DocumentSymbolParams, DocumentSymbolResponse, GotoDefinitionParams, GotoDefinitionResponse,
    HoverContents, HoverParams, Location, MarkedString, OneOf, PartialResultParams, Position, ReferenceContext,
    ReferenceParams, TextDocumentIdentifier, TextDocumentPositionParams, WorkDoneProgressParams, WorkspaceSymbolParams,
    WorkspaceSymbolResponse,
};
use schemars::JsonSchema;
use serde::Deserialize;
use toolshed_core::permission::PermissionRequest;
use toolshed_core::tool::{ToolFlags, TypedTool};
use toolshed_core::{ToolContext, ToolError, ToolOutput, ToolSpec};

use super::client::{Server, Synced, WaitError, seconds};
use super::format::{Files, severity_name, shorten, symbol_kind_name};
use super::position::{line_at, uri_path, utf16_offset};
use super::rpc::RpcError;
use super::{Lookup, LspService};
use toolshed_path::{self as path, Permitted, ResolvedPath};

/// Of the time left when a question is asked, at most this much is kept for the question itself
/// when waiting for the server to finish loading the project.
const SETTLE_RESERVE: std::time::Duration = std::time::Duration::from_secs(5);

/// Locations, symbols or diagnostics listed; the rest are counted.
pub const MAX_RESULTS: usize = 100;
/// Longest hover text shown, in characters.
const MAX_HOVER_CHARS: usize = 4000;

const DESCRIPTION: &str = "Asks a language server: diagnostics of file_path; definition, references or hover of the symbol at line/character; document_symbols; workspace_symbols matching `query`. `line` and `character` are 1-based, as read shows lines, and count characters. A server's first call may take seconds.";

/// What to ask.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[schemars(description = "")]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)] // variant docs would turn the schema's plain `enum` into a `oneOf`
pub enum Operation {
    Diagnostics,
    Definition,
    References,
    Hover,
    DocumentSymbols,
    WorkspaceSymbols,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Operation::Diagnostics => "diagnostics",
            Operation::Definition => "definition",
            Operation::References => "references",
            Operation::Hover => "hover",
            Operation::DocumentSymbols => "document_symbols",
            Operation::WorkspaceSymbols => "workspace_symbols",
        }
    }

    fn needs_position(self) -> bool {
        matches!(self, Operation::Definition | Operation::References | Operation::Hover)
    }
}

/// Arguments of `lsp`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct LspArgs {
    /// What to ask.
    #[schemars(description = "")]
    pub operation: Operation,
    /// The file: relative to the working directory, or absolute.
    #[schemars(description = "")]
    pub file_path: String,
    /// The symbol's line.
    #[schemars(description = "")]
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub line: Option<u32>,
    /// The symbol's column.
    #[schemars(description = "")]
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub character: Option<u32>,
    /// Part of a symbol's name.
    #[serde(default)]
    #[schemars(description = "")]
    pub query: Option<String>,
    #[serde(skip)]
    #[schemars(skip)]
    permitted: Permitted,
}

/// The `lsp` tool, answering from a shared [`LspService`].
#[derive(Clone)]
pub struct LspTool {
    service: Arc<LspService>,
}

impl LspTool {
    /// The tool over `service`'s servers.
    pub fn new(service: Arc<LspService>) -> Self {
        LspTool { service }
    }
}

impl TypedTool for LspTool {
    type Args = LspArgs;

    fn name(&self) -> &str {
        "lsp"
    }

    fn description(&self) -> String {
        DESCRIPTION.to_string()
    }

    fn flags(&self) -> ToolFlags {
        ToolFlags::READ_ONLY
    }

    fn permissions(
        &self,
        spec: &ToolSpec,
        args: &LspArgs,
        ctx: &ToolContext,
    ) -> Result<Vec<PermissionRequest>, ToolError> {
        let resolved = path::resolve(ctx, &args.file_path)?;
        args.permitted.remember(&resolved);
        let mut requests = resolved.requests(&spec.permission);
        // The answers show the file's contents (its symbols, lines, hovers): the `read` rules
        // apply to it as to `read`.
        if spec.permission != "read" {
            requests.push(PermissionRequest::new("read", [resolved.pattern()]));
        }
        Ok(requests)
    }

    async fn run(&self, args: LspArgs, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let now = path::resolve(&ctx, &args.file_path)?;
        let resolved = path::confirm(&ctx, &args.permitted, now, "lsp").await?;
        let request = Request::check(&args, &resolved)?;
        let display = resolved.display();
        let (server, deadline, restarted) = match self.service.server_for(resolved.path(), ctx.root()).await {
            Lookup::Ready { server, deadline, restarted } => (server, deadline, restarted),
            Lookup::NoServer(why) => {
                return Err(ToolError::model(format!("No language server for `{display}`: {why}")));
            }
            Lookup::Unavailable { server, reason } => {
                return Err(ToolError::model(format!(
                    "The language server for `{display}` is unavailable: {server} {reason}."
                )));
            }
        };
        let synced = server.sync(resolved.path()).await.map_err(ToolError::model)?;
        let ask = Ask { server: &server, synced: &synced, resolved: &resolved, ctx: &ctx, deadline };
        let text = tokio::select! {
            text = ask.answer(&request) => text?,
            () = ctx.cancellation().cancelled() => return Err(ToolError::model("The lsp call was cancelled.")),
        };
        let text = match &restarted {
            Some(note) => format!("({note}.)\n{text}"),
            None => text,
        };
        Ok(ToolOutput::text(text)
            .with_title(format!("{} {display}", args.operation.as_str()))
            .with_metadata("server", server.name())
            .with_metadata("restarted", restarted.is_some()))
    }
}

/// The checked arguments of one call.
struct Request {
    operation: Operation,
    /// 0-based line and 0-based character index, for the position operations.
    at: Option<(u32, usize)>,
    query: String,
}

impl Request {
    fn check(args: &LspArgs, resolved: &ResolvedPath) -> Result<Request, ToolError> {
        let op = args.operation;
        let at = if op.needs_position() {
            match (args.line, args.character) {
                (Some(line), Some(character)) if line >= 1 && character >= 1 => {
                    Some((line - 1, character as usize - 1))
                }
                (Some(_), Some(_)) => {
                    return Err(ToolError::model(
                        "`line` and `character` count from 1. Send the position as read shows it (line 1 is the first line).",
                    ));
                }
                _ => {
                    return Err(ToolError::model(format!(
                        "The {} operation needs `line` and `character`: the 1-based line and column of the symbol, as read shows them.",
                        op.as_str()
                    )));
                }
            }
        } else {
            None
        };
        let query = args.query.clone().unwrap_or_default();
        if op == Operation::WorkspaceSymbols && query.trim().is_empty() {
            return Err(ToolError::model(
                "The workspace_symbols operation needs a non-empty `query`: part of the symbol names to look for.",
            ));
        }
        if resolved.is_dir() {
            return Err(ToolError::model(format!(
                "`{}` is a directory. Send the path of a source file (for workspace_symbols, any file of the language).",
                resolved.display()
            )));
        }
        if !resolved.exists() {
            return Err(ToolError::model(format!(
                "File `{}` not found. Check the path (glob can find files by name).",
                resolved.display()
            )));
        }
        // A FIFO would block the open forever, a device would never end.
        if let Some(kind) =
            std::fs::metadata(resolved.path()).ok().and_then(|m| toolshed_path::special_kind(m.file_type()))
        {
            return Err(toolshed_path::special_file_error("hand to a language server", &resolved.display(), kind));
        }
        Ok(Request { operation: op, at, query })
    }
}

/// One question to one server about one synced file.
struct Ask<'a> {
    server: &'a Server,
    synced: &'a Synced,
    resolved: &'a ResolvedPath,
    ctx: &'a ToolContext,
    deadline: tokio::time::Instant,
}

impl Ask<'_> {
    async fn answer(&self, request: &Request) -> Result<String, ToolError> {
        if request.operation == Operation::Diagnostics {
            return self.diagnostics().await;
        }
        let position = if request.at.is_some() { Some(self.position(request)?) } else { None };
        // Asked before the server has loaded the project, the answer would be "no definition"
        // or `any`: wait for it, keeping part of the time for the question itself.
        let now = tokio::time::Instant::now();
        let reserve = (self.deadline.saturating_duration_since(now) / 4).min(SETTLE_RESERVE);
        let ready = self.server.settle(self.synced, self.deadline - reserve).await;
        let text = match (request.operation, position) {
            (Operation::Definition, Some(at)) => self.definition(at).await,
            (Operation::References, Some(at)) => self.references(at).await,
            (Operation::Hover, Some(at)) => self.hover(at).await,
            (Operation::DocumentSymbols, _) => self.document_symbols().await,
            (Operation::WorkspaceSymbols, _) => self.workspace_symbols(&request.query).await,
            _ => Err(ToolError::model("A position is needed for this operation.")),
        }?;
        Ok(if ready {
            text
        } else {
            format!(
                "({} was still loading the project; this answer may be incomplete. Ask again in a moment if it looks wrong.)\n{text}",
                self.server.name()
            )
        })
    }

    fn files(&self) -> Files {
        Files::new(self.ctx.root()).with_text(self.resolved.path(), &self.synced.text).reading_as(self.ctx)
    }

    /// The LSP position of the request, and the 1-based `path:line:col` and word it names.
    fn position(&self, request: &Request) -> Result<(Position, String), ToolError> {
        let Some((line, index)) = request.at else {
            return Err(ToolError::model("A position is needed for this operation."));
        };
        let display = self.resolved.display();
        let lines = self.synced.text.lines().count().max(1);
        let Some(text) = line_at(&self.synced.text, line) else {
            return Err(ToolError::model(format!(
                "Line {} is past the end of `{display}`, which has {lines} lines. Send a line from 1 to {lines}.",
                line + 1
            )));
        };
        let chars = text.chars().count();
        if index > chars {
            return Err(ToolError::model(format!(
                "Character {} is past the end of line {} of `{display}`, which has {chars} characters. Send a column from 1 to {}.",
                index + 1,
                line + 1,
                chars.max(1)
            )));
        }
        let word = word_at(text, index);
        let place = format!("{display}:{}:{}", line + 1, index + 1);
        let named = if word.is_empty() { place } else { format!("`{word}` at {place}") };
        Ok((Position::new(line, utf16_offset(text, index)), named))
    }

    fn text_position(&self, position: Position) -> TextDocumentPositionParams {
        TextDocumentPositionParams::new(TextDocumentIdentifier::new(self.synced.uri.clone()), position)
    }

    /// Sends one request; a failure becomes an error for the model.
    async fn call<R: lsp_types::request::Request>(&self, params: R::Params) -> Result<R::Result, ToolError> {
        match self.server.connection().call::<R>(params, self.deadline).await {
            Ok(answer) => Ok(answer),
            Err(e) => Err(self.failed(e).await),
        }
    }

    async fn failed(&self, e: RpcError) -> ToolError {
        let name = self.server.name();
        ToolError::model(match e {
            RpcError::Timeout => format!(
                "{name} did not answer within {}. It may still be loading the project; try again in a moment.",
                seconds(self.server.spec().timeout)
            ),
            RpcError::Closed(_) => format!(
                "{name} stopped while answering ({}). Call again to restart it.",
                self.server.death().await.unwrap_or_else(|| "connection closed".into())
            ),
            RpcError::Server { message, .. } => format!("{name} could not answer: {message}"),
            RpcError::Decode(why) => format!("{name} sent an answer toolshed cannot read: {why}"),
        })
    }

    fn unsupported(&self, what: &str) -> ToolError {
        ToolError::model(format!("{} does not support {what}; try another operation.", self.server.name()))
    }

    async fn diagnostics(&self) -> Result<String, ToolError> {
        let name = self.server.name();
        let display = self.resolved.display();
        let mut all = match self.server.diagnostics(self.synced, self.deadline).await {
            Ok(all) => all,
            Err(WaitError::Timeout) => {
                return Err(ToolError::model(format!(
                    "{name} did not report diagnostics for `{display}` within {}. It may still be loading the project; try again in a moment.",
                    seconds(self.server.spec().timeout)
                )));
            }
            Err(WaitError::Exited(death)) => {
                return Err(ToolError::model(format!("{name} {death}. Call again to restart it.")));
            }
        };
        all.retain(|d| severity_name(d.severity) != "hint");
        all.sort_by_key(|d| {
            (
                d.severity.map_or(1, |s| match s {
                    lsp_types::DiagnosticSeverity::ERROR => 1,
                    lsp_types::DiagnosticSeverity::WARNING => 2,
                    _ => 3,
                }),
                d.range.start.line,
                d.range.start.character,
            )
        });
        if all.is_empty() {
            return Ok(format!("{name} reports no errors or warnings in `{display}`."));
        }
        let mut tally: Vec<String> = Vec::new();
        for kind in ["error", "warning", "info"] {
            let n = all.iter().filter(|d| severity_name(d.severity) == kind).count();
            if n > 0 {
                tally.push(count(n, kind));
            }
        }
        let mut files = self.files();
        let mut out = format!("{name} reports {} in `{display}`:", tally.join(", "));
        for d in all.iter().take(MAX_RESULTS) {
            out.push('\n');
            out.push_str(&files.diagnostic(self.resolved.path(), d));
        }
        more(&mut out, all.len(), "diagnostics");
        Ok(out)
    }

    async fn definition(&self, (position, named): (Position, String)) -> Result<String, ToolError> {
        if self.server.capabilities().definition_provider.is_none() {
            return Err(self.unsupported("definition"));
        }
        let params = GotoDefinitionParams {
            text_document_position_params: self.text_position(position),
            work_done_progress_params: WorkDoneProgressParams::default(),
            partial_result_params: PartialResultParams::default(),
        };
        let answer = self.call::<GotoDefinition>(params).await?;
        let locations: Vec<(lsp_types::Uri, Position)> = match answer {
            None => Vec::new(),
            Some(GotoDefinitionResponse::Scalar(l)) => vec![(l.uri, l.range.start)],
            Some(GotoDefinitionResponse::Array(ls)) => ls.into_iter().map(|l| (l.uri, l.range.start)).collect(),
            Some(GotoDefinitionResponse::Link(links)) => {
                links.into_iter().map(|l| (l.target_uri, l.target_selection_range.start)).collect()
            }
        };
        if locations.is_empty() {
            return Ok(format!("No definition found for {named}."));
        }
        Ok(self.list(&format!("Definition of {named}:"), locations, "definitions"))
    }

    async fn references(&self, (position, named): (Position, String)) -> Result<String, ToolError> {
        if self.server.capabilities().references_provider.is_none() {
            return Err(self.unsupported("references"));
        }
        let params = ReferenceParams {
            text_document_position: self.text_position(position),
            work_done_progress_params: WorkDoneProgressParams::default(),
            partial_result_params: PartialResultParams::default(),
            context: ReferenceContext { include_declaration: true },
        };
        let answer = self.call::<References>(params).await?;
        let mut locations: Vec<Location> = answer.unwrap_or_default();
        if locations.is_empty() {
            return Ok(format!("No references found for {named}."));
        }
        locations.sort_by(|a, b| {
            (uri_path(&a.uri), a.range.start.line, a.range.start.character).cmp(&(
                uri_path(&b.uri),
                b.range.start.line,
                b.range.start.character,
            ))
        });
        locations.dedup_by(|a, b| a.uri == b.uri && a.range.start == b.range.start);
        let header = format!("{} to {named} (the definition included):", count(locations.len(), "reference"));
        Ok(self.list(&header, locations.into_iter().map(|l| (l.uri, l.range.start)).collect(), "references"))
    }

    async fn hover(&self, (position, named): (Position, String)) -> Result<String, ToolError> {
        if self.server.capabilities().hover_provider.is_none() {
            return Err(self.unsupported("hover"));
        }
        let params = HoverParams {
            text_document_position_params: self.text_position(position),
            work_done_progress_params: WorkDoneProgressParams::default(),
        };
        let answer = self.call::<HoverRequest>(params).await?;
        let text = answer.map(|h| hover_text(h.contents)).unwrap_or_default();
        let text = text.trim();
        if text.is_empty() {
            return Ok(format!("No hover information for {named}."));
        }
        let mut shown: String = text.chars().take(MAX_HOVER_CHARS).collect();
        if text.chars().count() > MAX_HOVER_CHARS {
            shown.push_str("\n… (cut)");
        }
        Ok(shown)
    }

    async fn document_symbols(&self) -> Result<String, ToolError> {
        if self.server.capabilities().document_symbol_provider.is_none() {
            return Err(self.unsupported("document symbols"));
        }
        let params = DocumentSymbolParams {
            text_document: TextDocumentIdentifier::new(self.synced.uri.clone()),
            work_done_progress_params: WorkDoneProgressParams::default(),
            partial_result_params: PartialResultParams::default(),
        };
        let answer = self.call::<DocumentSymbolRequest>(params).await?;
        let display = self.resolved.display();
        let mut files = self.files();
        let mut lines = Vec::new();
        match answer {
            None => {}
            Some(DocumentSymbolResponse::Nested(symbols)) => {
                nested_symbols(&mut files, self.resolved.path(), &symbols, 0, &mut lines);
            }
            Some(DocumentSymbolResponse::Flat(symbols)) => {
                for s in symbols {
                    let at = files.position(self.resolved.path(), s.location.range.start);
                    let within = s.container_name.map(|c| format!(" (in {c})")).unwrap_or_default();
                    lines.push(format!("{at}: {} {}{within}", symbol_kind_name(s.kind), s.name));
                }
            }
        }
        if lines.is_empty() {
            return Ok(format!("{} reports no symbols in `{display}`.", self.server.name()));
        }
        let total = lines.len();
        let mut out = format!("{} in `{display}`:", count(total, "symbol"));
        for line in lines.iter().take(MAX_RESULTS) {
            out.push('\n');
            out.push_str(line);
        }
        more(&mut out, total, "symbols");
        Ok(out)
    }

    async fn workspace_symbols(&self, query: &str) -> Result<String, ToolError> {
        if self.server.capabilities().workspace_symbol_provider.is_none() {
            return Err(self.unsupported("workspace symbols"));
        }
        let params = WorkspaceSymbolParams {
            partial_result_params: PartialResultParams::default(),
            work_done_progress_params: WorkDoneProgressParams::default(),
            query: query.to_string(),
        };
        let answer = self.call::<WorkspaceSymbolRequest>(params).await?;
        let found: Vec<FoundSymbol> = match answer {
            None => Vec::new(),
            Some(WorkspaceSymbolResponse::Flat(symbols)) => symbols
                .into_iter()
                .map(|s| (s.name, s.kind, s.container_name, Some((s.location.uri, s.location.range.start))))
                .collect(),
            Some(WorkspaceSymbolResponse::Nested(symbols)) => symbols
                .into_iter()
                .map(|s| {
                    let at = match s.location {
                        OneOf::Left(l) => Some((l.uri, l.range.start)),
                        OneOf::Right(w) => Some((w.uri, Position::new(0, 0))),
                    };
                    (s.name, s.kind, s.container_name, at)
                })
                .collect(),
        };
        if found.is_empty() {
            return Ok(format!("No symbols matching `{query}` found by {}.", self.server.name()));
        }
        let mut files = self.files();
        let total = found.len();
        let mut out = format!("{} matching `{query}`:", count(total, "symbol"));
        for (name, kind, container, at) in found.into_iter().take(MAX_RESULTS) {
            let within = container.filter(|c| !c.is_empty()).map(|c| format!(" (in {c})")).unwrap_or_default();
            let place = match at.as_ref().and_then(|(uri, pos)| uri_path(uri).map(|p| files.position(&p, *pos))) {
                Some(place) => place,
                None => at.map(|(uri, _)| uri.as_str().to_string()).unwrap_or_default(),
            };
            out.push_str(&format!("\n{place}: {} {name}{within}", symbol_kind_name(kind)));
        }
        more(&mut out, total, "symbols");
        Ok(out)
    }

    fn list(&self, header: &str, locations: Vec<(lsp_types::Uri, Position)>, what: &str) -> String {
        let mut files = self.files();
        let total = locations.len();
        let mut out = header.to_string();
        for (uri, position) in locations.into_iter().take(MAX_RESULTS) {
            out.push('\n');
            out.push_str(&files.location(&uri, position));
        }
        more(&mut out, total, what);
        out
    }
}

/// A workspace symbol: name, kind, container and where it is.
type FoundSymbol = (String, lsp_types::SymbolKind, Option<String>, Option<(lsp_types::Uri, Position)>);

fn nested_symbols(
    files: &mut Files,
    path: &std::path::Path,
    symbols: &[DocumentSymbol],
    depth: usize,
    out: &mut Vec<String>,
) {
    for s in symbols {
        let at = files.position(path, s.selection_range.start);
        let detail = s.detail.as_deref().map(str::trim).filter(|d| !d.is_empty()).map(|d| format!(" {}", shorten(d)));
        out.push(format!(
            "{at}: {}{} {}{}",
            "  ".repeat(depth),
            symbol_kind_name(s.kind),
            s.name,
            detail.unwrap_or_default()
        ));
        if let Some(children) = &s.children {
            nested_symbols(files, path, children, depth + 1, out);
        }
    }
}

fn hover_text(contents: HoverContents) -> String {
    let marked = |m: MarkedString| match m {
        MarkedString::String(s) => s,
        MarkedString::LanguageString(l) => format!("```{}\n{}\n```", l.language, l.value),
    };
    match contents {
        HoverContents::Scalar(m) => marked(m),
        HoverContents::Array(ms) => ms.into_iter().map(marked).collect::<Vec<_>>().join("\n\n"),
        HoverContents::Markup(m) => m.value,
    }
}

/// The identifier around character `index` of `line` (empty if there is none).
fn word_at(line: &str, index: usize) -> String {
    let chars: Vec<char> = line.chars().collect();
    let is_word = |c: char| c.is_alphanumeric() || c == '_' || c == '$';
    if chars.get(index).is_none_or(|c| !is_word(*c)) {
        return String::new();
    }
    let start = chars[..index].iter().rposition(|c| !is_word(*c)).map_or(0, |p| p + 1);
    let end = chars[index..].iter().position(|c| !is_word(*c)).map_or(chars.len(), |p| index + p);
    chars[start..end].iter().collect()
}

/// `1 error`, `3 errors`.
pub fn count(n: usize, noun: &str) -> String {
    if n == 1 { format!("1 {noun}") } else { format!("{n} {noun}s") }
}

fn more(out: &mut String, total: usize, what: &str) {
    if total > MAX_RESULTS {
        out.push_str(&format!("\n… and {} more {what} not shown.", total - MAX_RESULTS));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_found_around_any_character_of_a_name() {
        assert_eq!(word_at("y: int = greet(s)", 9), "greet");
        assert_eq!(word_at("y: int = greet(s)", 13), "greet");
        assert_eq!(word_at("y: int = greet(s)", 14), "");
        assert_eq!(word_at("s = \"🎉\"; naïve = 1", 9), "naïve");
        assert_eq!(word_at("", 0), "");
    }

    #[test]
    fn the_schema_is_what_the_model_reads() {
        use toolshed_core::tool::{Tool, Typed};
        let tool = Typed::new(LspTool::new(Arc::new(LspService::from_table(Default::default()))));
        let spec = tool.spec();
        assert_eq!(spec.permission, "lsp");
        assert!(spec.flags.read_only);
        insta::assert_json_snapshot!("parameters", spec.parameters);
        insta::assert_snapshot!(
            "description",
            format!("{}\n\nbytes: {}", spec.description, toolshed_core::render::definition_bytes(spec))
        );
    }
}
