//! The model catalog: context window, output limit, reasoning support (and which Anthropic models
//! take adaptive thinking) and prices of the common models of the preset providers, and token
//! estimates for providers that report no usage.
//!
//! Lookup is by longest prefix, after dropping an OpenRouter-style `vendor/` prefix and mapping
//! `.` to `-` (`anthropic/claude-sonnet-4.5` → `claude-sonnet-4-5`), so dated snapshots
//! (`gpt-5-2025-08-07`) find their family. An unknown model gets conservative limits and
//! `known: false`, so the caller can warn once. Prices are USD per million tokens, as published
//! by the providers; config can override any entry. Token estimates live in the `context`
//! crate (`estimate_tokens`: one pass over the bytes, no tokenizer table). Local-model families
//! also name the form in which they write tool calls as text (`tool_call_format = "auto"`).

use codecoder_protocol::ToolCallFormat;

/// What codecoder needs to know about a model.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelInfo {
    /// Total tokens the model can attend to (input + output).
    pub context_window: u64,
    /// The most tokens it can generate in one response.
    pub max_output_tokens: u64,
    /// Whether it produces reasoning (effort settings apply).
    pub reasoning: bool,
    /// USD per million input tokens.
    pub input_price: Option<f64>,
    /// USD per million cached input tokens.
    pub cached_input_price: Option<f64>,
    /// USD per million output tokens.
    pub output_price: Option<f64>,
    /// False when the model is not in the catalog and these are conservative defaults.
    pub known: bool,
}

/// Limits for a model the catalog does not know: small enough to be safe on most servers.
pub const UNKNOWN_MODEL: ModelInfo = ModelInfo {
    context_window: 32_768,
    max_output_tokens: 4_096,
    reasoning: false,
    input_price: None,
    cached_input_price: None,
    output_price: None,
    known: false,
};

