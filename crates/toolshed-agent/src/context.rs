//! Keeping a session inside its model's context window. Nothing here changes what is stored:
//! pruning and compaction only shape what is *sent* (architecture invariant).
//!
//! - **Accounting.** Each response's usage is stored beside the estimate (4 bytes a token) of
//!   the request that got it; their ratio calibrates the estimate of the next request, so the
//!   size the provider really counts is followed, not a guess ([`calibration`], [`project`]).
//! - **Pruning.** When the next request would pass `compact_at` of the window, the outputs of
//!   old tool calls — beyond a protected recent window, a quarter of the context — are sent as a
//!   one-line stub saying how to get them back ([`prune_point`]). The boundary is stored and
//!   only moves forward, so the request's prefix stays the same from step to step (providers'
//!   prompt caches keep working).
//! - **Compaction.** If pruning is not enough, the older history is summarised by the same
//!   model ([`summary_request`]) and what is sent becomes one block — the user's own messages
//!   verbatim, the summary, the files the session changed — followed by the most recent
//!   messages verbatim ([`view`]). The todo list is in every system prompt already.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use serde_json::Value;
use toolshed_core::tool::ToolSpec;
use toolshed_llm::{Message, Part, Request, Role};

use crate::store::{CallState, Compaction, StoredMessage, StoredPart, history_of};

/// What one image is counted as against the context window: about what the providers charge
/// for a large one (Anthropic caps an image near 1,600 tokens), not its base64 length.
pub const IMAGE_TOKENS: u64 = 1_600;

/// The default `[session] compact_at`: the share of the context window a request may reach
/// before old tool outputs are pruned and, if that is not enough, the history is summarised.
pub const DEFAULT_COMPACT_AT: f64 = 0.85;

/// Tool outputs that are never pruned: a skill's text is instructions the model goes on
/// following.
const NEVER_PRUNED: &[&str] = &["skill"];

/// Outputs shorter than this are not worth a stub.
const STUB_WORTHY_BYTES: usize = 400;

/// The most files a compacted request lists as changed.
pub const MAX_FILES_LISTED: usize = 40;

/// How much of each tool output a summary request shows, tried in turn until it fits.
const SUMMARY_OUTPUT_CUTS: [usize; 4] = [2_000, 600, 150, 0];

/// The sizes that follow from a model's context window.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Budget {
    /// The window, in tokens.
    pub window: u64,
    /// The share of it a request may reach before pruning and compaction start.
    pub compact_at: f64,
}

impl Budget {
    /// The size, in tokens, past which the next request is pruned or compacted.
    pub fn trigger(&self) -> u64 {
        (self.window as f64 * self.compact_at) as u64
    }

    /// The tokens of most recent tool outputs that are never pruned, and the least a pruning
    /// must drop to be worth changing the request's prefix: a quarter and a tenth of the
    /// window — or, when the system prompt and tools (`fixed` tokens) leave less room under the
    /// trigger, half and a quarter of that room, so a small window prunes before it summarises.
    pub fn pruning(&self, fixed: u64) -> (u64, u64) {
        let room = self.trigger().saturating_sub(fixed);
        ((self.window / 4).min(room / 2), (self.window / 10).min(room / 4))
    }

    /// The longest summary asked for, in tokens.
    pub fn summary_tokens(&self) -> u64 {
        (self.window / 8).clamp(256, 4_096)
    }

    /// Room for the user's own messages in a compacted request (the first and the latest are
    /// always there whatever their size).
    pub fn user_messages_tokens(&self) -> u64 {
        self.window / 8
    }
}

/// Tokens of `bytes` bytes of text, at 4 bytes a token.
pub fn tokens_of(bytes: usize) -> u64 {
    bytes.div_ceil(4) as u64
}

