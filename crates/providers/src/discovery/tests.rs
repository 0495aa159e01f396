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
}
