//! Permissions: rules that answer allow / ask / deny for a permission key and a pattern
//! (OpenCode's semantics: the last matching rule wins), the approver that answers an `ask`,
//! and the handle tools use to ask while they run.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::context::CallInfo;
use crate::tool::{BoxFuture, ToolError};
use crate::wildcard;

/// What a rule says about a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Run without asking.
    Allow,
    /// Ask the approver first.
    Ask,
    /// Never run.
    Deny,
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Action::Allow => "allow",
            Action::Ask => "ask",
            Action::Deny => "deny",
        })
    }
}

/// One rule: for permission keys matching `permission` and patterns matching `pattern`, do `action`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Rule {
    /// Wildcard over permission keys (`edit`, `bash`, `mcp_*`, `*`).
    pub permission: String,
    /// Wildcard over the request's pattern (a path, a command, a URL).
    pub pattern: String,
    /// What to do.
    pub action: Action,
}

impl Rule {
    /// A rule.
    pub fn new(permission: impl Into<String>, pattern: impl Into<String>, action: Action) -> Self {
        Rule { permission: permission.into(), pattern: pattern.into(), action }
    }

    /// Whether this rule applies to `permission` / `pattern`. A rule that allows every
    /// permission (`"*" = "allow"`) does not allow the [`EXPLICIT_ONLY`] ones: they are allowed
    /// only by name (denying or asking everything still covers them).
    pub fn matches(&self, permission: &str, pattern: &str) -> bool {
        self.covers(permission) && wildcard::matches(pattern, &self.pattern)
    }

    /// Whether this rule's permission wildcard applies to the key `permission`.
    pub fn covers(&self, permission: &str) -> bool {
        if self.action == Action::Allow && self.permission != permission && EXPLICIT_ONLY.contains(&permission) {
            return false;
        }
        wildcard::matches(permission, &self.permission)
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} \"{}\" = {}", self.permission, self.pattern, self.action)
    }
}

/// The outcome of evaluating one pattern: the action and the rule that decided it (none means
/// no rule matched and the default, ask, applies).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// What to do.
    pub action: Action,
    /// The deciding rule.
    pub rule: Option<Rule>,
}

/// An ordered list of rules; the last rule that matches decides.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ruleset {
    rules: Vec<Rule>,
}

impl Ruleset {
    /// A ruleset of these rules, in order.
    pub fn new(rules: Vec<Rule>) -> Self {
        Ruleset { rules }
    }

    /// OpenCode's defaults: everything allowed, except `external_directory` and `doom_loop`
    /// (ask) and reads of `.env` files (ask; `*.env.example` allowed); plus
    /// `sandbox_escalation` (ask), so a sandboxed command never reruns unsandboxed unasked, and
    /// `protected` (ask), so writes to toolshed's own configuration and `.git` ask (see
    /// [`crate::protected`]).
    pub fn defaults() -> Self {
        use Action::*;
        Ruleset::new(vec![
            Rule::new("*", "*", Allow),
            Rule::new("doom_loop", "*", Ask),
            Rule::new("external_directory", "*", Ask),
            Rule::new("sandbox_escalation", "*", Ask),
            Rule::new(crate::protected::PERMISSION, "*", Ask),
            Rule::new("read", "*", Allow),
            Rule::new("read", "*.env", Ask),
            Rule::new("read", "*.env.*", Ask),
            Rule::new("read", "*.env.example", Allow),
        ])
    }

    /// The rules, in order.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// Appends a rule (it outranks every earlier one it overlaps).
    pub fn push(&mut self, rule: Rule) {
        self.rules.push(rule);
    }

    /// Appends all rules of `other`.
    pub fn extend(&mut self, other: &Ruleset) {
        self.rules.extend(other.rules.iter().cloned());
    }

    /// The rules that deny some pattern of the key `permission`.
    pub fn deny_rules(&self, permission: &str) -> Vec<Rule> {
        self.rules.iter().filter(|r| r.action == Action::Deny && r.covers(permission)).cloned().collect()
    }

    /// The decision for one permission key and pattern: the last matching rule, else ask.
    pub fn evaluate(&self, permission: &str, pattern: &str) -> Decision {
        match self.rules.iter().rev().find(|r| r.matches(permission, pattern)) {
            Some(rule) => Decision { action: rule.action, rule: Some(rule.clone()) },
            None => Decision { action: Action::Ask, rule: None },
        }
    }

    /// Whether a tool guarded by `permission` is denied outright and so never shown: the last
    /// rule matching the key (whatever its pattern) is `"*" = deny`.
    pub fn disabled(&self, permission: &str) -> bool {
        self.rules
            .iter()
            .rev()
            .find(|r| r.covers(permission))
            .is_some_and(|r| r.pattern == "*" && r.action == Action::Deny)
    }
}

