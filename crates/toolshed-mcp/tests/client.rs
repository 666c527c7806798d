//! The MCP client against real child processes: the fixture server and its crashing, hanging
//! and broken-schema variants.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use toolshed_core::config::McpConfig;
use toolshed_core::exec::{Executor, Session, ToolCall, ToolResult};
use toolshed_core::permission::{Action, Rule, Ruleset};
use toolshed_core::registry::{PermissionHook, Registry, View};
use toolshed_mcp::{ConnectOptions, McpClients, McpServer, State};

fn fixture(mode: &str) -> McpConfig {
    McpConfig {
        command: Some(env!("CARGO_BIN_EXE_mcp-fixture-server").to_string()),
        args: vec!["--mode".into(), mode.into()],
        timeout_ms: Some(3000),
        ..McpConfig::default()
    }
}

async fn connect(servers: &[(&str, McpConfig)]) -> McpClients {
    let owned: Vec<(String, McpConfig)> = servers.iter().map(|(n, c)| (n.to_string(), c.clone())).collect();
    McpClients::connect(owned.iter().map(|(n, c)| (n, c)), &ConnectOptions::default()).await
}

fn executor(clients: &McpClients, rules: Ruleset) -> Executor {
    let mut registry = Registry::new();
    clients.register(&mut registry);
    let rules = Arc::new(rules);
    registry.add_hook(Arc::new(PermissionHook(rules.clone())));
    Executor::builder(registry, std::env::temp_dir()).permission(rules).build()
}

async fn call(executor: &Executor, tool: &str, args: serde_json::Value) -> ToolResult {
    executor.call(&Session::new("s", "build"), ToolCall::json("c", tool, args)).await
}

#[tokio::test]
async fn tools_are_imported_as_server_prefixed_names_and_called_through_the_chain() {
    let clients = connect(&[("fx", fixture("ok"))]).await;
    let status = &clients.statuses()[0];
    assert_eq!(status.state, State::Connected);
    assert_eq!(status.tools, ["fx_echo", "fx_add", "fx_fail", "fx_slow", "fx_crash", "fx_quit", "fx_image", "fx_grow"]);
    let exec = executor(&clients, Ruleset::defaults());
    let echo = exec.registry().get("fx_echo").unwrap();
    assert_eq!(echo.spec().parameters["required"], json!(["text"]));
    let r = call(&exec, "fx_echo", json!({"text": "hi"})).await;
    assert_eq!((r.is_error, r.output.as_str()), (false, "hi"));
    let r = call(&exec, "fx_add", json!({"a": 2, "b": 40})).await;
    assert_eq!(r.output, "42");
    let r = call(&exec, "fx_fail", json!({"message": "no such repository"})).await;
    assert!(r.is_error);
    assert_eq!(r.output, "no such repository");
    let r = call(&exec, "fx_image", json!({})).await;
    assert_eq!(r.attachments.len(), 1);
    // Schema validation runs before anything reaches the server.
    let r = call(&exec, "fx_add", json!({"a": "two"})).await;
    assert!(r.is_error && r.output.contains("`b`"), "{}", r.output);
    clients.shutdown().await;
}

#[tokio::test]
async fn a_server_that_crashes_at_start_is_unavailable_with_its_own_words() {
    let clients = connect(&[("boom", fixture("crash")), ("fx", fixture("ok"))]).await;
    let statuses = clients.statuses();
    let State::Unavailable(reason) = &statuses[0].state else { panic!("{:?}", statuses[0].state) };
    assert!(reason.contains("crashing on purpose"), "{reason}");
    assert!(reason.starts_with("it exited (or closed its standard input and output) before answering"), "{reason}");
    assert_eq!(statuses[1].state, State::Connected);
    let exec = executor(&clients, Ruleset::defaults());
    assert!(exec.registry().get("boom_echo").is_none());
    assert_eq!(call(&exec, "fx_echo", json!({"text": "still here"})).await.output, "still here");
}

#[tokio::test]
async fn a_server_that_hangs_is_given_up_on_after_its_timeout() {
    let mut hang = fixture("hang");
    hang.startup_timeout_ms = Some(500);
    let started = Instant::now();
    let clients = connect(&[("stuck", hang), ("fx", fixture("ok"))]).await;
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
    let statuses = clients.statuses();
    let State::Unavailable(reason) = &statuses[0].state else { panic!("{:?}", statuses[0].state) };
    assert!(reason.starts_with("it did not answer within 500 ms"), "{reason}");
    assert_eq!(statuses[1].state, State::Connected);
}

