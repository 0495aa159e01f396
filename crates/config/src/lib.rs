//! Layered configuration (seed L6.1).
//!
//! Layers, later ones winning: built-in defaults → `/etc/codecoder/config.toml` →
//! `$CODECODER_HOME/config.toml` → the project's `.codecoder/config.toml` (only once the project
//! is trusted with `codecoder trust`) → the selected profile (`[profiles.<name>]`) → `-c key=value`
//! overrides. Every layer is checked on its own, so an unknown key or a bad value is reported
//! with the file and line it is on and the closest valid key; then the layers are merged table by
//! table, remembering which layer each value came from (`config show --origin`).
//!
//! Invariants: the config never holds a credential (API keys live in the environment or in the
//! `0600` credentials file, see `credentials`); loading never writes.

mod credentials;
mod error;
mod home_file;
mod load;
mod schema;
mod trust;

pub use codecoder_protocol::{
    BackendPreference, FsyncPolicy, Inherit, ReasoningEffort, ReasoningSummary, ToolCallFormat,
    WireApi,
};
pub use credentials::{CREDENTIALS_FILE, load_credential, store_credential};
pub use error::{Error, Result};
pub use home_file::HomeFile;
pub use load::{LoadOptions, LoadedConfig, Origin, load, parse_override};
pub use schema::{
    AgentToml, ConfigToml, FormatterToml, HookGroupToml, HookHandlerToml, LspServerToml, LspToml,
    McpServerToml, McpTransportToml, ModelToml, NetworkToml, PermissionsToml, ProfileToml,
    ProviderToml, SandboxToml, SandboxWorkspaceWriteToml, SessionToml, ShellEnvironmentPolicyToml,
    ShellToml, WebSearchToml, json_schema,
};
pub use trust::{is_trusted, project_root, trust};

#[cfg(test)]
mod tests;