/// Decides requests for an agent. The permissions issue's rule engine implements this per
/// agent; [`Ruleset`] implements it the same for every agent.
pub trait Permission: Send + Sync {
    /// The decision for `agent` on one permission key and pattern.
    fn evaluate(&self, agent: &str, permission: &str, pattern: &str) -> Decision;

    /// Whether tools guarded by `permission` are hidden from `agent` (denied outright).
    fn disabled(&self, agent: &str, permission: &str) -> bool;

    /// The rules of `agent` that deny some pattern of `permission` (in any layer: a deny that a
    /// later rule overrides for every pattern is still listed). An opaque request asks when there
    /// is one (see [`PermissionRequest::opaque`]).
    fn deny_rules(&self, agent: &str, permission: &str) -> Vec<Rule>;
}

impl Permission for Ruleset {
    fn evaluate(&self, _agent: &str, permission: &str, pattern: &str) -> Decision {
        Ruleset::evaluate(self, permission, pattern)
    }

    fn disabled(&self, _agent: &str, permission: &str) -> bool {
        Ruleset::disabled(self, permission)
    }

    fn deny_rules(&self, _agent: &str, permission: &str) -> Vec<Rule> {
        self.deny_rules(permission)
    }
}

/// What a call needs permission for: a key and the patterns it touches (one apply_patch may
/// touch many files), and what an "always" answer approves from now on.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PermissionRequest {
    /// The permission key (`edit`, `bash`, `external_directory`, ...).
    pub permission: String,
    /// What the call touches: paths relative to the worktree, commands, URLs.
    pub patterns: Vec<String>,
    /// The patterns an "always" answer allows for the rest of the session.
    pub always: Vec<String>,
    /// Extra facts for whoever approves (e.g. the diff of an edit).
    pub metadata: Map<String, Value>,
    /// The least this request needs whatever the rules say: `Ask` for input the tool cannot
    /// fully analyse (e.g. a shell command the parser cannot classify), so no allow rule covers it.
    pub minimum: Action,
    /// A secondary request names what the call *might* also do, not what it does: a word of a
    /// shell command that names a program may be run (`xvfb-run rm x`) or only be an argument
    /// (`echo rm x`). A deny of one of its patterns asks instead; an allow or ask of them changes
    /// nothing (see [`PermissionRequest::effective`]), and "always" approves none of them.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub secondary: bool,
    /// An opaque request (also secondary) names a command that runs code no rule can read
    /// (`python3 -c CODE`, a script on standard input): it may run any command, so it asks when
    /// some rule of the key denies something, unless a person already approved the command in
    /// this call or a rule that names it (not `*`) allows it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub opaque: bool,
}

impl PermissionRequest {
    /// A request for `permission` on `patterns`; "always" approves exactly these patterns.
    pub fn new<I, S>(permission: impl Into<String>, patterns: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let patterns: Vec<String> = patterns.into_iter().map(Into::into).collect();
        PermissionRequest {
            permission: permission.into(),
            always: patterns.clone(),
            patterns,
            metadata: Map::new(),
            minimum: Action::Allow,
            secondary: false,
            opaque: false,
        }
    }

    /// Sets what an "always" answer approves.
    pub fn with_always<I, S>(mut self, always: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.always = always.into_iter().map(Into::into).collect();
        self
    }

    /// Requires at least `minimum` (see [`PermissionRequest::minimum`]).
    pub fn at_least(mut self, minimum: Action) -> Self {
        self.minimum = minimum;
        self
    }

    /// Makes the request secondary (see [`PermissionRequest::secondary`]); "always" approves
    /// nothing of it.
    pub fn secondary(mut self) -> Self {
        self.secondary = true;
        self.always.clear();
        self
    }

    /// Makes the request opaque (see [`PermissionRequest::opaque`]), and so secondary.
    pub fn opaque(mut self) -> Self {
        self.opaque = true;
        self.secondary()
    }

    /// What this request needs when the rules say `action` for one of its patterns: an allow is
    /// raised to ask when the request needs at least that; for a secondary request a deny asks and
    /// anything else allows.
    pub fn effective(&self, action: Action) -> Action {
        match action {
            Action::Deny if self.secondary => Action::Ask,
            _ if self.secondary => Action::Allow,
            Action::Allow if self.minimum != Action::Allow => Action::Ask,
            action => action,
        }
    }