/// The estimated size of a request in tokens: its text at 4 bytes a token (system prompt,
/// messages as JSON, tool definitions), and [`IMAGE_TOKENS`] an image whatever its size.
pub fn estimate(system: &str, messages: &[Message], tools: &[ToolSpec]) -> u64 {
    let images = messages.iter().flat_map(|m| &m.parts).flat_map(|p| match p {
        Part::ToolResult(r) => r.images.as_slice(),
        Part::Image(image) => std::slice::from_ref(image),
        _ => &[],
    });
    let (image_count, image_bytes) = images.fold((0u64, 0usize), |(n, b), i| (n + 1, b + i.data_base64.len()));
    let bytes = system.len()
        + serde_json::to_string(messages).map_or(0, |s| s.len()).saturating_sub(image_bytes)
        + tools.iter().map(toolshed_core::render::definition_bytes).sum::<usize>();
    tokens_of(bytes) + image_count * IMAGE_TOKENS
}

/// [`estimate`] of a whole request.
pub fn estimate_request(request: &Request) -> u64 {
    estimate(&request.system, &request.messages, &request.tools)
}

/// How many tokens the provider counted per estimated token on the session's last response
/// that said (1 when none did). A count under half the estimate is not believed (a server that
/// reports a constant, or only the uncached part): the estimate stands. The ratio is kept
/// within 0.8–4, so one odd count cannot run away and a provider that counts fewer tokens than
/// the estimate only ever makes compaction a little early, never late.
pub fn calibration(messages: &[StoredMessage]) -> f64 {
    let last = messages.iter().rev().find_map(|m| {
        let counted = m.usage?.input_tokens;
        let estimated = m.request_tokens?;
        (counted > 0 && estimated > 0).then(|| counted as f64 / estimated as f64)
    });
    match last {
        Some(ratio) if ratio >= 0.5 => ratio.clamp(0.8, 4.0),
        _ => 1.0,
    }
}

/// The size the provider will count for a request estimated at `estimate`.
pub fn project(estimate: u64, ratio: f64) -> u64 {
    (estimate as f64 * ratio).ceil() as u64
}

/// What the model is sent: the stored messages from the latest compaction's `kept_from` on,
/// outputs of calls in messages up to `pruned_through` stubbed, behind the compaction's block.
pub fn view(
    stored: &[StoredMessage],
    compaction: Option<&Compaction>,
    pruned_through: i64,
    budget: &Budget,
) -> Vec<Message> {
    let kept_from = compaction.map_or(i64::MIN, |c| c.kept_from);
    let tail: Vec<StoredMessage> = stored
        .iter()
        .filter(|m| m.seq >= kept_from)
        .map(|m| if m.seq <= pruned_through { pruned(m) } else { m.clone() })
        .collect();
    let mut out = history_of(&tail);
    if let Some(c) = compaction {
        let block = block(stored, c, budget);
        match out.first_mut() {
            // Two user messages in a row are one turn: the block goes in front of the prompt.
            Some(first)
                if first.role == Role::User && !first.parts.iter().any(|p| matches!(p, Part::ToolResult(_))) =>
            {
                first.parts.insert(0, Part::Text { text: format!("{block}\n\n---\n\n") });
            }
            _ => out.insert(0, Message::user(block)),
        }
    }
    out
}

/// A stored message with the outputs of its finished calls replaced by stubs.
fn pruned(m: &StoredMessage) -> StoredMessage {
    let mut m = m.clone();
    for part in &mut m.parts {
        if let StoredPart::Tool { tool, state, output: Some(output), images, metadata, .. } = part
            && prunable(tool, *state, output.len())
        {
            *output = stub(tool, output.len(), metadata);
            images.clear();
        }
    }
    m
}

fn prunable(tool: &str, state: CallState, bytes: usize) -> bool {
    matches!(state, CallState::Completed | CallState::Error)
        && !NEVER_PRUNED.contains(&tool)
        && bytes >= STUB_WORTHY_BYTES
}

/// What the model sees instead of a pruned output: what was dropped and how to get it back.
fn stub(tool: &str, bytes: usize, metadata: &Value) -> String {
    let again = match metadata.get("output_path").and_then(Value::as_str) {
        Some(path) => format!("read {path} (the full output), or run the call again"),
        None => "run the call again".to_string(),
    };
    format!(
        "[Output of this {tool} call ({bytes} bytes) dropped to keep the conversation within the context window; if you need it, {again}.]"
    )
}