#[tokio::test]
async fn a_tool_with_a_broken_schema_is_skipped_with_the_reason_and_the_rest_work() {
    let clients = connect(&[("br", fixture("broken-schema"))]).await;
    let status = &clients.statuses()[0];
    assert_eq!(status.state, State::Connected);
    assert_eq!(status.tools, ["br_echo"]);
    assert_eq!(status.skipped.len(), 1);
    assert_eq!(status.skipped[0].0, "bad");
    assert!(status.skipped[0].1.contains("not valid JSON Schema"), "{}", status.skipped[0].1);
    let exec = executor(&clients, Ruleset::defaults());
    assert_eq!(call(&exec, "br_echo", json!({"text": "ok"})).await.output, "ok");
}

#[tokio::test]
async fn a_server_none_of_whose_schemas_is_valid_is_unavailable_and_others_keep_working() {
    let clients = connect(&[("br", fixture("all-broken")), ("fx", fixture("ok"))]).await;
    let statuses = clients.statuses();
    let State::Unavailable(reason) = &statuses[0].state else { panic!("{:?}", statuses[0].state) };
    assert!(
        reason.starts_with("none of its tools can be used: `bad` the input schema is not valid JSON Schema"),
        "{reason}"
    );
    assert!(reason.ends_with("(and 1 more)"), "{reason}");
    assert_eq!(statuses[0].skipped.len(), 2);
    assert_eq!(statuses[1].state, State::Connected);
    let exec = executor(&clients, Ruleset::defaults());
    assert!(exec.registry().get("br_bad").is_none());
    assert_eq!(call(&exec, "fx_echo", json!({"text": "fine"})).await.output, "fine");
}

#[tokio::test]
async fn a_server_crashing_mid_call_is_restarted_on_the_next_call_a_bounded_number_of_times() {
    let clients = connect(&[("fx", fixture("ok")), ("other", fixture("ok"))]).await;
    let exec = executor(&clients, Ruleset::defaults());
    for restart in 1..=toolshed_mcp::client::MAX_RESTARTS {
        let r = call(&exec, "fx_crash", json!({})).await;
        assert!(r.is_error);
        assert!(
            r.output.starts_with("The MCP server `fx` crashed: the connection failed during the call"),
            "{}",
            r.output
        );
        assert!(r.output.contains("started again on the next call"), "{}", r.output);
        assert!(matches!(clients.statuses()[0].state, State::Unavailable(_)));
        // The others never notice.
        assert_eq!(call(&exec, "other_echo", json!({"text": "fine"})).await.output, "fine");
        let r = call(&exec, "fx_echo", json!({"text": format!("back {restart}")})).await;
        assert_eq!(r.output, format!("back {restart}"), "restart {restart}");
        assert_eq!(clients.statuses()[0].state, State::Connected);
    }
    // A server that keeps crashing is given up on.
    let r = call(&exec, "fx_crash", json!({})).await;
    assert!(r.output.starts_with("The MCP server `fx` is unavailable"), "{}", r.output);
    assert!(r.output.contains("already restarted 3 times"), "{}", r.output);
    let r = call(&exec, "fx_echo", json!({"text": "x"})).await;
    assert!(r.is_error && r.output.contains("unavailable"), "{}", r.output);
    assert_eq!(call(&exec, "other_echo", json!({"text": "still fine"})).await.output, "still fine");
}

#[tokio::test]
async fn a_server_that_exited_between_calls_is_started_again_before_the_next_one() {
    let clients = connect(&[("fx", fixture("ok"))]).await;
    let exec = executor(&clients, Ruleset::defaults());
    assert_eq!(call(&exec, "fx_quit", json!({})).await.output, "bye");
    tokio::time::sleep(Duration::from_millis(600)).await;
    let r = call(&exec, "fx_echo", json!({"text": "fresh"})).await;
    assert_eq!(r.output, "fresh", "{r:?}");
    assert_eq!(clients.statuses()[0].state, State::Connected);
}

#[tokio::test]
async fn two_servers_whose_tools_share_a_full_name_do_not_shadow_each_other_silently() {
    // `f.x` and `f_x` both sanitise to `f_x`: their `echo` tools are both `f_x_echo`.
    let clients = connect(&[("f.x", fixture("ok")), ("f_x", fixture("ok"))]).await;
    let exec = executor(&clients, Ruleset::defaults());
    assert_eq!(call(&exec, "f_x_echo", json!({"text": "first"})).await.output, "first");
    assert!(
        matches!(exec.registry().get("f_x_echo").unwrap().source, toolshed_core::registry::Source::Mcp(ref s) if s == "f.x")
    );
    let second = &clients.statuses()[1];
    let (raw, why) = second.skipped.iter().find(|(raw, _)| raw == "echo").unwrap();
    assert_eq!(raw, "echo");
    assert!(why.contains("already taken by a tool of the MCP server `f.x`"), "{why}");
}