    /// What this request needs for a pattern the rules of `agent` decided as `decision`, before
    /// any answer of the session: [`PermissionRequest::effective`], except that an opaque request
    /// asks when some rule of its key denies something, unless a rule naming the pattern (not
    /// just `*`) allows it.
    pub fn action(&self, decision: &Decision, rules: &dyn Permission, agent: &str) -> Action {
        if !self.opaque {
            return self.effective(decision.action);
        }
        let named = decision.rule.as_ref().is_some_and(|r| r.pattern.chars().any(|c| c != '*'));
        match decision.action {
            Action::Deny => Action::Ask,
            Action::Allow if named => Action::Allow,
            _ if rules.deny_rules(agent, &self.permission).is_empty() => Action::Allow,
            _ => Action::Ask,
        }
    }

    /// Adds one metadata entry for the approver.
    pub fn with_metadata(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }
}

/// An `ask` put to whoever approves: the call, and the request.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ApprovalRequest {
    /// The session.
    pub session_id: String,
    /// The agent.
    pub agent: String,
    /// The tool being called.
    pub tool: String,
    /// The call id.
    pub call_id: String,
    /// What is asked for.
    #[serde(flatten)]
    pub request: PermissionRequest,
}

impl ApprovalRequest {
    /// The `ask` of `request` for the call `call`.
    pub fn for_call(call: &CallInfo, request: &PermissionRequest) -> Self {
        ApprovalRequest {
            session_id: call.session_id.clone(),
            agent: call.agent.clone(),
            tool: call.tool.clone(),
            call_id: call.call_id.clone(),
            request: request.clone(),
        }
    }
}

/// An approver's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// Allow this call only.
    Once,
    /// Allow this call, and the request's `always` patterns for the rest of the session.
    Always,
    /// Do not run the call; the optional text tells the model why or what to do instead.
    Reject(Option<String>),
}

/// Answers `ask` decisions (a terminal prompt, an MCP elicitation, a UI, a policy).
pub trait Approver: Send + Sync {
    /// Answers one request.
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Reply>;
}

/// The approver of non-interactive runs: rejects every `ask`, telling the model why.
#[derive(Clone, Copy, Debug, Default)]
pub struct RejectAll;

/// Why [`RejectAll`] rejects; the model reads this.
pub const NO_APPROVER: &str = "No one is available to approve it in this non-interactive run. Do not retry it: do without it, or tell the user in your answer that it needs their approval (they can rerun with --yes)";

impl Approver for RejectAll {
    fn approve<'a>(&'a self, _request: &'a ApprovalRequest) -> BoxFuture<'a, Reply> {
        Box::pin(async { Reply::Reject(Some(NO_APPROVER.to_string())) })
    }
}

/// Permissions that only a rule naming them allows: `permission = "allow"` or `"*" = "allow"`
/// means "every tool", not "lift the sandbox" or "let the model rewrite toolshed's own
/// configuration".
pub const EXPLICIT_ONLY: &[&str] = &["sandbox_escalation", crate::protected::PERMISSION];

/// Permissions that a blanket approval (`--yes`, `[mcp_server] ask = "allow"`) never grants:
/// only a rule that allows them or a person's answer does. `sandbox_escalation` reruns a command
/// the sandbox stopped without the sandbox, `plan_exit` turns a plan-mode session into a build
/// session that edits and runs commands, and `protected` writes toolshed's own configuration,
/// custom tools or `.git` (a `toolshed.toml` that turns the sandbox off for the next process);
/// approving every ask must not also do any of them.
pub const PERSON_ONLY: &[&str] = &["sandbox_escalation", "plan_exit", crate::protected::PERMISSION];

/// What a blanket approval answers: once, except for [`PERSON_ONLY`] permissions, which it
/// rejects with a reason for the model.
pub fn blanket_reply(request: &ApprovalRequest) -> Reply {
    let permission = request.request.permission.as_str();
    if !PERSON_ONLY.contains(&permission) {
        return Reply::Once;
    }
    let (what, advice) = match permission {
        "plan_exit" => (
            "plan mode stays on",
            "Stay in plan mode: finish the plan and tell the user it is ready, so they can switch to build mode themselves",
        ),
        crate::protected::PERMISSION => (
            "toolshed's configuration, custom tools, skills and .git stay as they are",
            "Do not try another way to change them; tell the user what you wanted to change and why",
        ),
        _ => (
            "the sandbox stays on",
            "Do not retry the command unsandboxed; find a way that works inside the sandbox, or tell the user what needs to run outside it",
        ),
    };
    Reply::Reject(Some(format!(
        "`{permission}` is never granted by a blanket approval such as --yes: {what} unless a rule (`{permission} = \"allow\"`) or a person at the terminal allows it. {advice}"
    )))
}

/// The approver behind `--yes`: approves every `ask` once, but for [`PERSON_ONLY`] permissions
/// (see [`blanket_reply`]). Denies stay denies; an approver is never consulted for them.
#[derive(Clone, Copy, Debug, Default)]
pub struct ApproveAll;

