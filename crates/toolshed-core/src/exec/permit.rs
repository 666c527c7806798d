//! Stage 3, permit: the call's permission requests, plus `doom_loop` on the third identical
//! call in a row, are evaluated against the rules (last match wins) and the session's
//! "always" answers. A deny stops the call; an `ask` waits for the approver.

/// The permission asked when a call repeats the previous two exactly.
pub const DOOM_LOOP: &str = "doom_loop";

/// What a person is told when [`DOOM_LOOP`] is asked, after the tool's name.
pub const DOOM_LOOP_HEADLINE: &str = "is being called the same way a third time in a row (the model may be stuck)";

use std::sync::Arc;

use super::convert::Failure;
use super::{Executor, Session};
use crate::context::{CallInfo, ToolContext};
use crate::permission::{Action, ApprovalRequest, Approver, Asker, Permission, PermissionRequest, Reply};
use crate::tool::{BoxFuture, ToolError, ToolSpec};

/// Checks every permission the call needs; `Ok` means it may run.
pub async fn permit(
    exec: &Executor,
    session: &Session,
    ctx: &ToolContext,
    spec: &ToolSpec,
    mut requests: Vec<PermissionRequest>,
    fingerprint: Option<(u64, bool)>,
) -> Result<(), Failure> {
    if let Some((fingerprint, overlapping)) = fingerprint
        && session.note_call(fingerprint, overlapping)
    {
        requests.insert(
            0,
            PermissionRequest::new(DOOM_LOOP, [spec.name.as_str()])
                .with_metadata("reason", format!("third identical {} call in a row", spec.name)),
        );
    }
    let gate = Gate::new(exec.permission.clone(), exec.approver.clone(), session.clone());
    // A call that a rule denies is refused before anyone is asked about its other requests
    // (`rm x` in plan mode: its `bash` request asks, its `edit` request is denied), so the answer
    // is the deny that `permission explain` shows, and no one approves a call that cannot run.
    for request in &requests {
        gate.refuse_denied(ctx.info(), request)?;
    }
    for request in requests {
        gate.check(ctx.info(), request).await?;
    }
    Ok(())
}

/// Applies rules, session approvals and the approver to permission requests; also the handle
/// behind [`ToolContext::ask`].
pub struct Gate {
    permission: Arc<dyn Permission>,
    approver: Arc<dyn Approver>,
    session: Session,
    /// For the questions a tool asks while it runs: the time waited for their answers (not the
    /// tool's), and refusals say the tool had started.
    running: Option<Arc<Waited>>,
}

/// The time waited for answers to a running tool's questions, in microseconds.
#[derive(Debug, Default)]
pub struct Waited(std::sync::atomic::AtomicU64);

impl Waited {
    /// The time waited so far.
    pub fn total(&self) -> std::time::Duration {
        std::time::Duration::from_micros(self.0.load(std::sync::atomic::Ordering::Relaxed))
    }

    fn add(&self, waited: std::time::Duration) {
        let micros = u64::try_from(waited.as_micros()).unwrap_or(u64::MAX);
        self.0.fetch_add(micros, std::sync::atomic::Ordering::Relaxed);
    }
}

/// How a refusal before a call ran ends its facts (what follows is advice for the model).
pub const NOT_RUN: &str = " The call was not run";

/// How a refusal of a question a tool asked while running ends its facts.
pub const STOPPED: &str = " The tool stopped at this request";

/// The facts of a refusal, without what it tells the model to do next.
pub fn refusal_facts(refusal: &str) -> &str {
    let end = [NOT_RUN, STOPPED].iter().filter_map(|m| refusal.find(m)).min().unwrap_or(refusal.len());
    &refusal[..end]
}

impl Gate {
    /// A gate for `session`.
    pub fn new(permission: Arc<dyn Permission>, approver: Arc<dyn Approver>, session: Session) -> Self {
        Gate { permission, approver, session, running: None }
    }

    /// A gate for the questions a tool asks while it runs: the time their answers take is
    /// added to `waited`.
    pub fn while_running(
        permission: Arc<dyn Permission>,
        approver: Arc<dyn Approver>,
        session: Session,
        waited: Arc<Waited>,
    ) -> Self {
        Gate { permission, approver, session, running: Some(waited) }
    }