#[tokio::test]
async fn calls_time_out_and_the_server_stays_usable() {
    let mut config = fixture("ok");
    config.timeout_ms = Some(400);
    let clients = connect(&[("fx", config)]).await;
    let exec = executor(&clients, Ruleset::defaults());
    let started = Instant::now();
    let r = call(&exec, "fx_slow", json!({"ms": 10_000})).await;
    assert!(r.is_error, "{}", r.output);
    assert!(r.output.to_lowercase().contains("time"), "{}", r.output);
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(call(&exec, "fx_echo", json!({"text": "after"})).await.output, "after");
}

#[tokio::test]
async fn a_changed_tool_list_is_fetched_again() {
    let config = fixture("ok");
    let server = McpServer::connect("fx", &config, &ConnectOptions::default()).await;
    let mut changes = server.subscribe();
    let mut registry = Registry::new();
    for tool in server.tools() {
        registry.register(tool, toolshed_core::registry::Source::Mcp("fx".into()));
    }
    let exec = Executor::builder(registry, std::env::temp_dir()).build();
    assert_eq!(call(&exec, "fx_grow", json!({})).await.output, "added extra");
    tokio::time::timeout(Duration::from_secs(5), changes.changed()).await.unwrap().unwrap();
    let names: Vec<String> = server.tools().iter().map(|t| toolshed_core::Tool::spec(t).name.clone()).collect();
    assert!(names.contains(&"fx_extra".to_string()), "{names:?}");
}

#[tokio::test]
async fn include_exclude_and_permission_rules_apply_to_full_names() {
    let mut config = fixture("ok");
    config.include = vec!["e*".into(), "a*".into(), "f*".into()];
    config.exclude = vec!["fail".into()];
    let clients = connect(&[("fx", config)]).await;
    assert_eq!(clients.statuses()[0].tools, ["fx_echo", "fx_add"]);
    let mut rules = Ruleset::defaults();
    rules.push(Rule::new("fx_add", "*", Action::Deny));
    let exec = executor(&clients, rules);
    let view = View { agent: "build", model: None, found: None };
    let shown: Vec<String> = exec.registry().direct(&view).iter().map(|v| v.entry.spec().name.clone()).collect();
    assert_eq!(shown, ["fx_echo"]);
    let r = call(&exec, "fx_add", json!({"a": 1, "b": 2})).await;
    assert!(r.is_error && r.output.starts_with("Permission denied"), "{}", r.output);
}

#[tokio::test]
async fn a_stdio_server_gets_only_the_minimal_environment_and_its_own_env() {
    let mut config = fixture("env");
    config.env.insert("FIXTURE_CONFIGURED".into(), "1".into());
    config.env.insert("FIXTURE_API_KEY".into(), "configured on purpose".into());
    let clients = connect(&[("fx", config)]).await;
    let exec = executor(&clients, Ruleset::defaults());
    let r = call(&exec, "fx_env", json!({})).await;
    assert!(!r.is_error, "{}", r.output);
    let names: Vec<&str> = r.output.lines().collect();
    assert!(names.contains(&"FIXTURE_CONFIGURED") && names.contains(&"FIXTURE_API_KEY"), "{names:?}");
    let allowed = toolshed_core::env::MCP_BASE;
    let unexpected: Vec<&&str> = names.iter().filter(|n| !allowed.contains(n) && !n.starts_with("FIXTURE_")).collect();
    assert!(unexpected.is_empty(), "the server inherited {unexpected:?}");
    // This test process has more than the minimal set (cargo sets CARGO_* for tests).
    assert!(std::env::vars().any(|(n, _)| n.starts_with("CARGO")), "the check above proves nothing");
    clients.shutdown().await;
}

#[tokio::test]
async fn env_pass_adds_named_variables_to_a_stdio_servers_environment() {
    let options =
        ConnectOptions { env: toolshed_core::env::ChildEnv::new(["CARGO_PKG_NAME"]), ..ConnectOptions::default() };
    let owned = [("fx".to_string(), fixture("env"))];
    let clients = McpClients::connect(owned.iter().map(|(n, c)| (n, c)), &options).await;
    let exec = executor(&clients, Ruleset::defaults());
    let r = call(&exec, "fx_env", json!({})).await;
    assert!(r.output.lines().any(|n| n == "CARGO_PKG_NAME"), "{}", r.output);
    assert!(!r.output.lines().any(|n| n == "CARGO_MANIFEST_DIR"), "{}", r.output);
    clients.shutdown().await;
}

