//! Names of every environment variable codecoder reads or sets, in one place.
//!
//! Invariant: no other crate spells an environment variable name as a string literal (tests
//! that set a variable for a child process may, where the name is the point of the test).

// Where codecoder keeps its state.

/// The home directory of codecoder (sessions, blobs, config). Default: `~/.codecoder`.
pub const CODECODER_HOME: &str = "CODECODER_HOME";
/// The user's home directory, used to find the default `CODECODER_HOME`, `~` in paths, and the
/// credential stores hidden from commands.
pub const HOME: &str = "HOME";
/// The token of a `codecoder serve` that `codecoder --remote URL` drives, when the server's
/// `serve.json` in `CODECODER_HOME` is for another URL (the default of `--remote-token-env`).
pub const CODECODER_SERVE_TOKEN: &str = "CODECODER_SERVE_TOKEN";

// The system.

/// Where programs are looked up (the sandbox finds `bwrap` on it).
pub const PATH: &str = "PATH";
/// The user's browser command(s), `:`-separated, each run with the URL (`%s` in it stands for
/// the URL): `codecoder serve --open`.
pub const BROWSER: &str = "BROWSER";
/// The user's shell, named in the prompt's environment section.
pub const SHELL: &str = "SHELL";
/// A writable temporary directory: a writable root of the sandbox unless excluded.
pub const TMPDIR: &str = "TMPDIR";
/// Set and non-empty: draw without colours (the no-color.org convention).
pub const NO_COLOR: &str = "NO_COLOR";

// Git.

/// The index file git uses: codecoder points it at a temporary file to snapshot a work tree
/// for checkpoints without touching the repository's own index.
pub const GIT_INDEX_FILE: &str = "GIT_INDEX_FILE";
/// The global git config file to use instead of `~/.gitconfig` and `$XDG_CONFIG_HOME/git/config`
/// (read for a `core.hooksPath` to protect).
pub const GIT_CONFIG_GLOBAL: &str = "GIT_CONFIG_GLOBAL";
/// The system git config file to use instead of `/etc/gitconfig`.
pub const GIT_CONFIG_SYSTEM: &str = "GIT_CONFIG_SYSTEM";
/// Set to a true value: git skips the system config file.
pub const GIT_CONFIG_NOSYSTEM: &str = "GIT_CONFIG_NOSYSTEM";
/// The base of the user's config files (default `~/.config`): git's global config may be
/// `$XDG_CONFIG_HOME/git/config`.
pub const XDG_CONFIG_HOME: &str = "XDG_CONFIG_HOME";

// Model providers: the presets' base URLs and API keys.

/// The OpenAI presets' base URL (default `https://api.openai.com/v1`).
pub const OPENAI_BASE_URL: &str = "OPENAI_BASE_URL";
/// The OpenAI presets' API key.
pub const OPENAI_API_KEY: &str = "OPENAI_API_KEY";
/// codex's key for `codex exec` (its TypeScript SDK passes `apiKey` in it): the OpenAI presets'
/// key when neither `OPENAI_API_KEY` nor a stored login gives one.
pub const CODEX_API_KEY: &str = "CODEX_API_KEY";
/// The Anthropic preset's base URL (default `https://api.anthropic.com`).
pub const ANTHROPIC_BASE_URL: &str = "ANTHROPIC_BASE_URL";
/// The Anthropic preset's API key.
pub const ANTHROPIC_API_KEY: &str = "ANTHROPIC_API_KEY";
/// The DeepSeek preset's API key.
pub const DEEPSEEK_API_KEY: &str = "DEEPSEEK_API_KEY";
/// The OpenRouter preset's API key.
pub const OPENROUTER_API_KEY: &str = "OPENROUTER_API_KEY";

// Set for child processes.

