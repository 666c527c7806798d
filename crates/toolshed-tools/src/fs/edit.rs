//! `edit`: replaces one exact piece of a file, with a documented sequence of looser matchers
//! for the usual slips (see [`matcher`]), and never a destructive guess: ambiguous, oversized
//! and conflicting matches are refused with what the model needs to fix its call.

pub mod matcher;

use schemars::JsonSchema;
use serde::Deserialize;
use toolshed_core::permission::PermissionRequest;
use toolshed_core::tool::{Alias, ToolFlags, TypedTool};
use toolshed_core::{ToolContext, ToolError, ToolOutput, ToolSpec};

use super::{Sniff, TextStyle, blocking, buffers, not_found, plural, sniff, unified_diff};
use matcher::{Applied, Edit, Refusal, Strategy};
use toolshed_path::{self as path, Permitted, ResolvedPath};

/// Largest file edit will load.
const MAX_EDIT_BYTES: u64 = 64 * 1024 * 1024;
/// Diff lines shown in an edit result.
const RESULT_DIFF_LINES: usize = 120;

const DESCRIPTION: &str = "Replaces `old_string` with `new_string` in a file. Copy `old_string` from read's output without the `N: ` prefixes, with just enough context (2-3 lines) to match exactly one place; several matches are refused with their line numbers unless `replace_all`. An empty `old_string` creates a file. One call per change.";

/// Arguments of `edit`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct EditArgs {
    /// The file: relative to the working directory, or absolute.
    #[schemars(description = "")]
    pub file_path: String,
    /// The exact text to replace.
    #[schemars(description = "")]
    pub old_string: String,
    /// The replacement (must differ).
    #[schemars(description = "")]
    pub new_string: String,
    /// Replace every occurrence.
    #[schemars(description = "")]
    pub replace_all: Option<bool>,
    #[serde(skip)]
    #[schemars(skip)]
    permitted: Permitted,
}

/// The `edit` tool.
#[derive(Clone, Copy, Debug, Default)]
pub struct EditTool;

impl TypedTool for EditTool {
    type Args = EditArgs;

    fn name(&self) -> &str {
        "edit"
    }

    // Other agents' names for the file.
    fn aliases(&self) -> &'static [(&'static str, Alias)] {
        &[("path", Alias::Param("file_path")), ("absolute_path", Alias::Param("file_path"))]
    }

    fn description(&self) -> String {
        DESCRIPTION.to_string()
    }

    fn flags(&self) -> ToolFlags {
        ToolFlags::MUTATING
    }

    fn customize(&self, spec: ToolSpec) -> ToolSpec {
        spec.with_permission("edit")
    }

    fn permissions(
        &self,
        spec: &ToolSpec,
        args: &EditArgs,
        ctx: &ToolContext,
    ) -> Result<Vec<PermissionRequest>, ToolError> {
        let resolved = path::resolve_for_write(ctx, &args.file_path)?;
        args.permitted.remember(&resolved);
        let mut requests = resolved.requests(&spec.permission);
        // Its result shows the file's present text (a diff; the lines nearest a miss).
        if let Some(read) = resolved.read_request() {
            requests.insert(requests.len() - 1, read);
        }
        // Whoever is asked sees the change: the diff the edit would make (small files only).
        let request = Request {
            old: args.old_string.clone(),
            new: args.new_string.clone(),
            replace_all: args.replace_all.unwrap_or(false),
        };
        // (Not with an editor's buffers: the disk's text may not be what the edit will change.)
        if ctx.file_access().is_none()
            && let (Some(diff), Some(main)) = (preview(&resolved, &request), requests.last_mut())
        {
            main.metadata.insert("diff".into(), diff.into());
        }
        Ok(requests)
    }

    async fn run(&self, args: EditArgs, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        if args.old_string == args.new_string {
            return Err(ToolError::model(
                "No changes to apply: old_string and new_string are identical. Send the new text as new_string.",
            ));
        }
        let now = path::resolve_for_write(&ctx, &args.file_path)?;
        let resolved = path::confirm(&ctx, &args.permitted, now, "edit").await?;
        let _lock = ctx.lock_path(resolved.path()).await;
        let target = resolved.clone();
        let request =
            Request { old: args.old_string, new: args.new_string, replace_all: args.replace_all.unwrap_or(false) };
        let current = buffers::read_to_change(&ctx, &resolved, "edit").await?;
        let Change { text, mut output } = blocking(move || plan_edit(&target, &request, current)).await?;
        buffers::write(&ctx, &resolved, text, "edit").await?;
        if let Some(note) = ctx.files_changed(&[resolved.path().to_path_buf()]).await {
            output.text.push_str("\n\n");
            output.text.push_str(&note);
        }
        Ok(output)
    }
}

