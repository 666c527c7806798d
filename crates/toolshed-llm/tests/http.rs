//! The clients against real HTTP servers on loopback: wiremock for whole bodies, and the
//! hand-written fake server where chunks must be split or the stream broken.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use serde_json::json;
use toolshed_core::ToolSpec;
use toolshed_core::config::ProviderKind;
use toolshed_llm::provider::ProviderSettings;
use toolshed_llm::testing::{FakeServer, Reply, anthropic, chat, responses};
use toolshed_llm::{CallKind, Client, LlmError, Message, Part, Request, RetryPolicy, StopReason, StreamEvent, collect};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn client(kind: ProviderKind, base_url: &str, key: Option<&str>) -> Client {
    let settings = ProviderSettings {
        name: "test".into(),
        kind,
        base_url: base_url.into(),
        api_key: key.map(str::to_string),
        api_key_env: Some("TEST_KEY".into()),
    };
    Client::new(settings).unwrap().with_retry(RetryPolicy {
        max_retries: 3,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(50),
        max_retry_after: Duration::from_secs(5),
    })
}

fn request() -> Request {
    Request {
        model: "m1".into(),
        system: "be brief".into(),
        messages: vec![Message::user("read a.txt")],
        tools: vec![ToolSpec::new(
            "read",
            "Read a file.",
            json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        )],
        max_tokens: None,
    }
}

fn sse_body(events: Vec<String>) -> ResponseTemplate {
    ResponseTemplate::new(200).insert_header("content-type", "text/event-stream").set_body_string(events.concat())
}

fn calls(r: &toolshed_llm::Response) -> Vec<(String, String, String)> {
    r.message.tool_calls().map(|c| (c.id.clone(), c.name.clone(), c.arguments.clone())).collect()
}

#[tokio::test]
async fn chat_completions_streams_parallel_tool_calls_from_wiremock() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(header("authorization", "Bearer sk-test"))
        .respond_with(sse_body(chat::tool_calls(&[
            ("c1", "read", r#"{"path":"a.txt"}"#),
            ("c2", "read", r#"{"path":"b.txt"}"#),
        ])))
        .expect(1)
        .mount(&server)
        .await;
    let c = client(ProviderKind::OpenaiChat, &format!("{}/v1", server.uri()), Some("sk-test"));
    let response = collect(c.stream(&request()).await.unwrap(), |_| {}).await.unwrap();
    assert_eq!(response.stop, StopReason::ToolUse);
    assert_eq!(
        calls(&response),
        [
            ("c1".into(), "read".into(), r#"{"path":"a.txt"}"#.into()),
            ("c2".into(), "read".into(), r#"{"path":"b.txt"}"#.into())
        ]
    );
    assert_eq!(response.usage.input_tokens, 100);
    let sent: serde_json::Value = server.received_requests().await.unwrap()[0].body_json().unwrap();
    assert_eq!(sent["tools"][0]["function"]["name"], "read");
    assert_eq!(sent["messages"][0], json!({"role": "system", "content": "be brief"}));
    assert_eq!(sent["stream"], true);
}

#[tokio::test]
async fn responses_streams_a_custom_tool_call_from_wiremock() {
    let server = MockServer::start().await;
    let patch = "*** Begin Patch\n*** Add File: x.txt\n+hi\n*** End Patch";
    Mock::given(method("POST"))
        .and(path("/v1/responses"))
        .respond_with(sse_body(responses::tool_calls(&[("call_9", "apply_patch", patch, true)])))
        .mount(&server)
        .await;
    let c = client(ProviderKind::OpenaiResponses, &format!("{}/v1", server.uri()), Some("sk"));
    let response = collect(c.stream(&request()).await.unwrap(), |_| {}).await.unwrap();
    let call = response.message.tool_calls().next().unwrap().clone();
    assert_eq!((call.id.as_str(), call.kind, call.arguments.as_str()), ("call_9", CallKind::Custom, patch));
    let sent: serde_json::Value = server.received_requests().await.unwrap()[0].body_json().unwrap();
    assert_eq!(sent["store"], false);
    assert_eq!(sent["tools"][0]["type"], "function");
    assert_eq!(sent["tools"][0]["strict"], false);
}

#[tokio::test]
async fn anthropic_sends_its_headers_and_streams_text_from_wiremock() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .and(header("x-api-key", "ak"))
        .and(header("anthropic-version", "2023-06-01"))
        .respond_with(sse_body(anthropic::text("All done here.")))
        .mount(&server)
        .await;
    let c = client(ProviderKind::Anthropic, &format!("{}/v1", server.uri()), Some("ak"));
    let mut streamed = String::new();
    let response = collect(c.stream(&request()).await.unwrap(), |e| {
        if let StreamEvent::TextDelta(t) = e {
            streamed.push_str(t);
        }
    })
    .await
    .unwrap();
    assert_eq!(response.message.text(), "All done here.");
    assert_eq!(streamed, "All done here.");
    assert_eq!(response.stop, StopReason::EndTurn);
}

#[tokio::test]
async fn a_429_with_retry_after_is_waited_out_then_succeeds() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "1")
                .set_body_json(json!({"error": {"message": "slow down"}})),
        )
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST")).respond_with(sse_body(chat::text("ok"))).with_priority(2).mount(&server).await;
    let c = client(ProviderKind::OpenaiChat, &format!("{}/v1", server.uri()), None);
    let started = Instant::now();
    let response = collect(c.stream(&request()).await.unwrap(), |_| {}).await.unwrap();
    assert_eq!(response.message.text(), "ok");
    assert!(started.elapsed() >= Duration::from_millis(950), "Retry-After ignored: {:?}", started.elapsed());
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}