/// Tokens of a stored message's tool outputs (and their images).
fn output_tokens(m: &StoredMessage) -> u64 {
    m.parts
        .iter()
        .map(|p| match p {
            StoredPart::Tool { output, images, .. } => {
                tokens_of(output.as_ref().map_or(0, String::len)) + images.len() as u64 * IMAGE_TOKENS
            }
            _ => 0,
        })
        .sum()
}

/// Tokens pruning `m` would drop.
fn droppable_tokens(m: &StoredMessage) -> u64 {
    m.parts
        .iter()
        .map(|p| match p {
            StoredPart::Tool { tool, state, output: Some(output), images, .. }
                if prunable(tool, *state, output.len()) =>
            {
                tokens_of(output.len()).saturating_sub(60) + images.len() as u64 * IMAGE_TOKENS
            }
            _ => 0,
        })
        .sum()
}

/// Where pruning should now reach: the `seq` of the newest message whose outputs may be
/// stubbed, keeping the most recent outputs that lie wholly within the newest `protected`
/// tokens of output (the latest step's always) — if that drops at least `minimum` tokens more than is already pruned. Returns the
/// `seq` and the tokens it drops. Only messages from `from` (the latest compaction's
/// `kept_from`) count. [`Budget::pruning`] gives the two sizes.
pub fn prune_point(
    stored: &[StoredMessage],
    from: i64,
    pruned_through: i64,
    (protected, minimum): (u64, u64),
) -> Option<(i64, u64)> {
    let mut kept = 0u64;
    let mut boundary = None;
    let mut newest_with_outputs = true;
    for (i, m) in stored.iter().enumerate().rev() {
        if m.seq < from {
            break;
        }
        let tokens = output_tokens(m);
        if tokens == 0 {
            continue;
        }
        // An output is protected when it lies wholly within the newest `protected` tokens.
        if !std::mem::take(&mut newest_with_outputs) && kept + tokens > protected {
            boundary = Some(i);
            break;
        }
        kept += tokens;
    }
    // This message and the older ones may be pruned.
    let prunable = &stored[..=boundary?];
    let candidates = prunable.iter().filter(|m| m.seq >= from && m.seq > pruned_through);
    let dropped: u64 = candidates.map(droppable_tokens).sum();
    let last = prunable.last()?;
    (dropped >= minimum && last.seq > pruned_through).then_some((last.seq, dropped))
}

/// The text that stands for the summarised history: the user's own messages (all of them
/// while they fit in [`Budget::user_messages_tokens`], the first and the latest always),
/// the summary, and the files the session changed.
pub fn block(stored: &[StoredMessage], c: &Compaction, budget: &Budget) -> String {
    let mut out = String::from(
        "[This session was compacted to fit the model's context window: the older messages were replaced by the summary below. The user's own messages are quoted exactly.]\n\n## The user's messages so far, oldest first\n",
    );
    out.push_str(&user_messages(stored, c.kept_from, budget));
    let _ = write!(out, "\n## Summary of the work so far\n{}\n", c.summary.trim());
    if !c.files.trim().is_empty() {
        let _ = write!(out, "\n## Files changed in this session\n{}\n", c.files.trim_end());
    }
    out.push_str(
        "\nContinue from here: work already done is done (check files before redoing anything), and the user's instructions above still hold.",
    );
    out
}

fn texts(m: &StoredMessage) -> String {
    let texts = m.parts.iter().filter_map(|p| match p {
        StoredPart::Text { text } => Some(text.as_str()),
        _ => None,
    });
    texts.collect::<Vec<_>>().join("\n")
}