    /// What a refusal says of the call, ending in `end`: not run, or stopped after it began.
    fn not_run(&self, end: char) -> String {
        match self.running {
            None => format!("{NOT_RUN}{end}"),
            Some(_) => format!("{STOPPED} (what it did before asking was done){end}"),
        }
    }

    /// Asks the approver, counting the wait for a running tool.
    async fn approve(&self, approval: &ApprovalRequest) -> Reply {
        let started = std::time::Instant::now();
        let reply = self.approver.approve(approval).await;
        if let Some(waited) = &self.running {
            waited.add(started.elapsed());
        }
        reply
    }

    /// `Ok` if `request` is allowed, possibly after asking; otherwise the model-visible reason.
    ///
    /// An `edit` of a protected path (see [`crate::protected`]) also needs `protected`: after
    /// the edit's own denies, the protected paths are asked about first, and a person's answer
    /// there also answers the edit's ask for those paths (one question per write).
    pub async fn check(&self, call: &CallInfo, mut request: PermissionRequest) -> Result<(), ToolError> {
        if request.secondary {
            return self.check_secondary(call, request).await;
        }
        if request.patterns.is_empty() {
            request.patterns.push("*".to_string());
        }
        let mut answered = Vec::new();
        if let Some(protected) = crate::protected::implied_request(&request, crate::paths::config_dir().as_deref()) {
            self.denied(call, &request)?;
            let paths = protected.patterns.clone();
            if self.check_with(call, protected, &[]).await? {
                answered = paths;
            }
        }
        self.check_with(call, request, &answered).await.map(drop)
    }

    /// The model-visible error if the rules deny `request` (or the `protected` request it
    /// implies); secondary requests are never denied outright (see [`Gate::check`]).
    pub fn refuse_denied(&self, call: &CallInfo, request: &PermissionRequest) -> Result<(), ToolError> {
        if request.secondary {
            return Ok(());
        }
        if request.patterns.is_empty() {
            let mut all = request.clone();
            all.patterns.push("*".to_string());
            return self.refuse_denied(call, &all);
        }
        self.denied(call, request)?;
        if let Some(protected) = crate::protected::implied_request(request, crate::paths::config_dir().as_deref()) {
            self.denied(call, &protected)?;
        }
        Ok(())
    }

    /// The model-visible error if any pattern of `request` is denied.
    fn denied(&self, call: &CallInfo, request: &PermissionRequest) -> Result<(), ToolError> {
        for pattern in &request.patterns {
            let decision = self.permission.evaluate(&call.agent, &request.permission, pattern);
            if decision.action == Action::Deny {
                let rule = decision.rule.map(|r| format!(" (rule: {r})")).unwrap_or_default();
                return Err(ToolError::model(format!(
                    "{}Permission denied: the rules of agent `{}` forbid `{}` on `{pattern}`{rule}.{} do not retry it. Use another approach, or ask the user to change the rule.",
                    doom_prefix(call, request),
                    call.agent,
                    request.permission,
                    self.not_run(';'),
                )));
            }
        }
        Ok(())
    }

    /// Checks one request; patterns in `answered` were already approved by the approver for this
    /// call. Returns whether the approver was asked (and approved).
    async fn check_with(
        &self,
        call: &CallInfo,
        request: PermissionRequest,
        answered: &[String],
    ) -> Result<bool, ToolError> {
        self.denied(call, &request)?;
        let unanswered = || {
            let mut unanswered = Vec::new();
            for pattern in &request.patterns {
                let decision = self.permission.evaluate(&call.agent, &request.permission, pattern);
                // (Denies were answered above.)
                let allowed = decision.action == Action::Allow && request.minimum == Action::Allow;
                if !allowed && !self.session.approved(&request.permission, pattern) && !answered.contains(pattern) {
                    unanswered.push(pattern.clone());
                }
            }
            unanswered
        };
        if unanswered().is_empty() {
            return Ok(false);
        }
        // One question of the session at a time; once it is this call's turn, an "always"
        // given meanwhile (to a parallel call's question) may have answered it.
        let _turn = self.session.questions().lock().await;
        let unanswered = unanswered();
        if unanswered.is_empty() {
            return Ok(false);
        }
        let approval = ApprovalRequest::for_call(call, &request);
        match self.approve(&approval).await {
            Reply::Once => {
                self.session.approve_call(&call.call_id, &request.permission, &unanswered);
                Ok(true)
            }
            Reply::Always => {
                self.session.approve(&request.permission, &request.always);
                self.session.approve_call(&call.call_id, &request.permission, &unanswered);
                Ok(true)
            }
            Reply::Reject(reason) => {
                let reason = reason.unwrap_or_else(|| "the user rejected it".to_string());
                Err(ToolError::model(format!(
                    "{}Permission for `{}` on `{}` was not granted: {reason}.{}",
                    doom_prefix(call, &request),
                    request.permission,
                    unanswered.join("`, `"),
                    self.not_run('.'),
                )))
            }
        }
    }
}