#[tokio::test]
async fn a_retry_after_longer_than_toolshed_waits_is_reported_at_once_with_the_wait() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "3600")
                .set_body_json(json!({"error": {"message": "quota"}})),
        )
        .mount(&server)
        .await;
    let c = client(ProviderKind::OpenaiChat, &format!("{}/v1", server.uri()), None);
    let err = c.stream(&request()).await.err().unwrap().to_string();
    assert_eq!(
        err,
        "test is rate-limiting requests (HTTP 429) and still was after 1 attempt: quota (the server asked to wait 3600 s before retrying, longer than the 5 s toolshed waits; try again later)"
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

#[tokio::test]
async fn server_errors_are_retried_with_backoff_and_then_reported() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503).set_body_string("overloaded"))
        .mount(&server)
        .await;
    let c = client(ProviderKind::OpenaiChat, &format!("{}/v1", server.uri()), None);
    let err = c.stream(&request()).await.err().unwrap();
    assert_eq!(err, LlmError::Http { provider: "test".into(), status: 503, message: "overloaded".into() });
    assert_eq!(server.received_requests().await.unwrap().len(), 4, "1 attempt + 3 retries");
}

#[tokio::test]
async fn rate_limits_that_never_clear_say_how_often_they_were_tried() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(429).set_body_json(json!({"error": {"message": "quota"}})))
        .mount(&server)
        .await;
    let c = client(ProviderKind::Anthropic, &format!("{}/v1", server.uri()), Some("k"));
    let err = c.stream(&request()).await.err().unwrap();
    assert_eq!(err.to_string(), "test is rate-limiting requests (HTTP 429) and still was after 4 attempts: quota");
}

#[tokio::test]
async fn bad_keys_unknown_models_and_overflow_are_told_apart_without_retrying() {
    let server = MockServer::start().await;
    let cases = [
        (401, json!({"error": {"message": "Incorrect API key provided"}}), "rejected the API key"),
        (404, json!({"error": {"message": "The model `m1` does not exist"}}), "does not know the model `m1`"),
        (
            400,
            json!({"error": {"code": "context_length_exceeded", "message": "maximum context length is 8192 tokens"}}),
            "longer than the model's context window",
        ),
    ];
    for (status, body, expected) in cases {
        server.reset().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(status).set_body_json(body))
            .mount(&server)
            .await;
        let c = client(ProviderKind::OpenaiChat, &format!("{}/v1", server.uri()), Some("bad"));
        let err = c.stream(&request()).await.err().unwrap().to_string();
        assert!(err.contains(expected), "{status}: {err}");
        assert_eq!(server.received_requests().await.unwrap().len(), 1, "{status} must not be retried");
    }
}