/// What to change.
#[derive(Clone, Debug)]
pub struct Request {
    /// The text to find.
    pub old: String,
    /// Its replacement.
    pub new: String,
    /// Replace every occurrence.
    pub replace_all: bool,
}

/// An edit worked out, not yet written: the file's whole new text and the tool's result.
pub struct Change {
    /// The new text, in the file's byte-order mark and line-ending style.
    pub text: String,
    /// What the model is told once it is written.
    pub output: ToolOutput,
}

/// Works out `request` on the file at `resolved`, whose text is `current` (an editor's buffer)
/// or else read from the disk; the change to write, or the refusal for the model. Callers hold
/// the file's lock.
pub fn plan_edit(resolved: &ResolvedPath, request: &Request, current: Option<String>) -> Result<Change, ToolError> {
    let display = resolved.display();
    let path = resolved.path();
    let meta = match std::fs::metadata(path) {
        Ok(meta) => Some(meta),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(ToolError::model(format!("Cannot edit `{display}`: {e}."))),
    };
    if request.old.is_empty() {
        if meta.is_some() {
            return Err(ToolError::model(format!(
                "old_string is empty, but `{display}` already exists. To change it, send the exact text to replace as old_string; to replace the whole file on purpose, use write."
            )));
        }
        let output = ToolOutput::text(format!(
            "Created `{display}` ({}, {} bytes).",
            plural(request.new.lines().count(), "line"),
            request.new.len()
        ))
        .with_title(display)
        .with_metadata("created", true);
        return Ok(Change { text: request.new.clone(), output });
    }
    let Some(meta) = meta else {
        let err = not_found(resolved, "File");
        return Err(ToolError::model(format!(
            "{err}\nTo create a new file, call edit with an empty old_string, or use write."
        )));
    };
    if meta.is_dir() {
        return Err(ToolError::model(format!(
            "`{display}` is a directory, not a file. Send the path of the file to edit."
        )));
    }
    if let Some(kind) = super::special_kind(meta.file_type()) {
        return Err(super::special_file_error("edit", &display, kind));
    }
    let size = current.as_ref().map_or(meta.len(), |text| text.len() as u64);
    if size > MAX_EDIT_BYTES {
        return Err(ToolError::model(format!(
            "`{display}` is {size} bytes, more than edit handles ({MAX_EDIT_BYTES}). Change it with the shell (for example `sed`) instead."
        )));
    }
    let bytes = match current {
        Some(text) => text.into_bytes(),
        None => super::read_regular(path)
            .map_err(|e| ToolError::model(format!("Cannot edit `{display}`: {e}.")))?
            .map_err(|kind| super::special_file_error("edit", &display, kind))?,
    };
    let sample = &bytes[..bytes.len().min(4096)];
    match sniff(path, sample) {
        Sniff::Text => {}
        Sniff::Image(mime) => {
            return Err(ToolError::model(format!("Cannot edit `{display}`: it is an image ({mime}), not text.")));
        }
        Sniff::Binary(reason) => {
            return Err(ToolError::model(format!("Cannot edit `{display}`: it is a binary file ({reason}).")));
        }
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        ToolError::model(format!(
            "Cannot edit `{display}`: it is not valid UTF-8 text (invalid byte at offset {}).",
            e.utf8_error().valid_up_to()
        ))
    })?;
    let (style, body) = TextStyle::split(&text);
    let (old, new) = inputs(style, &body, request);
    // In a CRLF file a `\r` ending a line of new_string is either a line ending sent twice
    // (edit writes the file's own) or a character meant to stay; which one is a guess.
    if style.crlf && !old.contains('\r') && (new.ends_with('\r') || new.contains("\r\n")) {
        return Err(ToolError::model(format!(
            "Refusing the edit: new_string ends a line with a carriage return (`\\r`) that old_string does not have. `{display}` has CRLF line endings, which edit writes by itself, so a `\\r` in new_string would be an extra character in the file. Nothing was changed. Send new_string without the `\\r`."
        )));
    }
    let applied = matcher::apply(&Edit {
        content: &body,
        old: &old,
        new: &new,
        replace_all: request.replace_all,
        crlf: style.crlf,
    })
    .map_err(|refusal| ToolError::model(explain(&display, refusal)))?;
    // However new_string put it there (an escaped `\r\n`, say), a `\r` before a line break
    // that the file did not have would be written as an extra character.
    if style.crlf && applied.content.matches("\r\n").count() > body.matches("\r\n").count() {
        return Err(ToolError::model(format!(
            "Refusing the edit: new_string (as matched, its escapes read as characters) ends a line with a carriage return (`\\r`) that the text it replaces does not have. `{display}` has CRLF line endings, which edit writes by itself, so the `\\r` would be an extra character in the file. Nothing was changed. Send new_string with plain line breaks, without `\\r`."
        )));
    }
    if applied.content == body {
        return Err(ToolError::model(format!(
            "No changes to apply: the edit leaves `{display}` as it is (the text was matched {}). Check new_string.",
            applied.strategy.describe()
        )));
    }
    Ok(Change { text: style.apply(&applied.content), output: success(resolved, &body, &applied) })
}