/// Set in every confined command: `bwrap`, `landlock` or `seatbelt`.
pub const CODECODER_SANDBOX: &str = "CODECODER_SANDBOX";
/// Set to `1` in a confined command when the network is off.
pub const CODECODER_SANDBOX_NETWORK_DISABLED: &str = "CODECODER_SANDBOX_NETWORK_DISABLED";
/// The HTTP proxy for `http://` URLs, set in a confined command whose network goes through the
/// managed proxy (curl, pip, npm, cargo and git read it); also in lower case.
pub const HTTP_PROXY: &str = "HTTP_PROXY";
/// [`HTTP_PROXY`] in lower case (curl reads only this one for `http://`).
pub const HTTP_PROXY_LOWER: &str = "http_proxy";
/// The HTTP proxy for `https://` URLs (tunnelled with CONNECT).
pub const HTTPS_PROXY: &str = "HTTPS_PROXY";
/// [`HTTPS_PROXY`] in lower case.
pub const HTTPS_PROXY_LOWER: &str = "https_proxy";
/// The proxy for every other protocol: `socks5h://…`, names resolved by the proxy.
pub const ALL_PROXY: &str = "ALL_PROXY";
/// [`ALL_PROXY`] in lower case.
pub const ALL_PROXY_LOWER: &str = "all_proxy";
/// The hosts reached without the proxy: loopback only.
pub const NO_PROXY: &str = "NO_PROXY";
/// [`NO_PROXY`] in lower case.
pub const NO_PROXY_LOWER: &str = "no_proxy";
/// The ssh command git runs for `ssh://` remotes; set for a proxied command (unless already
/// set) to ssh through the proxy's SOCKS5.
pub const GIT_SSH_COMMAND: &str = "GIT_SSH_COMMAND";
/// git's older way to name its ssh program; when set, [`GIT_SSH_COMMAND`] is left unset.
pub const GIT_SSH: &str = "GIT_SSH";
/// The project directory, as Claude Code sets it for hooks.
pub const CLAUDE_PROJECT_DIR: &str = "CLAUDE_PROJECT_DIR";
/// Our own name for the same directory, set next to [`CLAUDE_PROJECT_DIR`].
pub const CODECODER_PROJECT_DIR: &str = "CODECODER_PROJECT_DIR";
/// A Claude Code plugin's directory, set for the plugin's hooks.
pub const CLAUDE_PLUGIN_ROOT: &str = "CLAUDE_PLUGIN_ROOT";

// Tests.

/// When set to `1`, tests rewrite checked-in expected files (schemas, goldens) instead of failing.
pub const UPDATE_EXPECT: &str = "UPDATE_EXPECT";
/// When set to `1`, the serve API's schema test rewrites `crates/serve/api-schema.json`.
pub const UPDATE_SCHEMA: &str = "CODECODER_UPDATE_SCHEMA";
/// When set, slow tests run too.
pub const SLOW_TESTS: &str = "SLOW_TESTS";
/// A directory where `npm install --prefix` put the pinned npm packages the tests drive: the MCP
/// reference servers (`@modelcontextprotocol/server-everything`, `server-filesystem`) and the
/// TypeScript SDKs used as real clients (`@modelcontextprotocol/sdk`, `@agentclientprotocol/sdk`,
/// `@openai/codex-sdk`); `.ci/run` sets it. Under `CI=true` the tests that need it fail without
/// it; elsewhere they are skipped.
pub const CODECODER_TEST_NPM: &str = "CODECODER_TEST_NPM";
/// The npm prefix where `.ci/run` installed a pinned language server for the tests (pyright:
/// `node_modules/.bin/pyright-langserver`). Under `CI=true` the tests that need it fail without
/// it; elsewhere they are skipped.
pub const CODECODER_TEST_LSP: &str = "CODECODER_TEST_LSP";
/// A directory where `.ci/llama-server-env.sh` installed a real local model server for the tests:
/// `venv/` (llama-cpp-python with its server extra) and `model-path`, a file naming the
/// SmolLM2-135M-Instruct GGUF; `.ci/run` sets it. Under `CI=true` the tests that need it fail
/// without it; elsewhere they are skipped.
pub const CODECODER_TEST_LLAMA: &str = "CODECODER_TEST_LLAMA";
/// The npm prefix where `.ci/claude-sdk-env.sh` installed the Claude Agent SDK for TypeScript
/// (`@anthropic-ai/claude-agent-sdk`) that the headless-mode tests drive codecoder with; `.ci/run`
/// sets it. Under `CI=true` the tests that need it fail without it; elsewhere they are skipped.
pub const CODECODER_TEST_CLAUDE_SDK_JS: &str = "CODECODER_TEST_CLAUDE_SDK_JS";
/// The Python of the venv where `.ci/claude-sdk-env.sh` installed the Claude Agent SDK for Python
/// (`claude-agent-sdk`); `.ci/run` sets it. Under `CI=true` the tests that need it fail without
/// it; elsewhere they are skipped.
pub const CODECODER_TEST_CLAUDE_SDK_PY: &str = "CODECODER_TEST_CLAUDE_SDK_PY";
/// The Chromium executable the web UI's browser tests drive (Debian's `chromium`); `.ci/run`
/// sets it. Under `CI=true` the tests that need it fail without it; elsewhere they are skipped.
pub const CODECODER_TEST_CHROMIUM: &str = "CODECODER_TEST_CHROMIUM";
/// The npm prefix where `.ci/run` installed the pinned `puppeteer-core` that drives
/// `CODECODER_TEST_CHROMIUM`; needed with it.
pub const CODECODER_TEST_PUPPETEER: &str = "CODECODER_TEST_PUPPETEER";
/// A directory: the web UI's browser test saves its screenshots of the main views there
/// (`web-*.png`, as in `docs/`); unset, it takes none.
pub const CODECODER_WEB_SCREENSHOTS: &str = "CODECODER_WEB_SCREENSHOTS";
/// Set (to `true`) by CI services.
pub const CI: &str = "CI";
/// `skip-<backend>` (e.g. `skip-bwrap`): the sandbox escape suite leaves that backend out.
pub const CODECODER_SANDBOX_TESTS: &str = "CODECODER_SANDBOX_TESTS";
/// For tests only: names the managed network proxy reaches at a fixed address instead of
/// through the resolver (`registry.test=127.0.0.1:8080,forge.test=127.0.0.1:8081`), so local
/// servers stand in for registries. Read by the session's proxy; never set by a release.
pub const CODECODER_TEST_NET_RESOLVE: &str = "CODECODER_TEST_NET_RESOLVE";
/// For tests only: a PEM file of certificates the managed network proxy trusts, besides the
/// public roots, when it forwards an inspected HTTPS request, so a local HTTPS server with a
/// self-signed certificate stands in for a host. Read by the session's proxy; never set by a
/// release.
pub const CODECODER_TEST_NET_ROOTS: &str = "CODECODER_TEST_NET_ROOTS";

