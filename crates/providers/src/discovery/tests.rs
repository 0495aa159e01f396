//! Unit tests of discovery's readers, one per server's answer shape, with answers as the
//! servers write them.

use serde_json::json;

use super::*;

fn served(id: &str, context_window: Option<u64>) -> ServedModel {
    ServedModel { id: id.to_owned(), context_window }
}

#[test]
fn llama_cpp_props_give_the_running_window() {
    let props = json!({
        "default_generation_settings": {"n_ctx": 8192, "params": {"n_predict": -1}},
        "total_slots": 1,
        "model_path": "/models/SmolLM2-135M-Instruct-Q8_0.gguf",
        "chat_template": "{{ messages }}"
    });
    assert_eq!(parse_props(&props), Some(8192));
    assert_eq!(parse_props(&json!({"n_ctx": 2048})), Some(2048));
    assert_eq!(parse_props(&json!({"default_generation_settings": {}})), None);
    assert_eq!(parse_props(&json!({"default_generation_settings": {"n_ctx": 0}})), None);
}

#[test]
fn llama_cpp_models_list_reads_meta() {
    let list = json!({
        "object": "list",
        "data": [{
            "id": "smollm2",
            "object": "model",
            "owned_by": "llamacpp",
            "meta": {"vocab_type": 2, "n_vocab": 49152, "n_ctx_train": 8192, "n_embd": 576}
        }]
    });
    assert_eq!(parse_model_list(&list), vec![served("smollm2", Some(8192))]);
}

#[test]
fn vllm_models_list_reads_max_model_len() {
    let list = json!({
        "object": "list",
        "data": [
            {"id": "Qwen/Qwen2.5-7B-Instruct", "object": "model", "owned_by": "vllm", "max_model_len": 32768},
            {"id": "lora-adapter", "object": "model", "parent": "Qwen/Qwen2.5-7B-Instruct"}
        ]
    });
    assert_eq!(
        parse_model_list(&list),
        vec![served("Qwen/Qwen2.5-7B-Instruct", Some(32768)), served("lora-adapter", None)]
    );
}

#[test]
fn lm_studio_prefers_the_loaded_window() {
    let list = json!({
        "object": "list",
        "data": [
            {"id": "qwen2.5-7b-instruct", "type": "llm", "state": "loaded",
             "max_context_length": 32768, "loaded_context_length": 4096},
            {"id": "llama-3.2-1b", "type": "llm", "state": "not-loaded", "max_context_length": 131072}
        ]
    });
    assert_eq!(
        parse_model_list(&list),
        vec![served("qwen2.5-7b-instruct", Some(4096)), served("llama-3.2-1b", Some(131072))]
    );
}

#[test]
fn a_plain_openai_list_has_ids_only() {
    let list = json!({"object": "list", "data": [{"id": "a"}, {"id": "b"}, {"object": "model"}]});
    assert_eq!(parse_model_list(&list), vec![served("a", None), served("b", None)]);
    assert_eq!(parse_model_list(&json!({"error": "nope"})), vec![]);
}

#[test]
fn ollama_tags_list_names() {
    let tags = json!({"models": [
        {"name": "llama3.2:latest", "model": "llama3.2:latest", "size": 2019393189},
        {"name": "qwen2.5-coder:7b", "model": "qwen2.5-coder:7b"}
    ]});
    assert_eq!(
        parse_ollama_tags(&tags),
        vec![served("llama3.2:latest", None), served("qwen2.5-coder:7b", None)]
    );
}

fn ollama_show(parameters: Option<&str>) -> Value {
    let mut show = json!({
        "modelfile": "FROM llama3.2",
        "template": "{{ .Prompt }}",
        "details": {"family": "llama"},
        "model_info": {
            "general.architecture": "llama",
            "llama.context_length": 131072,
            "qwen2.context_length": 32768
        }
    });
    if let Some(parameters) = parameters {
        show["parameters"] = json!(parameters);
    }
    show
}

#[test]
fn ollama_show_num_ctx_wins() {
    let show = ollama_show(Some(
        "num_ctx                        16384\nstop                           \"<|eot_id|>\"",
    ));
    assert_eq!(ollama_num_ctx(&show), Some(16384));
    assert_eq!(ollama_trained_context(&show), Some(131_072));
    assert_eq!(ollama_window(&show, Some(8192)), 16384);
}