/// The user's messages before `before` (a `seq`), quoted: all of them while they fit in
/// [`Budget::user_messages_tokens`], the first and the latest always.
pub fn user_messages(stored: &[StoredMessage], before: i64, budget: &Budget) -> String {
    let prompts: Vec<(usize, String)> = stored
        .iter()
        .filter(|m| m.seq < before && m.role == Role::User)
        .map(texts)
        .filter(|t| !t.trim().is_empty())
        .enumerate()
        .collect();
    let mut chosen = BTreeSet::new();
    if let (Some(first), Some(last)) = (prompts.first(), prompts.last()) {
        chosen.insert(first.0);
        chosen.insert(last.0);
    }
    let mut room =
        budget.user_messages_tokens().saturating_sub(chosen.iter().map(|&i| tokens_of(prompts[i].1.len())).sum());
    for (i, text) in prompts.iter().rev() {
        let cost = tokens_of(text.len());
        if chosen.contains(i) || cost > room {
            continue;
        }
        room -= cost;
        chosen.insert(*i);
    }
    let mut out = String::new();
    let mut previous = None;
    for &i in &chosen {
        if previous.is_some_and(|p| i > p + 1) || (previous.is_none() && i > 0) {
            let gap = i - previous.map_or(0, |p| p + 1);
            let _ = writeln!(out, "({gap} message(s) left out here for room; they are in the stored session.)");
        }
        let _ = writeln!(out, "\n<user_message>\n{}\n</user_message>", prompts[i].1.trim_end());
        previous = Some(i);
    }
    if prompts.is_empty() {
        out.push_str("(none before the messages that follow)\n");
    }
    out
}

/// The files the session's finished `write`, `edit` and `apply_patch` calls changed, as a
/// compaction lists them: one per line, the most recent [`MAX_FILES_LISTED`].
pub fn files_list(stored: &[StoredMessage]) -> String {
    let files = files_changed(stored);
    let shown = files.len().min(MAX_FILES_LISTED);
    let mut out = String::new();
    if shown < files.len() {
        let _ = writeln!(out, "({} earlier ones not listed)", files.len() - shown);
    }
    for f in &files[files.len() - shown..] {
        let _ = writeln!(out, "- {f}");
    }
    out
}

/// The files the session's finished `write`, `edit` and `apply_patch` calls changed, in the
/// order first changed, with what happened to each.
pub fn files_changed(stored: &[StoredMessage]) -> Vec<String> {
    let mut seen: Vec<(String, &'static str)> = Vec::new();
    let mut note = |path: &str, what: &'static str| match seen.iter_mut().find(|(p, _)| p == path) {
        Some(entry) => {
            if what == "deleted" || entry.1 == "deleted" {
                entry.1 = what;
            }
        }
        None => seen.push((path.to_string(), what)),
    };
    for part in stored.iter().flat_map(|m| &m.parts) {
        let StoredPart::Tool { tool, input, state: CallState::Completed, .. } = part else { continue };
        match tool.as_str() {
            "write" | "edit" => {
                let args: Value = serde_json::from_str(input).unwrap_or_default();
                if let Some(path) = args.get("file_path").and_then(Value::as_str) {
                    note(path, if tool == "write" { "written" } else { "edited" });
                }
            }
            "apply_patch" => {
                let patch = serde_json::from_str::<Value>(input)
                    .ok()
                    .and_then(|v| v.get("input").or_else(|| v.get("patch")).and_then(Value::as_str).map(str::to_string))
                    .unwrap_or_else(|| input.clone());
                for line in patch.lines() {
                    for (prefix, what) in
                        [("*** Add File: ", "added"), ("*** Update File: ", "edited"), ("*** Delete File: ", "deleted")]
                    {
                        if let Some(path) = line.strip_prefix(prefix) {
                            note(path.trim(), what);
                        }
                    }
                    if let Some(path) = line.strip_prefix("*** Move to: ") {
                        note(path.trim(), "added");
                    }
                }
            }
            _ => {}
        }
    }
    seen.into_iter().map(|(p, what)| format!("{p} ({what})")).collect()
}

/// The instructions of a summary request.
pub const SUMMARY_PROMPT: &str = "You write the hand-over notes of a coding session that has grown too long for the model's context window. Another model continues the work from your notes and the most recent messages alone, so it must neither redo finished work nor lose a decision. Write Markdown under exactly these headings:

## Task
What the user asked for, with every constraint and preference they stated (their words where they matter).
## Decisions
What was decided and why, including approaches tried and abandoned.
## Files
Files read (one line each on what matters in them) and files changed (what changed and why).
## Commands
Commands run and their outcome: passed or failed, key numbers, error messages.
## Open problems
What is failing, unknown or blocked.
## Next steps
The concrete next actions, in order.

Be terse: bullets, exact paths, names and numbers, no pleasantries. If earlier notes are given, merge them: keep what still holds; newer facts win. Do not call tools; answer with the notes only.";

/// The request that asks the model for a summary of `range` (the stored messages it stands
/// for), merging `prior` (the previous summary, if any), and the number of messages it had to
/// leave out to fit. `None` if not even the prior summary and one message fit.
pub fn summary_request(
    model: &str,
    prior: Option<&str>,
    users: &str,
    range: &[StoredMessage],
    budget: &Budget,
    ratio: f64,
) -> Option<(Request, usize)> {
    let room = budget.trigger().saturating_sub(budget.summary_tokens());
    for cut in SUMMARY_OUTPUT_CUTS {
        for skip in 0..range.len().max(1) {
            let text = transcript(prior, users, &range[skip.min(range.len())..], cut, skip);
            let request = Request {
                model: model.to_string(),
                system: SUMMARY_PROMPT.to_string(),
                messages: vec![Message::user(text)],
                tools: Vec::new(),
                max_tokens: Some(budget.summary_tokens() as u32),
            };
            if project(estimate_request(&request), ratio) <= room {
                return Some((request, skip));
            }
            // Leaving out messages is the last resort: first shorten the outputs.
            if cut != 0 {
                break;
            }
        }
    }
    None
}

/// The history to summarise, as text.
fn transcript(prior: Option<&str>, users: &str, messages: &[StoredMessage], cut: usize, skipped: usize) -> String {
    let mut out = format!("<user_messages>\n{}</user_messages>\n\n", users.trim_start());
    if let Some(prior) = prior {
        let _ = write!(out, "<earlier_notes>\n{}\n</earlier_notes>\n\n", prior.trim());
    }
    out.push_str("<conversation>\n");
    if skipped > 0 {
        let _ = writeln!(out, "[{skipped} older message(s) left out for room]");
    }
    for m in messages {
        for p in &m.parts {
            match p {
                StoredPart::Text { text } if !text.trim().is_empty() => {
                    let who = if m.role == Role::User { "USER" } else { "ASSISTANT" };
                    let _ = writeln!(out, "{who}: {}", text.trim());
                }
                StoredPart::Image { mime_type, .. } => {
                    let _ = writeln!(out, "USER: [attached a {mime_type} image]");
                }
                StoredPart::Tool { tool, input, output, is_error, .. } => {
                    let _ = writeln!(out, "TOOL CALL {tool} {}", clip(input, 600));
                    let output = output.as_deref().unwrap_or("(no result: interrupted)");
                    let status = if *is_error { "error" } else { "ok" };
                    let _ = writeln!(out, "RESULT ({status}): {}", clip(output, cut));
                }
                _ => {}
            }
        }
    }
    out.push_str("</conversation>\n\nWrite the hand-over notes for the conversation above now.");
    out
}

/// `text` cut to about `max` bytes, at a character boundary, saying how much was left out.
fn clip(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [{} more bytes]", &text[..end], text.len() - end)
}