/// A server that is slow to start (`npx -y` with a cold npm cache) gets the start-up limit, not
/// the call limit: a short `timeout_ms` bounds calls only, and `startup_timeout_ms` bounds the
/// start.
#[tokio::test]
async fn start_up_and_calls_have_separate_time_limits() {
    let mut slow_start = fixture("ok");
    slow_start.args.extend(["--start-delay-ms".into(), "1500".into()]);
    slow_start.timeout_ms = Some(300);
    let clients = connect(&[("fx", slow_start.clone())]).await;
    assert_eq!(clients.statuses()[0].state, State::Connected, "the call limit cut the start short");
    let exec = executor(&clients, Ruleset::defaults());
    let r = call(&exec, "fx_slow", json!({"ms": 5_000})).await;
    assert!(r.is_error && r.output.contains("300 ms"), "{}", r.output);
    assert_eq!(call(&exec, "fx_echo", json!({"text": "up"})).await.output, "up");
    clients.shutdown().await;
    slow_start.startup_timeout_ms = Some(500);
    let clients = connect(&[("fx", slow_start)]).await;
    let State::Unavailable(reason) = &clients.statuses()[0].state else { panic!("{:?}", clients.statuses()[0]) };
    assert!(reason.starts_with("it did not answer within 500 ms"), "{reason}");
}

/// Re-exported upstream tools keep what toolshed does not use itself: a real MCP client of the
/// server (streamable HTTP on loopback) sees the fixture tool's title, output schema and every
/// annotation, and gets its embedded resource and structured content as the fixture sent them.
#[tokio::test]
async fn the_proxy_passes_upstream_tool_fields_and_results_through() {
    use rmcp::ServiceExt;
    use toolshed_mcp::server::{Exported, Peers};
    let clients = connect(&[("fx", fixture("rich"))]).await;
    let exported = Exported::new(executor(&clients, Ruleset::defaults()), "build", Peers::default());
    let listener = toolshed_mcp::server::bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let cancel = tokio_util::sync::CancellationToken::new();
    let serving = tokio::spawn({
        let (exported, cancel) = (exported.clone(), cancel.clone());
        async move { exported.serve_http(listener, cancel, None).await }
    });
    let _ = rustls::crypto::ring::default_provider().install_default();
    let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(format!("http://{addr}/mcp"));
    let client = ().serve(transport).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    let rich = serde_json::to_value(tools.iter().find(|t| t.name == "fx_rich").unwrap()).unwrap();
    assert_eq!(rich["title"], "Rich Report", "{rich}");
    assert_eq!(rich["outputSchema"]["required"], json!(["count"]), "{rich}");
    assert_eq!(rich["annotations"]["idempotentHint"], true, "{rich}");
    assert_eq!(rich["annotations"]["openWorldHint"], false, "{rich}");
    assert_eq!(rich["annotations"]["readOnlyHint"], true, "{rich}");
    let result = client.call_tool(rmcp::model::CallToolRequestParams::new("fx_rich")).await.unwrap();
    let result = serde_json::to_value(&result).unwrap();
    assert_eq!(result["structuredContent"], json!({"count": 3}), "{result}");
    assert_eq!(result["content"][1]["type"], "resource", "{result}");
    assert_eq!(result["content"][1]["resource"]["uri"], "file:///report.txt", "{result}");
    assert_eq!(result["content"][1]["resource"]["text"], "the report", "{result}");
    // A model of toolshed's own agent still reads it all as text.
    let r = call(&executor(&clients, Ruleset::defaults()), "fx_rich", json!({})).await;
    assert!(r.output.contains("3 findings") && r.output.contains("the report"), "{}", r.output);
    client.cancel().await.unwrap();
    cancel.cancel();
    let _ = serving.await;
    clients.shutdown().await;
}