// (prefix, context, max output, reasoning, input, cached input, output)
type Row = (&'static str, u64, u64, bool, f64, f64, f64);

const CATALOG: &[Row] = &[
    ("gpt-5-nano", 400_000, 128_000, true, 0.05, 0.005, 0.40),
    ("gpt-5-mini", 400_000, 128_000, true, 0.25, 0.025, 2.00),
    ("gpt-5-codex", 400_000, 128_000, true, 1.25, 0.125, 10.00),
    ("gpt-5", 400_000, 128_000, true, 1.25, 0.125, 10.00),
    ("gpt-4.1-nano", 1_047_576, 32_768, false, 0.10, 0.025, 0.40),
    ("gpt-4.1-mini", 1_047_576, 32_768, false, 0.40, 0.10, 1.60),
    ("gpt-4.1", 1_047_576, 32_768, false, 2.00, 0.50, 8.00),
    ("gpt-4o-mini", 128_000, 16_384, false, 0.15, 0.075, 0.60),
    ("gpt-4o", 128_000, 16_384, false, 2.50, 1.25, 10.00),
    ("o4-mini", 200_000, 100_000, true, 1.10, 0.275, 4.40),
    ("o3-mini", 200_000, 100_000, true, 1.10, 0.55, 4.40),
    ("o3", 200_000, 100_000, true, 2.00, 0.50, 8.00),
    ("claude-opus-4-7", 200_000, 128_000, true, 5.00, 0.50, 25.00),
    ("claude-opus-4-6", 200_000, 128_000, true, 5.00, 0.50, 25.00),
    ("claude-opus-4-5", 200_000, 64_000, true, 5.00, 0.50, 25.00),
    ("claude-opus-4", 200_000, 32_000, true, 15.00, 1.50, 75.00),
    ("claude-sonnet-4-6", 200_000, 64_000, true, 3.00, 0.30, 15.00),
    ("claude-sonnet-4", 200_000, 64_000, true, 3.00, 0.30, 15.00),
    ("claude-3-7-sonnet", 200_000, 64_000, true, 3.00, 0.30, 15.00),
    ("claude-haiku-4", 200_000, 64_000, true, 1.00, 0.10, 5.00),
    ("claude-3-5-haiku", 200_000, 8_192, false, 0.80, 0.08, 4.00),
    ("deepseek-reasoner", 128_000, 64_000, true, 0.28, 0.028, 0.42),
    ("deepseek-chat", 128_000, 8_192, false, 0.28, 0.028, 0.42),
];

/// Anthropic models that take adaptive thinking (`thinking: {type: "adaptive"}` with an
/// `output_config.effort`) instead of a fixed `budget_tokens`; newer ones accept nothing else.
const ADAPTIVE_THINKING: &[&str] = &["claude-opus-4-6", "claude-opus-4-7", "claude-sonnet-4-6"];

/// The text tool-call format of local-model families (`tool_call_format = "auto"`), by
/// prefix of the normalized name: Ollama tags (`qwen2.5-coder:7b`, `llama3.1:8b`), Hugging Face
/// ids and GGUF file names (`Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf`) all start with the family.
const TOOL_CALL_FORMATS: &[(&str, ToolCallFormat)] = &[
    ("qwen2", ToolCallFormat::Qwen),
    ("qwen3", ToolCallFormat::Qwen),
    ("qwq", ToolCallFormat::Qwen),
    ("hermes", ToolCallFormat::Hermes),
    ("nous-hermes", ToolCallFormat::Hermes),
    ("llama3", ToolCallFormat::Llama3),
    ("llama-3", ToolCallFormat::Llama3),
    ("meta-llama-3", ToolCallFormat::Llama3),
    ("mistral", ToolCallFormat::Mistral),
    ("mixtral", ToolCallFormat::Mistral),
    ("ministral", ToolCallFormat::Mistral),
    ("codestral", ToolCallFormat::Mistral),
    ("devstral", ToolCallFormat::Mistral),
    ("open-mistral", ToolCallFormat::Mistral),
    ("open-mixtral", ToolCallFormat::Mistral),
];

/// The format in which `model`'s family writes tool calls as text, when the catalog knows it.
pub fn tool_call_format(model: &str) -> Option<ToolCallFormat> {
    let name = normalize(model);
    TOOL_CALL_FORMATS
        .iter()
        .filter(|(prefix, _)| name.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|&(_, format)| format)
}

/// `model` without a `vendor/` prefix, `.` mapped to `-`, lowercase.
fn normalize(model: &str) -> String {
    model.rsplit('/').next().unwrap_or(model).replace('.', "-").to_ascii_lowercase()
}

/// Whether `model` takes Anthropic's adaptive thinking rather than a thinking budget.
pub fn adaptive_thinking(model: &str) -> bool {
    let name = normalize(model);
    ADAPTIVE_THINKING.iter().any(|prefix| name.starts_with(prefix))
}

/// The model families the catalog describes (each a prefix of the ids it covers), in its
/// order.
pub fn catalog_models() -> impl Iterator<Item = &'static str> {
    CATALOG.iter().map(|row| row.0)
}

/// The catalog entry of `model`, or `UNKNOWN_MODEL`.
pub fn model_info(model: &str) -> ModelInfo {
    let name = normalize(model);
    let best = CATALOG
        .iter()
        .filter(|row| name.starts_with(&row.0.replace('.', "-")))
        .max_by_key(|row| row.0.len());
    match best {
        Some(&(_, context_window, max_output_tokens, reasoning, input, cached, output)) => {
            ModelInfo {
                context_window,
                max_output_tokens,
                reasoning,
                input_price: Some(input),
                cached_input_price: Some(cached),
                output_price: Some(output),
                known: true,
            }
        }
        None => UNKNOWN_MODEL,
    }
}

impl ModelInfo {
    /// The cost in USD of `usage`, when prices are known.
    pub fn cost(&self, usage: &codecoder_protocol::Usage) -> Option<f64> {
        let per_token = |price: f64, tokens: u64| price * tokens as f64 / 1_000_000.0;
        let uncached = usage.input_tokens.saturating_sub(usage.cached_input_tokens);
        Some(
            per_token(self.input_price?, uncached)
                + per_token(self.cached_input_price?, usage.cached_input_tokens)
                + per_token(self.output_price?, usage.output_tokens),
        )
    }
}