#[tokio::test]
async fn arguments_split_into_single_bytes_and_utf8_halves_still_decode() {
    for kind in [ProviderKind::OpenaiChat, ProviderKind::OpenaiResponses, ProviderKind::Anthropic] {
        let args = r#"{"path":"naïve-日本.txt"}"#;
        let events = match kind {
            ProviderKind::OpenaiChat => chat::tool_calls(&[("c1", "read", args)]),
            ProviderKind::OpenaiResponses => responses::tool_calls(&[("c1", "read", args, false)]),
            ProviderKind::Anthropic => anthropic::tool_calls(&[("c1", "read", args)]),
        };
        let server = FakeServer::start(vec![Reply::sse(events).split(1)]).unwrap();
        let c = client(kind, &server.base_url(), Some("k"));
        let response = collect(c.stream(&request()).await.unwrap(), |_| {}).await.unwrap();
        assert_eq!(calls(&response), [("c1".into(), "read".into(), args.into())], "{kind:?}");
    }
}

#[tokio::test]
async fn a_stream_broken_mid_response_is_an_error_not_a_truncated_answer() {
    for kind in [ProviderKind::OpenaiChat, ProviderKind::OpenaiResponses, ProviderKind::Anthropic] {
        let events = match kind {
            ProviderKind::OpenaiChat => chat::text("one two three four"),
            ProviderKind::OpenaiResponses => responses::text("one two three four"),
            ProviderKind::Anthropic => anthropic::text("one two three four"),
        };
        let server = FakeServer::start(vec![Reply::sse(events).break_after(3)]).unwrap();
        let c = client(kind, &server.base_url(), Some("k"));
        let mut seen = Vec::new();
        let err = collect(c.stream(&request()).await.unwrap(), |e| seen.push(e.clone())).await.unwrap_err();
        assert!(matches!(err, LlmError::Stream { .. }), "{kind:?}: {err:?}");
        assert!(!seen.iter().any(|e| matches!(e, StreamEvent::Finished { .. })), "{kind:?}");
    }
}

#[tokio::test]
async fn a_provider_error_event_mid_stream_ends_the_response() {
    let mut events = anthropic::text("partial answer");
    events.truncate(3);
    events.push("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n".into());
    let server = FakeServer::start(vec![Reply::sse(events)]).unwrap();
    let c = client(ProviderKind::Anthropic, &server.base_url(), Some("k"));
    let err = collect(c.stream(&request()).await.unwrap(), |_| {}).await.unwrap_err();
    assert_eq!(err.to_string(), "test reported an error mid-response: overloaded_error: Overloaded");
}

