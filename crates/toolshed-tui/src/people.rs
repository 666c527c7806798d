//! A failed call's result as a person reads it. What the chain gives the model says what to
//! do next ("Fix the arguments and call edit again", "Did you mean …"); a person is told what
//! happened and, where there is one, what they can do.

use toolshed_core::exec::permit::{STOPPED, refusal_facts};
use toolshed_core::permission::NO_APPROVER;

/// `output`, the result of a call of `tool` that failed, in words for the person: a refusal
/// and a rejected call say what was not run and why; an interrupted or stopped call keeps what
/// its command printed, then says so; a tool's own error is shown as it is.
pub fn failure(tool: &str, output: &str) -> String {
    let output = output.trim_end();
    // The note ending a stopped call, after the output the tool gave.
    let interrupted = format!("The {tool} call was interrupted by the user.");
    if let Some(before) = output.strip_suffix(interrupted.as_str()) {
        // A command says so itself (and what was stopped).
        if before.contains("Interrupted by the user") {
            return before.trim_end().to_string();
        }
        return with_note(before, "(interrupted)");
    }
    if let Some((before, note)) = output.rsplit_once(&format!("{tool} timed out after "))
        && let Some(ms) = note.strip_suffix(" ms and was stopped.").and_then(|ms| ms.parse::<u64>().ok())
        && (before.is_empty() || before.ends_with('\n'))
    {
        return with_note(before, &format!("(timed out after {} and stopped)", crate::render::duration(ms)));
    }
    // A third identical call asks first; the model is told so before the refusal.
    let plain = match output.split_once(" three times in a row with identical arguments. ") {
        Some((start, rest)) if start.starts_with("You have called ") => rest,
        _ => output,
    };
    if plain.starts_with("Permission for `") {
        return refusal(plain);
    }
    if let Some(rest) = plain.strip_prefix("Permission denied: ") {
        let facts = refusal_facts(rest).trim_end().trim_end_matches(['.', ';']);
        return format!("not run: {facts}");
    }
    if plain.starts_with("Unknown tool \"") {
        return "not run: the model called a tool that does not exist".to_string();
    }
    if plain.contains("\" is not one of your tools.") && plain.starts_with('"') {
        return "not run: the model called a tool it was not given".to_string();
    }
    if plain.starts_with("The tool \"") && plain.contains("\" is not loaded yet") {
        return "not run: the model called a tool before loading it".to_string();
    }
    if let Some(rest) = plain.strip_prefix(&format!("The arguments for {tool} are not valid JSON (")) {
        let why = rest.split_once("). ").map_or(rest, |(why, _)| why);
        return format!("not run: the model's arguments are not valid JSON ({why})");
    }
    if plain.starts_with(&format!("The arguments for {tool} must be a JSON object")) {
        return "not run: the model's arguments are not a JSON object".to_string();
    }
    if let Some(rest) = plain.strip_prefix(&format!("Invalid arguments for {tool}:\n")) {
        let problems: Vec<&str> = rest.lines().filter(|l| l.starts_with("- ")).collect();
        return format!("not run: the model's arguments do not fit the tool:\n{}", problems.join("\n"));
    }
    if let Some(rest) = plain.strip_prefix(&format!("The tool {tool} cannot be called: ")) {
        let why = rest.split_once(". This is a fault").map_or(rest, |(why, _)| why);
        return format!("not run: the tool's definition is broken: {why}");
    }
    if let Some(rest) = plain.strip_prefix(&format!("The {tool} tool crashed: ")) {
        let why = rest.split_once(". This is a bug").map_or(rest, |(why, _)| why);
        return format!("the tool crashed: {why}");
    }
    output.to_string()
}

/// What a command printed, then `note` on a line of its own.
fn with_note(before: &str, note: &str) -> String {
    let before = before.trim_end();
    if before.is_empty() { note.to_string() } else { format!("{before}\n{note}") }
}

/// "Permission for `P` on `X` was not granted: WHY. The call was not run; …" for a person.
fn refusal(output: &str) -> String {
    let stopped = output.contains(STOPPED);
    let outcome = if stopped { "stopped" } else { "not run" };
    let facts = refusal_facts(output).trim_end().trim_end_matches('.');
    let Some((asked, why)) = facts.split_once(" was not granted: ") else { return format!("{outcome}: {facts}") };
    let asked = asked.trim_start_matches("Permission for ");
    if why.starts_with(NO_APPROVER.split('.').next().unwrap_or(NO_APPROVER)) {
        return format!("{outcome}: {asked} needs approval; rerun at a terminal or with --yes");
    }
    if why == "the user rejected it" {
        return format!("{outcome}: you rejected {asked}");
    }
    if why.contains("is never granted by a blanket approval") {
        return format!(
            "{outcome}: --yes never approves {asked}; answer it at a terminal, or allow it with a rule in toolshed.toml"
        );
    }
    format!("{outcome}: {asked} was rejected: {why}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_model_is_told_to_do_next_is_left_out() {
        let no_one =
            format!("Permission for `bash` on `rm -rf build` was not granted: {NO_APPROVER}. The call was not run.");
        assert_eq!(
            failure("bash", &no_one),
            "not run: `bash` on `rm -rf build` needs approval; rerun at a terminal or with --yes"
        );
        let rejected =
            "Permission for `edit` on `src/a.rs` was not granted: the user rejected it. The call was not run.";
        assert_eq!(failure("edit", rejected), "not run: you rejected `edit` on `src/a.rs`");
        let denied = "Permission denied: the rules of agent `plan` forbid `edit` on `a.rs` (rule: edit \"*\" = deny). The call was not run; do not retry it. Use another approach, or ask the user to change the rule.";
        assert_eq!(
            failure("edit", denied),
            "not run: the rules of agent `plan` forbid `edit` on `a.rs` (rule: edit \"*\" = deny)"
        );
        let invalid = "Invalid arguments for edit:\n- `old_string` is required\nFix the arguments and call edit again.";
        assert_eq!(
            failure("edit", invalid),
            "not run: the model's arguments do not fit the tool:\n- `old_string` is required"
        );
        let not_json = "The arguments for edit are not valid JSON (EOF while parsing at line 1 column 9). Send one JSON object that matches the tool's parameters.";
        assert_eq!(
            failure("edit", not_json),
            "not run: the model's arguments are not valid JSON (EOF while parsing at line 1 column 9)"
        );
        let unknown = "Unknown tool \"frobnicate\". Available tools: read, write.";
        assert_eq!(failure("frobnicate", unknown), "not run: the model called a tool that does not exist");
        let stopped = "partial line\n\nThe bash call was interrupted by the user.";
        assert_eq!(failure("bash", stopped), "partial line\n(interrupted)");
        assert_eq!(
            failure("bash", "bash timed out after 1500 ms and was stopped."),
            "(timed out after 1.5 s and stopped)"
        );
        assert_eq!(failure("read", "No such file: a.rs"), "No such file: a.rs");
        for said in [no_one.as_str(), denied, invalid, not_json, unknown] {
            let person = failure("edit", said);
            assert!(
                !person.contains("call edit again") && !person.contains("Send one") && !person.contains("Did you mean"),
                "{person}"
            );
        }
    }
}