/// The largest file whose edit is previewed as a diff for a permission question.
pub(super) const PREVIEW_MAX_BYTES: u64 = 256 * 1024;

/// The diff `request` would make to the file at `resolved` (a new file: all added), for the
/// person asked; `None` when it cannot be worked out cheaply or the edit would be refused.
pub fn preview(resolved: &ResolvedPath, request: &Request) -> Option<String> {
    let path = resolved.path();
    let meta = std::fs::symlink_metadata(path).ok();
    let before = match &meta {
        None if request.old.is_empty() => String::new(),
        Some(m) if m.is_file() && m.len() <= PREVIEW_MAX_BYTES => String::from_utf8(std::fs::read(path).ok()?).ok()?,
        _ => return None,
    };
    let (style, body) = TextStyle::split(&before);
    let after = if request.old.is_empty() {
        normalise_input(&request.new)
    } else {
        let (old, new) = inputs(style, &body, request);
        matcher::apply(&Edit {
            content: &body,
            old: &old,
            new: &new,
            replace_all: request.replace_all,
            crlf: style.crlf,
        })
        .ok()?
        .content
    };
    Some(unified_diff(&body, &after, &resolved.pattern(), 3, RESULT_DIFF_LINES))
}

/// old_string and new_string as matched against `body`: exactly as sent (a leading byte-order
/// mark dropped) when the file is not CRLF and old_string, `\r`s included, is in it (a file of
/// mixed endings gets the bytes sent); else with `\r\n` read as `\n` ([`normalise_input`]).
fn inputs(style: TextStyle, body: &str, request: &Request) -> (String, String) {
    let bomless = |t: &str| t.strip_prefix('\u{feff}').unwrap_or(t).to_string();
    let old = bomless(&request.old);
    if !style.crlf && old.contains("\r\n") && body.contains(&old) {
        return (old, bomless(&request.new));
    }
    (normalise_input(&request.old), normalise_input(&request.new))
}

/// `\r\n` in the model's strings read as `\n` (the file's own endings are restored on write),
/// and a leading byte-order mark dropped.
fn normalise_input(text: &str) -> String {
    text.strip_prefix('\u{feff}').unwrap_or(text).replace("\r\n", "\n")
}

fn success(resolved: &ResolvedPath, before: &str, applied: &Applied) -> ToolOutput {
    let display = resolved.display();
    let count = applied.lines.len();
    let more = if count > 10 { format!(" and {} more", count - 10) } else { String::new() };
    let single = applied.lines.iter().all(|(a, b)| a == b);
    let places: Vec<String> =
        applied.lines.iter().take(10).map(|&(a, b)| if a == b { a.to_string() } else { format!("{a}-{b}") }).collect();
    let noun = if count == 1 && single { "line" } else { "lines" };
    let mut text =
        format!("Edited `{display}`: replaced {} ({noun} {}{more}).", plural(count, "occurrence"), places.join(", "));
    if applied.strategy != Strategy::Exact {
        text.push_str(&format!(" old_string was matched {}", applied.strategy.describe()));
        match &applied.reindent {
            Some(how) => text.push_str(&format!("; new_string was {how}.")),
            None => text.push('.'),
        }
    }
    if applied.stripped_line_numbers {
        let from = if applied.stripped_from_new { "old_string and new_string" } else { "old_string" };
        text.push_str(&format!(
            " Line-number prefixes copied from read output were removed from {from}; do not include them."
        ));
    }
    let diff = unified_diff(before, &applied.content, &resolved.pattern(), 3, RESULT_DIFF_LINES);
    text.push_str("\n\n");
    text.push_str(diff.trim_end());
    ToolOutput::text(text)
        .with_title(display)
        .with_metadata("strategy", applied.strategy.name())
        .with_metadata("replacements", count)
        .with_metadata("diff", diff)
}