#[test]
fn ollama_without_num_ctx_uses_the_loaded_window_then_the_default() {
    let show = ollama_show(Some("stop \"<|eot_id|>\""));
    assert_eq!(ollama_num_ctx(&show), None);
    assert_eq!(ollama_window(&show, Some(32768)), 32768);
    assert_eq!(ollama_window(&show, None), OLLAMA_DEFAULT_CONTEXT);
    assert_eq!(ollama_window(&ollama_show(None), None), OLLAMA_DEFAULT_CONTEXT);
}

#[test]
fn ollama_window_is_capped_by_the_trained_length() {
    let mut show = ollama_show(Some("num_ctx 262144"));
    assert_eq!(ollama_window(&show, None), 131_072);
    show["model_info"] = json!({"qwen2.context_length": 32768});
    assert_eq!(ollama_trained_context(&show), Some(32768));
    assert_eq!(ollama_window(&show, None), 32768);
}

#[test]
fn ollama_ps_gives_the_loaded_models_window() {
    let ps = json!({"models": [
        {"name": "llama3.2:latest", "model": "llama3.2:latest", "context_length": 8192},
        {"name": "other:latest", "model": "other:latest"}
    ]});
    assert_eq!(ollama_loaded_context(&ps, "llama3.2:latest"), Some(8192));
    assert_eq!(ollama_loaded_context(&ps, "other:latest"), None);
    assert_eq!(ollama_loaded_context(&ps, "missing"), None);
}

#[test]
fn the_root_drops_a_trailing_v1() {
    assert_eq!(server_root("http://localhost:11434/v1"), "http://localhost:11434");
    assert_eq!(server_root("http://localhost:8080/v1/"), "http://localhost:8080");
    assert_eq!(server_root("http://host/api"), "http://host/api");
}

#[test]
fn cloud_presets_are_never_asked() {
    let env = |_: &str| -> Option<String> { Some("key".into()) };
    for id in ["openai", "openai-chat", "anthropic", "deepseek", "openrouter"] {
        let config = ProviderConfig::preset(id, &env).unwrap();
        assert!(is_cloud(&config), "{id}");
        assert_eq!(context_window(&config, &env, "gpt-5", DISCOVERY_TIMEOUT), None, "{id}");
    }
    for id in ["ollama", "lmstudio"] {
        assert!(!is_cloud(&ProviderConfig::preset(id, &env).unwrap()), "{id}");
    }
    assert!(!is_cloud(&ProviderConfig::new("local", "http://127.0.0.1:1/v1", WireApi::Chat, None)));
    let table = |url: &str| ProviderConfig::new("mine", url, WireApi::Chat, None);
    assert!(is_cloud(&table("https://api.openai.com/v1")));
    assert!(is_cloud(&table("https://my-team.openai.azure.com/openai")));
    assert!(is_cloud(&table("https://OpenRouter.ai/api/v1")));
    assert!(!is_cloud(&table("http://gpu-box.lan:8000/v1")));
    assert!(!is_cloud(&table("http://notopenrouter.ai.example/v1")));
}

mod over_http {
    use codecoder_test_support::{FakeModelServer, Script};

    use super::*;

    fn local(id: &str, server: &FakeModelServer) -> ProviderConfig {
        let mut config = ProviderConfig::new(
            id,
            format!("{}/v1", server.base_url()),
            WireApi::Chat,
            Some("LOCAL_KEY"),
        );
        config.http_headers.insert("X-Team".into(), "blue".into());
        config
    }

    fn env(key: &str) -> Option<String> {
        (key == "LOCAL_KEY").then(|| "sk-local-1234".to_owned())
    }

    #[test]
    fn llama_cpp_props_win_over_the_listing_and_carry_the_providers_headers() {
        let script = Script::new()
            .discovery("/props", json!({"default_generation_settings": {"n_ctx": 4096}}))
            .discovery(
                "/v1/models",
                json!({"data": [{"id": "smol", "meta": {"n_ctx_train": 8192}}]}),
            );
        let server = FakeModelServer::start(script).unwrap();
        let config = local("llama", &server);
        let window = context_window(&config, &env, "smol", DISCOVERY_TIMEOUT).unwrap();
        assert_eq!(window.tokens, 4096);
        assert_eq!(window.source, format!("{}/props", server.base_url()));
        let asked = server.discovery_requests();
        assert_eq!(asked[0].path, "/props");
        assert_eq!(asked[0].header("authorization"), Some("Bearer sk-local-1234"));
        assert_eq!(asked[0].header("x-team"), Some("blue"));
        assert!(server.requests().is_empty());

        let list = list_models(&config, &env, DISCOVERY_TIMEOUT).unwrap();
        assert_eq!(list.source, format!("{}/v1/models", server.base_url()));
        assert_eq!(list.models, vec![served("smol", Some(4096))]);
    }