#[tokio::test]
async fn a_silent_stream_times_out_without_a_retry() {
    let server = FakeServer::start(vec![Reply::sse(chat::text("late")).delay(Duration::from_millis(400))]).unwrap();
    let c = client(ProviderKind::OpenaiChat, &server.base_url(), None).with_idle_timeout(Duration::from_millis(100));
    // Nothing arrived before the timeout, so `stream` itself reports it.
    let err = c.stream(&request()).await.err().unwrap();
    assert!(err.to_string().contains("no data for"), "{err}");
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn a_server_that_never_sends_headers_is_given_up_on_after_the_idle_timeout() {
    // Accepts the connection, reads the request, never answers.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    let c = client(ProviderKind::OpenaiChat, &format!("http://127.0.0.1:{port}/v1"), None)
        .with_idle_timeout(Duration::from_millis(300));
    let started = std::time::Instant::now();
    let err = c.stream(&request()).await.err().unwrap().to_string();
    assert!(err.contains("no response within"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    accepted.abort();
}

#[tokio::test]
async fn a_refused_connection_is_retried_then_reported_with_the_url() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let c = client(ProviderKind::OpenaiChat, &format!("http://127.0.0.1:{port}/v1"), None);
    let err = c.stream(&request()).await.err().unwrap().to_string();
    assert!(err.starts_with(&format!("cannot reach test at http://127.0.0.1:{port}/v1/chat/completions")), "{err}");
    assert!(err.contains("is the server running"), "{err}");
}

#[tokio::test]
async fn the_fake_server_records_what_it_was_sent() {
    let server = FakeServer::start(vec![Reply::sse(chat::text("hi"))]).unwrap();
    let c = client(ProviderKind::OpenaiChat, &server.base_url(), Some("k"));
    let r = collect(c.stream(&request()).await.unwrap(), |_| {}).await.unwrap();
    assert_eq!(r.message.parts, vec![Part::Text { text: "hi".into() }]);
    let got = server.received();
    assert_eq!(got[0].path, "/v1/chat/completions");
    assert_eq!(got[0].header("authorization"), Some("Bearer k"));
    assert_eq!(got[0].body["model"], "m1");
}

#[tokio::test]
async fn a_stream_that_breaks_before_its_first_event_is_sent_again() {
    for kind in [ProviderKind::OpenaiChat, ProviderKind::OpenaiResponses, ProviderKind::Anthropic] {
        let events = match kind {
            ProviderKind::OpenaiChat => chat::text("fine answer"),
            ProviderKind::OpenaiResponses => responses::text("fine answer"),
            ProviderKind::Anthropic => anthropic::text("fine answer"),
        };
        // Headers, then the connection closes; then a clean end of a body that held no event.
        let server = FakeServer::start(vec![
            Reply::sse(events.clone()).break_after(0),
            Reply::sse(Vec::new()),
            Reply::sse(events),
        ])
        .unwrap();
        let c = client(kind, &server.base_url(), Some("k"));
        let mut seen = Vec::new();
        let response = collect(c.stream(&request()).await.unwrap(), |e| seen.push(e.clone())).await.unwrap();
        assert_eq!(response.message.text(), "fine answer", "{kind:?}");
        assert_eq!(seen.iter().filter(|e| matches!(e, StreamEvent::Finished { .. })).count(), 1, "{kind:?}");
        assert_eq!(server.received().len(), 3, "{kind:?}");
    }
}

#[tokio::test]
async fn a_transient_provider_error_before_any_output_is_retried() {
    let overloaded = vec![
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":1}}}\n\n".to_string(),
        "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n".to_string(),
    ];
    let server =
        FakeServer::start(vec![Reply::sse(overloaded), Reply::sse(anthropic::text("after the storm"))]).unwrap();
    let c = client(ProviderKind::Anthropic, &server.base_url(), Some("k"));
    let response = collect(c.stream(&request()).await.unwrap(), |_| {}).await.unwrap();
    assert_eq!(response.message.text(), "after the storm");
    assert_eq!(server.received().len(), 2);

    let failed = vec![
        "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r\"}}\n\n".to_string(),
        "event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"error\":{\"code\":\"server_error\",\"message\":\"boom\"}}}\n\n".to_string(),
    ];
    let server = FakeServer::start(vec![Reply::sse(failed), Reply::sse(responses::text("ok"))]).unwrap();
    let c = client(ProviderKind::OpenaiResponses, &server.base_url(), Some("k"));
    let response = collect(c.stream(&request()).await.unwrap(), |_| {}).await.unwrap();
    assert_eq!(response.message.text(), "ok");
    assert_eq!(server.received().len(), 2);
}

#[tokio::test]
async fn a_stream_that_fails_after_output_or_with_a_permanent_error_is_not_retried() {
    let server = FakeServer::start(vec![
        Reply::sse(chat::text("one two three four")).break_after(2),
        Reply::sse(chat::text("never asked for")),
    ])
    .unwrap();
    let c = client(ProviderKind::OpenaiChat, &server.base_url(), Some("k"));
    let mut text = String::new();
    let err = collect(c.stream(&request()).await.unwrap(), |e| {
        if let StreamEvent::TextDelta(t) = e {
            text.push_str(t);
        }
    })
    .await
    .unwrap_err();
    assert!(matches!(err, LlmError::Stream { .. }), "{err:?}");
    assert_eq!(text, "one two ");
    assert_eq!(server.received().len(), 1);

    let invalid = vec![
        "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"bad image\"}}\n\n"
            .to_string(),
    ];
    let server = FakeServer::start(vec![Reply::sse(invalid), Reply::sse(anthropic::text("never"))]).unwrap();
    let c = client(ProviderKind::Anthropic, &server.base_url(), Some("k"));
    let err = c.stream(&request()).await.err().unwrap();
    assert_eq!(err.to_string(), "test reported an error mid-response: invalid_request_error: bad image");
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn streams_that_keep_failing_before_output_use_up_the_retries() {
    let broken = || Reply::sse(chat::text("x")).break_after(0);
    let server = FakeServer::start(vec![broken(), broken(), broken(), broken(), broken()]).unwrap();
    let c = client(ProviderKind::OpenaiChat, &server.base_url(), Some("k"));
    let err = c.stream(&request()).await.err().unwrap();
    assert!(matches!(err, LlmError::Stream { .. }), "{err:?}");
    assert_eq!(server.received().len(), 4, "1 attempt + 3 retries");
    assert_eq!(server.remaining(), 1);
}

#[tokio::test]
async fn a_model_that_refuses_encrypted_reasoning_is_asked_again_without_it() {
    let server = FakeServer::start(vec![
        Reply::error(
            400,
            json!({"error": {"message": "Encrypted content is not supported with this model.", "type": "invalid_request_error", "param": "include"}}),
        ),
        Reply::sse(responses::text("first")),
        Reply::sse(responses::text("second")),
    ])
    .unwrap();
    let c = client(ProviderKind::OpenaiResponses, &server.base_url(), Some("k"));
    assert_eq!(c.body(&request())["include"], json!(["reasoning.encrypted_content"]));
    let first = collect(c.stream(&request()).await.unwrap(), |_| {}).await.unwrap();
    let second = collect(c.stream(&request()).await.unwrap(), |_| {}).await.unwrap();
    assert_eq!((first.message.text().as_str(), second.message.text().as_str()), ("first", "second"));
    let got = server.received();
    assert_eq!(got.len(), 3);
    assert_eq!(got[0].body["include"], json!(["reasoning.encrypted_content"]));
    assert!(got[1].body.get("include").is_none() && got[2].body.get("include").is_none());
}

#[tokio::test]
async fn a_quota_error_inside_the_stream_is_a_billing_problem_and_not_retried() {
    // The Responses API answers HTTP 200 and says so in a `response.failed` event.
    let failed = vec![
        "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r1\"}}\n\n".to_string(),
        "event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"id\":\"r1\",\"status\":\"failed\",\"error\":{\"code\":\"insufficient_quota\",\"message\":\"You exceeded your current quota, please check your plan and billing details.\"}}}\n\n".to_string(),
    ];
    let server = FakeServer::start(vec![Reply::sse(failed), Reply::sse(responses::text("never asked for"))]).unwrap();
    let c = client(ProviderKind::OpenaiResponses, &server.base_url(), Some("k"));
    let err = c.stream(&request()).await.err().unwrap();
    assert!(matches!(err, LlmError::Quota { status: None, .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "test refused the request because the account has no quota or credit left (said in the response stream): You exceeded your current quota, please check your plan and billing details. This is a billing problem, not rate limiting, and retrying does not help: check the plan and billing details of the account the API key belongs to"
    );
    assert_eq!(server.received().len(), 1, "a quota error must not be retried");

    // Anthropic's `error` event of type `billing_error`.
    let billing = vec![
        "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"billing_error\",\"message\":\"Your credit balance is too low to access the Anthropic API.\"}}\n\n"
            .to_string(),
    ];
    let server = FakeServer::start(vec![Reply::sse(billing), Reply::sse(anthropic::text("never"))]).unwrap();
    let c = client(ProviderKind::Anthropic, &server.base_url(), Some("k"));
    let err = c.stream(&request()).await.err().unwrap();
    assert!(matches!(err, LlmError::Quota { status: None, .. }), "{err:?}");
    assert_eq!(server.received().len(), 1, "a quota error must not be retried");
}

#[tokio::test]
async fn a_429_for_insufficient_quota_is_a_billing_problem_and_not_retried() {
    // OpenAI's answer when the account has no credit left: HTTP 429, like a rate limit.
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(429).set_body_json(json!({"error": {
            "message": "You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.",
            "type": "insufficient_quota",
            "param": null,
            "code": "insufficient_quota"
        }})))
        .mount(&server)
        .await;
    let c = client(ProviderKind::OpenaiResponses, &format!("{}/v1", server.uri()), Some("sk"));
    let err = c.stream(&request()).await.err().unwrap();
    assert!(matches!(err, LlmError::Quota { status: Some(429), .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("no quota or credit left") && text.contains("billing"), "{text}");
    assert!(!text.contains("rate-limiting"), "{text}");
    assert_eq!(server.received_requests().await.unwrap().len(), 1, "a quota error must not be retried");
}

#[tokio::test]
async fn a_connection_reset_after_the_finish_keeps_the_complete_answer() {
    // Chat Completions: reset after the `finish_reason` chunk, before the usage chunk and
    // `[DONE]`; Anthropic: after `message_delta` (the stop reason), before `message_stop`.
    for (kind, events, cut) in [
        (ProviderKind::OpenaiChat, chat::text("one two three"), 2),
        (ProviderKind::Anthropic, anthropic::text("one two three"), 1),
    ] {
        let at = events.len() - cut;
        let server = FakeServer::start(vec![Reply::sse(events).reset_after(at)]).unwrap();
        let c = client(kind, &server.base_url(), Some("k"));
        let response = collect(c.stream(&request()).await.unwrap(), |_| {}).await;
        let response = response.unwrap_or_else(|e| panic!("{kind:?}: the complete answer was lost: {e}"));
        assert_eq!(response.message.text(), "one two three", "{kind:?}");
        assert_eq!(response.stop, StopReason::EndTurn, "{kind:?}");
        assert_eq!(server.received().len(), 1, "{kind:?}: a complete answer is not asked for again");
    }
    // A reset before the finish still loses the answer, and says so.
    let events = chat::text("one two three");
    let at = events.len() - 3;
    let server = FakeServer::start(vec![Reply::sse(events).reset_after(at)]).unwrap();
    let c = client(ProviderKind::OpenaiChat, &server.base_url(), Some("k"));
    let err = collect(c.stream(&request()).await.unwrap(), |_| {}).await.unwrap_err();
    assert!(matches!(err, LlmError::Stream { .. }), "{err:?}");
}

#[tokio::test]
async fn anthropic_base_url_is_the_server_root_as_the_sdks_take_it() {
    use toolshed_llm::provider::{ModelRef, resolve};
    let server = FakeServer::start(vec![Reply::sse(anthropic::text("hi")); 3]).unwrap();
    let root = server.base_url().trim_end_matches("/v1").to_string();
    // As Claude Code and the Anthropic SDKs take it (no `/v1`), and with `/v1` as before.
    for base in [root.clone(), format!("{root}/"), format!("{root}/v1")] {
        let env = |name: &str| match name {
            "ANTHROPIC_BASE_URL" => Some(base.clone()),
            "ANTHROPIC_API_KEY" => Some("ak".to_string()),
            _ => None,
        };
        let model = ModelRef::parse("anthropic/claude-sonnet-4-5").unwrap();
        let settings = resolve(&toolshed_core::config::Config::default(), &model, &env).unwrap();
        let c = Client::new(settings).unwrap();
        let response = collect(c.stream(&request()).await.unwrap(), |_| {}).await.unwrap();
        assert_eq!(response.message.text(), "hi", "{base}");
        assert_eq!(server.received().last().unwrap().path, "/v1/messages", "{base}");
    }
}

#[tokio::test]
async fn a_404_that_does_not_name_the_model_is_a_wrong_address_not_an_unknown_model() {
    let not_found = Reply {
        status: 404,
        headers: vec![("content-type".into(), "text/plain".into())],
        chunks: vec![b"404 page not found\n".to_vec()],
        delay: Duration::ZERO,
        break_after: None,
        reset: false,
    };
    let server = FakeServer::start(vec![not_found]).unwrap();
    let c = client(ProviderKind::Anthropic, &format!("{}/api", server.base_url()), Some("k"));
    let err = c.stream(&request()).await.err().unwrap();
    assert!(matches!(err, LlmError::NotFound { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("/v1/api/messages") && text.contains("base URL"), "{text}");
    assert!(!text.contains("does not know the model"), "{text}");
    assert_eq!(server.received().len(), 1, "a 404 is not retried");
}

/// A 200 that is a web page or a JSON body (a `base_url` that names the wrong server, or a
/// server that does not stream) is said to be that, once: retrying would get the same.
#[tokio::test]
async fn a_page_or_a_json_body_instead_of_a_stream_is_named_and_not_retried() {
    for (kind, body, word) in [
        ("text/html; charset=utf-8", "<html><body>Welcome to nginx!</body></html>", "Welcome to nginx"),
        ("application/json", r#"{"choices":[{"message":{"content":"hi"}}]}"#, "choices"),
    ] {
        let page = Reply {
            status: 200,
            headers: vec![("content-type".into(), kind.into())],
            chunks: vec![body.as_bytes().to_vec()],
            delay: Duration::ZERO,
            break_after: None,
            reset: false,
        };
        let server = FakeServer::start(vec![page]).unwrap();
        let c = client(ProviderKind::OpenaiChat, &server.base_url(), None);
        let err = c.stream(&request()).await.err().unwrap();
        let text = err.to_string();
        let essence = kind.split(';').next().unwrap();
        assert!(text.contains(&format!("answered with {essence}, not an event stream")), "{text}");
        assert!(text.contains(word) && text.contains("base_url"), "{text}");
        assert_eq!(server.received().len(), 1, "not retried");
    }
}