impl Gate {
    /// A secondary request ([`PermissionRequest::secondary`]): a pattern the rules deny asks the
    /// approver (session approvals do not answer it), everything else passes.
    async fn check_secondary(&self, call: &CallInfo, mut request: PermissionRequest) -> Result<(), ToolError> {
        if request.opaque {
            return self.check_opaque(call, request).await;
        }
        let mut denied = Vec::new();
        let mut rules = Vec::new();
        for pattern in &request.patterns {
            let decision = self.permission.evaluate(&call.agent, &request.permission, pattern);
            if request.effective(decision.action) != Action::Allow {
                denied.push(pattern.clone());
                if let Some(rule) = decision.rule.map(|r| format!("rule: {r}"))
                    && !rules.contains(&rule)
                {
                    rules.push(rule);
                }
            }
        }
        if denied.is_empty() {
            return Ok(());
        }
        let why = format!(
            "`{}` appears in the command where a program could be run, and the rules of agent `{}` forbid it ({}); it may only be an argument",
            denied.join("`, `"),
            call.agent,
            rules.join(", "),
        );
        request.patterns = denied;
        self.ask_once(
            call,
            request,
            why,
            "Write the command so that no forbidden command appears in it, or ask the user to run it.",
        )
        .await
    }

    /// Asks about a secondary request `why` it needs asking; a rejection tells the model that and
    /// `instead`. "Always" remembers nothing.
    async fn ask_once(
        &self,
        call: &CallInfo,
        mut request: PermissionRequest,
        why: String,
        instead: &str,
    ) -> Result<(), ToolError> {
        request.metadata.insert("reason".into(), why.clone().into());
        let approval = ApprovalRequest::for_call(call, &request);
        match self.approve(&approval).await {
            Reply::Once | Reply::Always => Ok(()),
            Reply::Reject(reason) => {
                let reason = reason.unwrap_or_else(|| "the user rejected it".to_string());
                Err(ToolError::model(format!(
                    "Permission for `{}` on `{}` was not granted: {reason}.{} Why it asked: {why}. {instead}",
                    request.permission,
                    request.patterns.join("`, `"),
                    self.not_run('.'),
                )))
            }
        }
    }

    /// An opaque request ([`PermissionRequest::opaque`]): commands that run code no rule can
    /// read ask when the agent's rules deny some pattern of the key, unless the command was
    /// approved in this call (or for the session), or a rule naming it allows it.
    async fn check_opaque(&self, call: &CallInfo, mut request: PermissionRequest) -> Result<(), ToolError> {
        let key = request.permission.clone();
        let unanswered: Vec<String> = request
            .patterns
            .iter()
            .filter(|pattern| {
                let decision = self.permission.evaluate(&call.agent, &key, pattern);
                request.action(&decision, self.permission.as_ref(), &call.agent) != Action::Allow
                    && !self.session.approved_in_call(&call.call_id, &key, pattern)
                    && !self.session.approved(&key, pattern)
            })
            .cloned()
            .collect();
        if unanswered.is_empty() {
            return Ok(());
        }
        request.patterns = unanswered;
        let denies = self.permission.deny_rules(&call.agent, &key);
        let mut shown: Vec<String> = denies.iter().take(3).map(|r| format!("`{}`", r.pattern)).collect();
        if denies.len() > 3 {
            shown.push(format!("{} more", denies.len() - 3));
        }
        let why = format!(
            "it runs code the rules cannot read, which could run a command the rules of agent `{}` deny ({})",
            call.agent,
            shown.join(", "),
        );
        let instead = "Make the change with the file tools or plain shell commands the rules can check, or ask the user to run it.";
        self.ask_once(call, request, why, instead).await
    }
}