    #[test]
    fn vllm_window_comes_from_the_listing_when_there_is_no_props() {
        let script = Script::new().discovery(
            "/v1/models",
            json!({"data": [{"id": "other"}, {"id": "qwen", "max_model_len": 16384}]}),
        );
        let server = FakeModelServer::start(script).unwrap();
        let config = local("vllm", &server);
        let window = context_window(&config, &env, "qwen", DISCOVERY_TIMEOUT).unwrap();
        assert_eq!(window.tokens, 16384);
        assert_eq!(window.source, format!("{}/v1/models", server.base_url()));
        assert_eq!(context_window(&config, &env, "other", DISCOVERY_TIMEOUT), None);
    }

    #[test]
    fn ollama_is_asked_through_its_own_api() {
        let script = Script::new()
            .discovery(
                "/api/show",
                json!({"parameters": "num_ctx 8192", "model_info": {"general.architecture": "llama", "llama.context_length": 131072}}),
            )
            .discovery("/api/tags", json!({"models": [{"name": "llama3.2:latest"}]}));
        let server = FakeModelServer::start(script).unwrap();
        let config = local("ollama", &server);
        let window = context_window(&config, &env, "llama3.2:latest", DISCOVERY_TIMEOUT).unwrap();
        assert_eq!(window.tokens, 8192);
        let show = &server.discovery_requests()[0];
        assert_eq!((show.method.as_str(), show.path.as_str()), ("POST", "/api/show"));
        assert_eq!(show.body, json!({"model": "llama3.2:latest"}));
        let list = list_models(&config, &env, DISCOVERY_TIMEOUT).unwrap();
        assert_eq!(list.source, format!("{}/api/tags", server.base_url()));
        assert_eq!(list.models, vec![served("llama3.2:latest", None)]);
    }

    #[test]
    fn ollama_under_another_id_is_found_by_probing() {
        let script = Script::new()
            .discovery("/v1/models", json!({"data": [{"id": "qwen2.5-coder:7b"}]}))
            .discovery("/api/show", json!({"model_info": {"qwen2.context_length": 32768}}))
            .discovery(
                "/api/ps",
                json!({"models": [{"name": "qwen2.5-coder:7b", "context_length": 16384}]}),
            );
        let server = FakeModelServer::start(script).unwrap();
        let config = local("gpu-box", &server);
        let window = context_window(&config, &env, "qwen2.5-coder:7b", DISCOVERY_TIMEOUT).unwrap();
        assert_eq!(window.tokens, 16384);
        assert_eq!(window.source, format!("{}/api/ps", server.base_url()));
        let asked: Vec<String> = server.discovery_requests().into_iter().map(|r| r.path).collect();
        assert_eq!(asked, ["/props", "/v1/models", "/api/v0/models", "/api/show", "/api/ps"]);
    }

    #[test]
    fn a_server_that_says_nothing_gives_no_window_and_a_listing_error() {
        let server = FakeModelServer::start(Script::new()).unwrap();
        let config = local("plain", &server);
        assert_eq!(context_window(&config, &env, "m", DISCOVERY_TIMEOUT), None);
        let err = list_models(&config, &env, DISCOVERY_TIMEOUT).unwrap_err();
        assert!(matches!(err, Error::Http { status: 404, .. }), "{err}");
        let addr = server.addr();
        drop(server);
        let gone = ProviderConfig::new("gone", format!("http://{addr}/v1"), WireApi::Chat, None);
        assert_eq!(context_window(&gone, &env, "m", DISCOVERY_TIMEOUT), None);
        let err = list_models(&gone, &env, DISCOVERY_TIMEOUT).unwrap_err();
        assert!(matches!(err, Error::Connection { .. }), "{err}");
    }

    #[test]
    fn a_server_that_accepts_but_never_answers_gives_no_window() {
        // Connections are accepted (by the backlog) and never read: every request times out.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let silent =
            ProviderConfig::new("silent", format!("http://{addr}/v1"), WireApi::Chat, None);
        let timeout = Duration::from_millis(300);
        assert_eq!(context_window(&silent, &env, "m", timeout), None);
        assert!(list_models(&silent, &env, timeout).is_err());
        drop(listener);
    }
}