/// Where the verbatim tail of a compacted request should start: the `seq` of the oldest
/// message kept so that the tail (as sent, pruned) stays within `room` tokens; one past the
/// last message when not even the newest fits. Only messages from `from` count, and at least
/// one of them is left to summarise.
pub fn tail_start(stored: &[StoredMessage], from: i64, pruned_through: i64, room: u64) -> Option<i64> {
    let candidates: Vec<&StoredMessage> = stored.iter().filter(|m| m.seq >= from).collect();
    let first = candidates.first()?.seq;
    let mut used = 0u64;
    let mut start = candidates.last().map_or(from, |m| m.seq + 1);
    for m in candidates.iter().rev() {
        if m.seq == first {
            break;
        }
        let sent = if m.seq <= pruned_through { pruned(m) } else { (*m).clone() };
        used += tokens_of(serde_json::to_string(&history_of(std::slice::from_ref(&sent))).map_or(0, |s| s.len()));
        if used > room {
            break;
        }
        start = m.seq;
    }
    Some(start)
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolshed_llm::{CallKind, Usage};

    fn tool_message(seq: i64, tool: &str, output_bytes: usize) -> StoredMessage {
        StoredMessage {
            id: format!("m{seq}"),
            seq,
            role: Role::Assistant,
            agent: None,
            model: None,
            created_at: 0,
            finished_at: None,
            usage: None,
            request_tokens: None,
            stop_reason: None,
            error: None,
            parts: vec![StoredPart::Tool {
                call_id: format!("c{seq}"),
                tool: tool.into(),
                kind: CallKind::Function,
                input: "{}".into(),
                state: CallState::Completed,
                output: Some("x".repeat(output_bytes)),
                is_error: false,
                title: None,
                metadata: serde_json::json!({}),
                images: Vec::new(),
                started_at: None,
                finished_at: None,
            }],
        }
    }

    fn user(seq: i64, text: &str) -> StoredMessage {
        StoredMessage {
            role: Role::User,
            parts: vec![StoredPart::Text { text: text.into() }],
            ..tool_message(seq, "x", 0)
        }
    }

    const SMALL: Budget = Budget { window: 16_000, compact_at: 0.85 };

    #[test]
    fn pruning_keeps_a_quarter_of_the_window_of_recent_outputs_and_skills() {
        let mut stored = vec![user(1, "task")];
        stored.extend((2..12).map(|seq| tool_message(seq, "read", 8_000)));
        stored.insert(3, tool_message(100, "skill", 8_000));
        stored[3].seq = 3;
        for (i, m) in stored.iter_mut().enumerate() {
            m.seq = i as i64 + 1;
        }
        assert_eq!(SMALL.pruning(0), (4_000, 1_600));
        assert_eq!(SMALL.pruning(7_600), (3_000, 1_500), "what the tools leave sets the sizes");
        let (through, dropped) = prune_point(&stored, i64::MIN, 0, SMALL.pruning(0)).unwrap();
        // 2,000 tokens per output: the newest two fill the 4,000 kept.
        let last = stored.last().unwrap().seq;
        assert_eq!(through, last - 2, "outputs kept: the two newest");
        assert!(dropped >= 1_600);
        let sent = view(&stored, None, through, &SMALL);
        let outputs: Vec<&str> = sent
            .iter()
            .flat_map(|m| &m.parts)
            .filter_map(|p| match p {
                Part::ToolResult(r) => Some(r.output.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(outputs.len(), 11);
        assert!(outputs[1].starts_with("[Output of this read call (8000 bytes) dropped"), "{}", outputs[1]);
        assert_eq!(outputs[2].len(), 8_000, "the skill's output is never pruned");
        assert!(outputs[9..].iter().all(|o| o.len() == 8_000), "recent outputs stay");
        assert!(outputs[8].starts_with("[Output of"), "{}", outputs[8]);
        // Nothing more to prune until enough new output arrives.
        assert_eq!(prune_point(&stored, i64::MIN, through, SMALL.pruning(0)), None);
    }

    #[test]
    fn calibration_follows_the_providers_count() {
        let mut m = tool_message(1, "read", 10);
        assert!((calibration(std::slice::from_ref(&m)) - 1.0).abs() < f64::EPSILON);
        m.usage = Some(Usage::new(3_000, 10));
        m.request_tokens = Some(2_000);
        assert!((calibration(std::slice::from_ref(&m)) - 1.5).abs() < 1e-9);
        assert_eq!(project(1_000, 1.5), 1_500);
        m.usage = Some(Usage::new(100_000, 10));
        assert!((calibration(std::slice::from_ref(&m)) - 4.0).abs() < 1e-9, "clamped");
        m.usage = Some(Usage::new(1_800, 10));
        assert!((calibration(std::slice::from_ref(&m)) - 0.9).abs() < 1e-9);
        m.usage = Some(Usage::new(1_200, 10));
        assert!((calibration(std::slice::from_ref(&m)) - 0.8).abs() < 1e-9, "never much under the estimate");
        m.usage = Some(Usage::new(100, 10));
        assert!((calibration(std::slice::from_ref(&m)) - 1.0).abs() < 1e-9, "a count that cannot be right is ignored");
    }

    #[test]
    fn the_block_keeps_the_first_and_latest_user_messages_and_what_fits() {
        let long = "y".repeat(10_000);
        let mut stored =
            vec![user(1, "THE TASK"), user(2, &long), user(3, "middle"), user(4, "LATEST"), user(5, "tail")];
        stored.push(tool_message(6, "read", 10));
        let c = Compaction {
            kind: crate::store::COMPACTION,
            id: "cmp".into(),
            session_id: "s".into(),
            created_at: 0,
            trigger: "auto".into(),
            kept_from: 5,
            summarised: 4,
            summary: "SUMMARY".into(),
            files: "- a.rs | 2 +-\n".into(),
            model: None,
            tokens_before: 0,
            tokens_after: 0,
            usage: None,
        };
        let text = block(&stored, &c, &Budget { window: 4_000, compact_at: 0.85 });
        assert!(text.contains("THE TASK") && text.contains("LATEST") && text.contains("middle"));
        assert!(!text.contains(&long), "the long one does not fit");
        assert!(text.contains("1 message(s) left out"), "{text}");
        assert!(text.contains("SUMMARY") && text.contains("## Files changed in this session\n- a.rs | 2 +-"));
        let sent = view(&stored, Some(&c), 0, &SMALL);
        assert_eq!(sent[0].role, Role::User);
        let first = sent[0].text();
        assert!(first.starts_with("[This session was compacted") && first.ends_with("tail"), "{first}");
    }

    #[test]
    fn files_changed_come_from_finished_edits_and_patches() {
        let mut write = tool_message(1, "write", 10);
        let mut patch = tool_message(2, "apply_patch", 10);
        if let StoredPart::Tool { input, .. } = &mut write.parts[0] {
            *input = r#"{"file_path":"src/a.rs","content":"x"}"#.into();
        }
        if let StoredPart::Tool { input, .. } = &mut patch.parts[0] {
            *input = "*** Begin Patch\n*** Delete File: old.txt\n*** Update File: src/a.rs\n@@\n-a\n+b\n*** End Patch"
                .into();
        }
        assert_eq!(files_changed(&[write, patch]), ["src/a.rs (written)", "old.txt (deleted)"]);
    }

    #[test]
    fn summary_requests_shorten_outputs_before_leaving_messages_out() {
        let stored: Vec<StoredMessage> = (1..40).map(|seq| tool_message(seq, "read", 8_000)).collect();
        let (request, skipped) = summary_request("m", Some("old notes"), "TASK", &stored, &SMALL, 1.0).unwrap();
        assert_eq!(skipped, 0, "39 outputs cut to 600 bytes fit");
        let text = request.messages[0].text();
        assert!(text.contains("<earlier_notes>\nold notes") && text.contains("more bytes]"));
        assert!(text.starts_with("<user_messages>\nTASK"), "{text}");
        assert!(request.tools.is_empty());
        let many: Vec<StoredMessage> = (1..2_000).map(|seq| tool_message(seq, "read", 8_000)).collect();
        let (request, skipped) = summary_request("m", None, "TASK", &many, &SMALL, 1.0).unwrap();
        assert!(skipped > 0);
        assert!(estimate_request(&request) <= SMALL.trigger() - SMALL.summary_tokens());
    }
}