impl Approver for ApproveAll {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Reply> {
        let reply = blanket_reply(request);
        Box::pin(async move { reply })
    }
}

/// The handle a running tool asks through; the executor's implementation applies the rules,
/// the session's approvals and the approver.
pub trait Asker: Send + Sync {
    /// `Ok` if the request is allowed (possibly after asking); otherwise the model-visible error.
    fn ask<'a>(&'a self, call: &'a CallInfo, request: PermissionRequest) -> BoxFuture<'a, Result<(), ToolError>>;

    /// What the rules (and the session's "always" answers) say about one pattern, without
    /// asking anyone: for tools that leave out what they may not show (grep skips files whose
    /// `read` would ask). The default, for askers outside the chain, allows.
    fn decide(&self, _call: &CallInfo, _permission: &str, _pattern: &str) -> Action {
        Action::Allow
    }

    /// Whether `request` is allowed without asking anyone: the rules (or an "always" answer of
    /// this session) allow every pattern. Asks no one and changes nothing; a tool uses it to
    /// skip a safeguard the user has already waived. The default says no (fail closed).
    fn allows(&self, _call: &CallInfo, _request: &PermissionRequest) -> bool {
        false
    }
}

/// An asker that allows everything; for running tools outside the chain.
#[derive(Clone, Copy, Debug, Default)]
pub struct AllowAll;

impl Asker for AllowAll {
    fn ask<'a>(&'a self, _call: &'a CallInfo, _request: PermissionRequest) -> BoxFuture<'a, Result<(), ToolError>> {
        Box::pin(async { Ok(()) })
    }

    fn allows(&self, _call: &CallInfo, _request: &PermissionRequest) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_ask_for_env_files_but_not_examples() {
        let rules = Ruleset::defaults();
        assert_eq!(rules.evaluate("read", "src/main.rs").action, Action::Allow);
        assert_eq!(rules.evaluate("read", ".env").action, Action::Ask);
        assert_eq!(rules.evaluate("read", "app/.env.production").action, Action::Ask);
        assert_eq!(rules.evaluate("read", "app/.env.example").action, Action::Allow);
        assert_eq!(rules.evaluate("external_directory", "/etc/*").action, Action::Ask);
        assert_eq!(rules.evaluate("doom_loop", "read").action, Action::Ask);
        assert_eq!(rules.evaluate("sandbox_escalation", "make install").action, Action::Ask);
        assert_eq!(rules.evaluate("edit", "a.txt").action, Action::Allow);
        assert_eq!(rules.evaluate("bash", "rm -rf /").action, Action::Allow);
    }

    #[test]
    fn last_match_wins_and_no_match_asks() {
        let rules = Ruleset::new(vec![Rule::new("bash", "*", Action::Deny), Rule::new("bash", "git *", Action::Allow)]);
        assert_eq!(rules.evaluate("bash", "git status").action, Action::Allow);
        assert_eq!(rules.evaluate("bash", "rm x").action, Action::Deny);
        assert_eq!(rules.evaluate("edit", "x").action, Action::Ask);
        assert_eq!(rules.evaluate("edit", "x").rule, None);
    }

    #[test]
    fn a_secondary_request_only_asks_and_only_for_a_deny() {
        let secondary = PermissionRequest::new("bash", ["rm x"]).secondary();
        assert!(secondary.always.is_empty());
        assert_eq!(secondary.effective(Action::Deny), Action::Ask);
        assert_eq!(secondary.effective(Action::Ask), Action::Allow);
        assert_eq!(secondary.effective(Action::Allow), Action::Allow);
        let minimum = PermissionRequest::new("bash", ["x"]).at_least(Action::Ask);
        assert_eq!(minimum.effective(Action::Allow), Action::Ask);
        assert_eq!(minimum.effective(Action::Deny), Action::Deny);
        assert_eq!(PermissionRequest::new("bash", ["x"]).effective(Action::Allow), Action::Allow);
        let json = serde_json::to_value(PermissionRequest::new("bash", ["x"])).unwrap();
        assert!(json.get("secondary").is_none(), "{json}");
        assert_eq!(serde_json::to_value(&secondary).unwrap()["secondary"], true);
    }

    #[test]
    fn only_a_star_deny_hides_a_tool() {
        let mut rules = Ruleset::defaults();
        assert!(!rules.disabled("webfetch"));
        rules.push(Rule::new("webfetch", "*", Action::Deny));
        assert!(rules.disabled("webfetch"));
        rules.push(Rule::new("edit", "*.lock", Action::Deny));
        assert!(!rules.disabled("edit"));
        rules.push(Rule::new("*", "*", Action::Deny));
        rules.push(Rule::new("read", "*", Action::Allow));
        assert!(rules.disabled("bash"));
        assert!(!rules.disabled("read"));
    }
}