/// The model-facing text of a refusal.
pub fn explain(display: &str, refusal: Refusal) -> String {
    match refusal {
        Refusal::NotFound { closest: None } => format!(
            "Could not find old_string in `{display}`, and no part of the file looks like it. Read the file (or grep for a distinctive word) and copy old_string exactly from it."
        ),
        Refusal::NotFound { closest: Some(c) } => {
            let range =
                if c.first == c.last { format!("line {}", c.first) } else { format!("lines {}-{}", c.first, c.last) };
            let diff = closest_diff(&c.old, &c.text);
            let offset = c.first.saturating_sub(2).max(1);
            format!(
                "Could not find old_string in `{display}`. The most similar text is at {range}; it differs like this (- old_string, + the file):\n{diff}\nCopy old_string exactly from the file (read it with offset={offset} limit={}) and call edit again.",
                c.last - c.first + 5
            )
        }
        Refusal::Ambiguous { strategy, lines } => {
            let how = if strategy == Strategy::Exact { String::new() } else { format!(" ({})", strategy.describe()) };
            let mut distinct = lines.clone();
            distinct.dedup();
            let shown: Vec<String> = distinct.iter().take(20).map(usize::to_string).collect();
            let more = if distinct.len() > 20 { format!(" and {} more", distinct.len() - 20) } else { String::new() };
            let at = if distinct.len() == 1 { "line" } else { "lines" };
            let shared = if distinct.len() < lines.len() { " (more than one on a line)" } else { "" };
            format!(
                "old_string matches {} places in `{display}`{how}, starting at {at} {}{more}{shared}. Include more surrounding lines in old_string so it matches exactly one place, or set replace_all to true to change all of them.",
                lines.len(),
                shown.join(", ")
            )
        }
        Refusal::TooLarge { strategy, first, last, old_lines } => format!(
            "Refusing the edit: the only text matching old_string ({}) spans lines {first}-{last} of `{display}` ({} lines), far more than old_string's {}, so replacing it could destroy code you did not mean to touch. Read those lines and send the exact text to replace.",
            strategy.describe(),
            last - first + 1,
            plural(old_lines, "line")
        ),
        Refusal::NewString { detail } => format!("Nothing was changed in `{display}`: {detail}"),
        Refusal::Moved { line, found } => {
            let shown: Vec<String> = found.iter().take(20).map(usize::to_string).collect();
            let at = if found.len() == 1 { "line" } else { "lines" };
            format!(
                "Refusing the edit: old_string starts with read's line numbers, which put it at line {line} of `{display}`, but the text at line {line} differs from old_string (it matches at {at} {} instead). Nothing was changed. The file may have changed since you read it: read it again, and send old_string exactly as the file has it now, without the `N: ` prefixes.",
                shown.join(", ")
            )
        }
        Refusal::Conflict { strategy, first, last, detail } => format!(
            "Refusing the edit: old_string only roughly matches lines {first}-{last} of `{display}` ({}), and {detail}. Nothing was changed. Read lines {first}-{last} and send old_string exactly as the file has it.",
            strategy.describe()
        ),
    }
}

/// A short diff from `old` (what the model sent) to `found` (the file's text), lines marked
/// `-` and `+`.
fn closest_diff(old: &str, found: &str) -> String {
    let diff = similar::TextDiff::configure().timeout(std::time::Duration::from_millis(200)).diff_lines(old, found);
    let mut out = String::new();
    for (lines, change) in diff.iter_all_changes().enumerate() {
        if lines >= 40 {
            out.push_str("...\n");
            break;
        }
        let sign = match change.tag() {
            similar::ChangeTag::Delete => '-',
            similar::ChangeTag::Insert => '+',
            similar::ChangeTag::Equal => ' ',
        };
        let line = change.value().trim_end_matches('\n');
        out.push(sign);
        out.push_str(&super::cut_line(line, 300));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests;