/// A result with an embedded resource is recorded once: its text is in the output the model
/// reads (what the session store keeps, with the metadata), and the form the server sent, which
/// `mcp serve` hands to its clients, is not recorded beside it.
#[tokio::test]
async fn a_result_with_an_embedded_resource_is_recorded_once() {
    use toolshed_core::exec::record::MemoryRecorder;
    let clients = connect(&[("fx", fixture("rich"))]).await;
    let recorder = Arc::new(MemoryRecorder::default());
    let mut registry = Registry::new();
    clients.register(&mut registry);
    let executor = Executor::builder(registry, std::env::temp_dir()).recorder(recorder.clone()).build();
    let r = call(&executor, "fx_rich", json!({})).await;
    assert!(!r.is_error, "{}", r.output);
    assert!(r.passthrough.is_some(), "the server's own form is still there for `mcp serve`");
    let records = recorder.records();
    assert_eq!(records.len(), 1);
    let recorded = &records[0].result;
    // What a recorder stores: the output, the metadata, the attachments (`call --json` prints the same).
    let stored = format!("{}\n{}", serde_json::Value::Object(recorded.metadata.clone()), recorded.to_json());
    assert_eq!(recorded.output.matches("the report").count(), 1, "{}", recorded.output);
    assert_eq!(serde_json::Value::Object(recorded.metadata.clone()).to_string().matches("the report").count(), 0);
    assert_eq!(recorded.to_json().to_string().matches("the report").count(), 1, "{stored}");
    clients.shutdown().await;
}

/// An upstream image or embedded blob over `[output] max_blob_bytes` reaches neither the model
/// nor a client of `mcp serve` (a real MCP client over loopback HTTP): a note takes its place,
/// with its type, its size and what to do. One under the limit passes as it was sent.
#[tokio::test]
async fn oversized_images_and_blobs_are_replaced_by_a_note_for_the_model_and_for_mcp_clients() {
    use rmcp::ServiceExt;
    use toolshed_core::output::OutputLimits;
    use toolshed_mcp::server::{Exported, Peers};
    let limits = OutputLimits { max_blob_bytes: 64 * 1024, ..OutputLimits::default() };
    let clients = connect(&[("fx", fixture("big"))]).await;
    let build = || {
        let mut registry = Registry::new();
        clients.register(&mut registry);
        Executor::builder(registry, std::env::temp_dir()).limits(limits).build()
    };
    // Toolshed's own model.
    let image = call(&build(), "fx_image_of", json!({"bytes": 3_000_000})).await;
    assert!(!image.is_error && image.attachments.is_empty(), "{}", image.output);
    assert!(
        image
            .output
            .contains("[An image (image/png, 3000000 bytes) was left out: it is over toolshed's limit of 65536 bytes")
            && image.output.contains("[output] max_blob_bytes")
            && image.output.contains("Call the tool again asking for less"),
        "{}",
        image.output
    );
    assert!(image.output.len() < 1024, "{}", image.output.len());
    let small = call(&build(), "fx_image_of", json!({"bytes": 1000})).await;
    assert_eq!(small.attachments.len(), 1, "{}", small.output);
    // A client of `mcp serve`.
    let exported = Exported::new(build(), "build", Peers::default());
    let listener = toolshed_mcp::server::bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let cancel = tokio_util::sync::CancellationToken::new();
    let serving = tokio::spawn({
        let (exported, cancel) = (exported.clone(), cancel.clone());
        async move { exported.serve_http(listener, cancel, None).await }
    });
    let _ = rustls::crypto::ring::default_provider().install_default();
    let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(format!("http://{addr}/mcp"));
    let client = ().serve(transport).await.unwrap();
    let over = |tool: &str, bytes: u64| {
        let mut params = rmcp::model::CallToolRequestParams::new(tool.to_string());
        params.arguments = json!({"bytes": bytes}).as_object().cloned();
        client.call_tool(params)
    };
    for (tool, what) in [
        ("fx_image_of", "[An image (image/png, 3000000 bytes) was left out"),
        ("fx_blob_of", "[The embedded resource file:///big.bin (application/octet-stream, 3000000 bytes) was left out"),
    ] {
        let result = serde_json::to_value(over(tool, 3_000_000).await.unwrap()).unwrap();
        let text = result.to_string();
        assert!(text.len() < 4096, "{tool}: {} bytes went out", text.len());
        assert!(text.contains(what), "{tool}: {text}");
        let types: Vec<&str> =
            result["content"].as_array().unwrap().iter().map(|c| c["type"].as_str().unwrap()).collect();
        assert!(types.iter().all(|t| *t == "text"), "{tool}: {text}");
    }
    let blob = serde_json::to_value(over("fx_blob_of", 1000).await.unwrap()).unwrap();
    assert_eq!(blob["content"][1]["type"], "resource", "{blob}");
    let image = serde_json::to_value(over("fx_image_of", 1000).await.unwrap()).unwrap();
    assert_eq!(image["content"][1]["type"], "image", "{image}");
    client.cancel().await.unwrap();
    cancel.cancel();
    let _ = serving.await;
    clients.shutdown().await;
}