fn doom_prefix(call: &CallInfo, request: &PermissionRequest) -> String {
    if request.permission == "doom_loop" {
        format!("You have called {} three times in a row with identical arguments. ", call.tool)
    } else {
        String::new()
    }
}

impl Asker for Gate {
    fn ask<'a>(&'a self, call: &'a CallInfo, request: PermissionRequest) -> BoxFuture<'a, Result<(), ToolError>> {
        Box::pin(self.check(call, request))
    }

    fn decide(&self, call: &CallInfo, permission: &str, pattern: &str) -> Action {
        match self.permission.evaluate(&call.agent, permission, pattern).action {
            // The common case first, without touching the session's locks.
            Action::Allow => Action::Allow,
            Action::Deny => Action::Deny,
            _ if self.session.approved(permission, pattern) => Action::Allow,
            _ if self.session.approved_in_call(&call.call_id, permission, pattern) => Action::Allow,
            action => action,
        }
    }

    fn allows(&self, call: &CallInfo, request: &PermissionRequest) -> bool {
        let star = ["*".to_string()];
        let patterns = if request.patterns.is_empty() { &star[..] } else { &request.patterns[..] };
        patterns.iter().all(|pattern| {
            match self.permission.evaluate(&call.agent, &request.permission, pattern).action {
                Action::Deny => false,
                Action::Allow if request.minimum == Action::Allow => true,
                Action::Allow | Action::Ask => {
                    self.session.approved(&request.permission, pattern)
                        || self.session.approved_in_call(&call.call_id, &request.permission, pattern)
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::permission::{ApproveAll, RejectAll, Rule, Ruleset};
    use std::sync::Mutex;

    fn info() -> CallInfo {
        CallInfo {
            session_id: "s".into(),
            message_id: "m".into(),
            call_id: "c".into(),
            agent: "build".into(),
            tool: "read".into(),
        }
    }

    struct Scripted(Mutex<Vec<Reply>>);
    impl Approver for Scripted {
        fn approve<'a>(&'a self, _r: &'a ApprovalRequest) -> BoxFuture<'a, Reply> {
            let reply = self.0.lock().unwrap().remove(0);
            Box::pin(async move { reply })
        }
    }

    #[tokio::test]
    async fn deny_names_the_rule_and_never_asks() {
        let mut rules = Ruleset::defaults();
        rules.push(Rule::new("bash", "rm *", Action::Deny));
        let gate = Gate::new(Arc::new(rules), Arc::new(ApproveAll), Session::new("s", "build"));
        let err = gate.check(&info(), PermissionRequest::new("bash", ["ls", "rm -rf x"])).await.unwrap_err();
        insta::assert_snapshot!(err.to_string(), @r#"Permission denied: the rules of agent `build` forbid `bash` on `rm -rf x` (rule: bash "rm *" = deny). The call was not run; do not retry it. Use another approach, or ask the user to change the rule."#);
    }

    #[tokio::test]
    async fn non_interactive_ask_is_rejected_and_the_model_told_why() {
        let gate = Gate::new(Arc::new(Ruleset::defaults()), Arc::new(RejectAll), Session::new("s", "build"));
        let err = gate.check(&info(), PermissionRequest::new("read", [".env"])).await.unwrap_err();
        insta::assert_snapshot!(err.to_string(), @"Permission for `read` on `.env` was not granted: No one is available to approve it in this non-interactive run. Do not retry it: do without it, or tell the user in your answer that it needs their approval (they can rerun with --yes). The call was not run.");
    }

    #[tokio::test]
    async fn always_answer_is_remembered_for_the_session() {
        let approver = Scripted(Mutex::new(vec![Reply::Always]));
        let session = Session::new("s", "build");
        let gate = Gate::new(Arc::new(Ruleset::defaults()), Arc::new(approver), session.clone());
        let req = PermissionRequest::new("external_directory", ["/etc/*"]);
        gate.check(&info(), req.clone()).await.unwrap();
        // A second ask would panic the scripted approver (no replies left): it must not happen.
        gate.check(&info(), req).await.unwrap();
        assert!(session.approved("external_directory", "/etc/*"));
    }

    /// Answers after a pause, so parallel questions overlap.
    struct Slow(Recording);
    impl Approver for Slow {
        fn approve<'a>(&'a self, r: &'a ApprovalRequest) -> BoxFuture<'a, Reply> {
            Box::pin(async move {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                self.0.approve(r).await
            })
        }
    }

    #[tokio::test]
    async fn an_always_answers_a_parallel_calls_question_that_waited_for_it() {
        let mut rules = Ruleset::defaults();
        rules.push(Rule::new("bash", "*", Action::Ask));
        let approver = Arc::new(Slow(Recording(Mutex::new(vec![Reply::Always]), Mutex::default())));
        let gate = Gate::new(Arc::new(rules), approver.clone(), Session::new("s", "build"));
        let ask = |command: &str| {
            let mut request = PermissionRequest::new("bash", [command]);
            request.always = vec!["echo *".to_string()];
            request
        };
        let call = info();
        let (one, two) = tokio::join!(gate.check(&call, ask("echo one")), gate.check(&call, ask("echo two")));
        one.unwrap();
        two.unwrap();
        // One question: the second call's was answered by the first's "always".
        assert_eq!(approver.0.1.lock().unwrap().len(), 1, "{:?}", approver.0.1.lock().unwrap());
    }

    #[tokio::test]
    async fn a_minimum_of_ask_is_not_covered_by_allow_rules() {
        let gate = Gate::new(Arc::new(Ruleset::defaults()), Arc::new(RejectAll), Session::new("s", "build"));
        let req = PermissionRequest::new("bash", ["eval \"$x\""]).at_least(Action::Ask);
        let err = gate.check(&info(), req).await.unwrap_err();
        assert!(err.to_string().contains("was not granted"), "{err}");
        let deny = Ruleset::new(vec![Rule::new("bash", "*", Action::Deny)]);
        let gate = Gate::new(Arc::new(deny), Arc::new(ApproveAll), Session::new("s", "build"));
        let err = gate.check(&info(), PermissionRequest::new("bash", ["x"]).at_least(Action::Ask)).await.unwrap_err();
        assert!(err.to_string().starts_with("Permission denied"), "{err}");
    }

    #[test]
    fn allows_answers_from_rules_and_always_approvals_without_asking() {
        let mut rules = Ruleset::defaults();
        rules.push(Rule::new("protected", ".git/*", Action::Allow));
        let session = Session::new("s", "build");
        // RejectAll would reject any ask: `allows` must not consult it.
        let gate = Gate::new(Arc::new(rules), Arc::new(RejectAll), session.clone());
        assert!(gate.allows(&info(), &PermissionRequest::new("protected", [".git/*"])));
        assert!(!gate.allows(&info(), &PermissionRequest::new("protected", [".git/*", "toolshed.toml"])));
        assert!(!gate.allows(&info(), &PermissionRequest::new("protected", [".git/*"]).at_least(Action::Ask)));
        session.approve("protected", &["toolshed.toml".to_string()]);
        assert!(gate.allows(&info(), &PermissionRequest::new("protected", [".git/*", "toolshed.toml"])));
        let deny = Ruleset::new(vec![Rule::new("*", "*", Action::Deny)]);
        let gate = Gate::new(Arc::new(deny), Arc::new(ApproveAll), session);
        assert!(!gate.allows(&info(), &PermissionRequest::new("protected", ["toolshed.toml"])));
    }

    #[tokio::test]
    async fn a_secondary_request_asks_only_for_what_the_rules_deny() {
        let mut rules = Ruleset::new(vec![Rule::new("bash", "*", Action::Ask)]);
        rules.push(Rule::new("bash", "rm *", Action::Deny));
        rules.push(Rule::new("bash", "ls *", Action::Allow));
        // Nothing denied: no one is asked (the scripted approver has no replies), ask rules included.
        let gate = Gate::new(Arc::new(rules.clone()), Arc::new(Scripted(Mutex::default())), Session::new("s", "build"));
        gate.check(&info(), PermissionRequest::new("bash", ["ls x", "cat x"]).secondary()).await.unwrap();
        // A deny asks; a rejection says which pattern and rule, and what to do.
        let gate = Gate::new(Arc::new(rules.clone()), Arc::new(RejectAll), Session::new("s", "build"));
        let err = gate.check(&info(), PermissionRequest::new("bash", ["ls", "rm x"]).secondary()).await.unwrap_err();
        insta::assert_snapshot!(err.to_string(), @r#"Permission for `bash` on `rm x` was not granted: No one is available to approve it in this non-interactive run. Do not retry it: do without it, or tell the user in your answer that it needs their approval (they can rerun with --yes). The call was not run. Why it asked: `rm x` appears in the command where a program could be run, and the rules of agent `build` forbid it (rule: bash "rm *" = deny); it may only be an argument. Write the command so that no forbidden command appears in it, or ask the user to run it."#);
        // Approved once or always: it runs, and "always" remembers nothing, so it asks again.
        let approver = Scripted(Mutex::new(vec![Reply::Always, Reply::Once]));
        let session = Session::new("s", "build");
        let gate = Gate::new(Arc::new(rules), Arc::new(approver), session.clone());
        gate.check(&info(), PermissionRequest::new("bash", ["rm x"]).secondary()).await.unwrap();
        assert!(!session.approved("bash", "rm x"));
        gate.check(&info(), PermissionRequest::new("bash", ["rm x"]).secondary()).await.unwrap();
    }

    #[tokio::test]
    async fn an_opaque_request_asks_only_where_some_command_is_denied() {
        let opaque = || PermissionRequest::new("bash", ["python3 -c 'import os'"]).opaque();
        // No deny rule for bash: nothing to hide from, no one is asked.
        let allow_all = Ruleset::new(vec![Rule::new("*", "*", Action::Allow)]);
        let gate = Gate::new(Arc::new(allow_all), Arc::new(Scripted(Mutex::default())), Session::new("s", "build"));
        gate.check(&info(), opaque()).await.unwrap();
        // A deny of some command: the code could run it, so it asks, even where `*` allows.
        let mut rules = Ruleset::new(vec![Rule::new("bash", "*", Action::Allow)]);
        rules.push(Rule::new("bash", "rm *", Action::Deny));
        let gate = Gate::new(Arc::new(rules.clone()), Arc::new(RejectAll), Session::new("s", "build"));
        let err = gate.check(&info(), opaque()).await.unwrap_err();
        insta::assert_snapshot!(err.to_string(), @"Permission for `bash` on `python3 -c 'import os'` was not granted: No one is available to approve it in this non-interactive run. Do not retry it: do without it, or tell the user in your answer that it needs their approval (they can rerun with --yes). The call was not run. Why it asked: it runs code the rules cannot read, which could run a command the rules of agent `build` deny (`rm *`). Make the change with the file tools or plain shell commands the rules can check, or ask the user to run it.");
        // A rule that names the command allows it outright.
        let mut named = rules.clone();
        named.push(Rule::new("bash", "python3 *", Action::Allow));
        let gate = Gate::new(Arc::new(named), Arc::new(RejectAll), Session::new("s", "build"));
        gate.check(&info(), opaque()).await.unwrap();
        // A person who approved the command in this call is not asked twice.
        let session = Session::new("s", "build");
        session.approve_call(&info().call_id, "bash", &["python3 -c 'import os'".to_string()]);
        let gate = Gate::new(Arc::new(rules), Arc::new(RejectAll), session);
        gate.check(&info(), opaque()).await.unwrap();
    }

    #[tokio::test]
    async fn rejection_with_feedback_reaches_the_model() {
        let approver = Scripted(Mutex::new(vec![Reply::Reject(Some("use the staging config instead".into()))]));
        let gate = Gate::new(Arc::new(Ruleset::defaults()), Arc::new(approver), Session::new("s", "build"));
        let err = gate.check(&info(), PermissionRequest::new("read", ["prod.env"])).await.unwrap_err();
        assert!(err.to_string().contains("was not granted: use the staging config instead."), "{err}");
    }

    /// Records what it was asked and answers from a script.
    struct Recording(Mutex<Vec<Reply>>, Mutex<Vec<String>>);
    impl Approver for Recording {
        fn approve<'a>(&'a self, r: &'a ApprovalRequest) -> BoxFuture<'a, Reply> {
            self.1.lock().unwrap().push(format!("{} {}", r.request.permission, r.request.patterns.join(",")));
            let reply = self.0.lock().unwrap().remove(0);
            Box::pin(async move { reply })
        }
    }

    #[tokio::test]
    async fn writes_to_protected_paths_ask_once_and_only_for_those_paths() {
        let approver = Arc::new(Recording(Mutex::new(vec![Reply::Once]), Mutex::default()));
        let gate = Gate::new(Arc::new(Ruleset::defaults()), approver.clone(), Session::new("s", "build"));
        gate.check(&info(), PermissionRequest::new("edit", ["src/a.rs", "toolshed.toml", ".git/hooks/pre-commit"]))
            .await
            .unwrap();
        assert_eq!(*approver.1.lock().unwrap(), ["protected toolshed.toml,.git/hooks/pre-commit"]);
        // With `edit` asking too, the one answer covers the protected paths' edit.
        let mut rules = Ruleset::defaults();
        rules.push(Rule::new("edit", "*", Action::Ask));
        let approver = Arc::new(Recording(Mutex::new(vec![Reply::Once]), Mutex::default()));
        let gate = Gate::new(Arc::new(rules), approver.clone(), Session::new("s", "build"));
        gate.check(&info(), PermissionRequest::new("edit", [".toolshed/tools/x.toml"])).await.unwrap();
        assert_eq!(approver.1.lock().unwrap().len(), 1);
        // Unanswered (no terminal): not written.
        let gate = Gate::new(Arc::new(Ruleset::defaults()), Arc::new(RejectAll), Session::new("s", "build"));
        let err = gate.check(&info(), PermissionRequest::new("edit", ["toolshed.toml"])).await.unwrap_err();
        assert!(err.to_string().contains("Permission for `protected` on `toolshed.toml` was not granted"), "{err}");
        // Ordinary paths do not ask; a rule may allow protected writes.
        gate.check(&info(), PermissionRequest::new("edit", ["src/a.rs", "AGENTS.md"])).await.unwrap();
        let mut rules = Ruleset::defaults();
        rules.push(Rule::new("protected", "*", Action::Allow));
        let gate = Gate::new(Arc::new(rules), Arc::new(RejectAll), Session::new("s", "build"));
        gate.check(&info(), PermissionRequest::new("edit", ["toolshed.toml"])).await.unwrap();
        // An edit deny is never turned into a question.
        let mut rules = Ruleset::defaults();
        rules.push(Rule::new("edit", "*", Action::Deny));
        let gate = Gate::new(Arc::new(rules), Arc::new(ApproveAll), Session::new("s", "build"));
        let err = gate.check(&info(), PermissionRequest::new("edit", ["toolshed.toml"])).await.unwrap_err();
        assert!(err.to_string().starts_with("Permission denied"), "{err}");
    }

    #[tokio::test]
    async fn a_blanket_approval_never_lifts_the_sandbox() {
        let gate = Gate::new(Arc::new(Ruleset::defaults()), Arc::new(ApproveAll), Session::new("s", "build"));
        let err = gate.check(&info(), PermissionRequest::new("sandbox_escalation", ["touch /x"])).await.unwrap_err();
        assert!(err.to_string().contains("never granted by a blanket approval such as --yes"), "{err}");
        gate.check(&info(), PermissionRequest::new("read", [".env"])).await.unwrap();
        // Nor does it leave plan mode (plan's own rule asks for `plan_exit`).
        let mut rules = Ruleset::defaults();
        rules.push(Rule::new("plan_exit", "*", Action::Ask));
        let gate = Gate::new(Arc::new(rules), Arc::new(ApproveAll), Session::new("s", "plan"));
        let err = gate.check(&info(), PermissionRequest::new("plan_exit", ["*"])).await.unwrap_err();
        assert!(err.to_string().contains("plan mode stays on"), "{err}");
        let mut rules = Ruleset::defaults();
        rules.push(Rule::new("sandbox_escalation", "*", Action::Allow));
        let gate = Gate::new(Arc::new(rules), Arc::new(ApproveAll), Session::new("s", "build"));
        gate.check(&info(), PermissionRequest::new("sandbox_escalation", ["touch /x"])).await.unwrap();
    }
}