// The CA variables a proxied command gets when its session's proxy inspects TLS (a rule names
// paths or methods): the system's bundle plus the session CA, or the CA alone for node.

/// OpenSSL's (curl's, Python's ssl, many others') CA bundle file.
pub const SSL_CERT_FILE: &str = "SSL_CERT_FILE";
/// Python requests' (pip's) CA bundle file.
pub const REQUESTS_CA_BUNDLE: &str = "REQUESTS_CA_BUNDLE";
/// cargo's CA bundle file.
pub const CARGO_HTTP_CAINFO: &str = "CARGO_HTTP_CAINFO";
/// git's CA bundle file for https remotes.
pub const GIT_SSL_CAINFO: &str = "GIT_SSL_CAINFO";
/// Node's extra CA certificates, added to its built-in roots.
pub const NODE_EXTRA_CA_CERTS: &str = "NODE_EXTRA_CA_CERTS";

// Benchmarks.

/// The codex binary the codex comparison bench runs (default: the native binary of the
/// `@openai/codex` package under `CODECODER_TEST_NPM`).
pub const CODECODER_BENCH_CODEX: &str = "CODECODER_BENCH_CODEX";
/// The Claude Code binary the codex-at-scale bench runs too (default: the native binary of the
/// `@anthropic-ai/claude-code` package under `CODECODER_TEST_NPM`, when it is installed there).
pub const CODECODER_BENCH_CLAUDE: &str = "CODECODER_BENCH_CLAUDE";
/// A codecoder binary the exec bench runs instead of the one cargo built (to compare builds).
pub const CODECODER_BENCH_BIN: &str = "CODECODER_BENCH_BIN";
/// Set by the codex comparison bench on itself when it runs again inside a network namespace
/// of its own (only loopback), so that it does not re-enter one.
pub const CODECODER_BENCH_NETNS: &str = "CODECODER_BENCH_NETNS";

/// Set (to anything): Claude Code's headless mode notes on stderr the flags it accepts and
/// ignores.
pub const CODECODER_DEBUG: &str = "CODECODER_DEBUG";
