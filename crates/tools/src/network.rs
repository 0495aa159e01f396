//! The session's managed network as the command tools use it: one proxy (`codecoder_netproxy`)
//! started at the first command that needs it, an endpoint pair (a unix socket for bubblewrap's
//! relay, a loopback port for Landlock) per command labelled with its call, and the answer to a
//! host the policy does not cover: an approval request of the call that started the command
//! (`network:HOST`, never covered by the approval of the call itself), or a refusal when nobody
//! may be asked. Denials are gathered per command so its result tells the model why.
//!
//! Invariants:
//! - A command gets a proxied network only when it is sandboxed with the network off; a command
//!   with the whole network, or unconfined, is left as it is.
//! - An endpoint's label is in the table of askers exactly while its `CommandNetwork` lives; an
//!   ask for a label not there (the call that started a background command has returned) is
//!   refused without asking.
//! - The proxy (and so every endpoint's socket) goes when the last holder of the
//!   `ManagedNetwork` (the session's tool set) is dropped.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use codecoder_kernel::{Approver, EscalationRequest};
use codecoder_netproxy::{
    Ask, Decide, Decision, Endpoint, NetworkEvent, Observe, Outcome, ProxyConfig, ProxyHandle,
};
use codecoder_protocol::{ApprovalDecision, ToolError};
use codecoder_sandbox::{Confinement, NetworkProxy, Sandbox};

use crate::env::CallEnv;
use crate::{Escalation, ToolsConfig, failed};

/// The managed network of a session: the proxy's configuration, the proxy once started, and
/// who answers for each running command.
pub struct ManagedNetwork {
    config: ProxyConfig,
    askers: Arc<Askers>,
    // Started by the first command that needs it, from whichever tool thread runs it; held for
    // the start and for opening endpoints only.
    proxy: Mutex<Option<ProxyHandle>>,
}

impl fmt::Debug for ManagedNetwork {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ManagedNetwork")
            .field("allowed", &self.config.policy.allowed().len())
            .field("denied", &self.config.policy.denied().len())
            .finish_non_exhaustive()
    }
}

/// Who is asked about a command's hosts, and what it was refused.
struct Asker {
    /// The command line, for the person.
    command: String,
    /// The call's approver; `None` outside a kernel (nobody to ask).
    approver: Option<Approver>,
    /// False when the approval mode never asks.
    may_ask: bool,
    /// Whether approving the call approved its hosts too (`web_fetch`, whose call names its
    /// URL), unlike a command's call.
    covered_by_call_approval: bool,
    /// `host:port` and the reason, for each refusal, in order, without repeats.
    denials: Vec<(String, String)>,
}

/// The askers of the running commands, by endpoint label. Shared by the tool threads (which
/// add and remove commands) and the proxy's connection threads (which read an asker and record
/// denials): held for map operations only, never across an approval request.
#[derive(Default)]
struct Askers(Mutex<HashMap<String, Asker>>);

impl Askers {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Asker>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl ManagedNetwork {
    /// A managed network whose proxy will run with `config`; nothing starts yet.
    pub fn new(config: ProxyConfig) -> Arc<ManagedNetwork> {
        Arc::new(ManagedNetwork {
            config,
            askers: Arc::new(Askers::default()),
            proxy: Mutex::new(None),
        })
    }

    /// Whether the proxy has been started (by a command that needed it).
    pub fn is_started(&self) -> bool {
        self.proxy.lock().unwrap_or_else(PoisonError::into_inner).is_some()
    }

    /// The proxy in `slot`, started now if it is not yet.
    fn started<'a>(&self, slot: &'a mut Option<ProxyHandle>) -> Result<&'a ProxyHandle, ToolError> {
        if let Some(proxy) = slot {
            return Ok(proxy);
        }
        let askers: Arc<Askers> = Arc::clone(&self.askers);
        let started = codecoder_netproxy::start(
            self.config.clone(),
            Arc::new(AskCall(Arc::clone(&askers))),
            Arc::new(RecordDenials(askers)),
        )
        .map_err(|err| failed(format!("the managed network did not start: {err}")))?;
        Ok(slot.insert(started))
    }

    /// The confinement for one command of call `label` under `confinement`: when it is a
    /// sandbox with the network off, the same sandbox reaching the network through two fresh
    /// endpoints of the proxy (started now if it is not yet), with the returned lease keeping
    /// them open; otherwise `None` (run under `confinement` as it is).
    pub(crate) fn confine(
        &self,
        confinement: &Confinement,
        label: &str,
        command: &str,
        approver: Option<Approver>,
        may_ask: bool,
    ) -> Result<Option<CommandNetwork>, ToolError> {
        let Confinement::Sandboxed(sandbox) = confinement else { return Ok(None) };
        if sandbox.policy().network {
            return Ok(None);
        }
        let (unix, tcp, environment) = {
            let mut proxy = self.proxy.lock().unwrap_or_else(PoisonError::into_inner);
            let proxy = self.started(&mut proxy)?;
            let endpoint_error =
                |err: codecoder_netproxy::Error| failed(format!("the managed network: {err}"));
            // A proxy inspecting TLS (a rule names paths or methods) has its session CA trusted
            // by the command's clients; the files hold the certificate, never the key.
            let environment = match proxy.ca_files() {
                None => Vec::new(),
                Some(files) => ca_environment(&files.map_err(endpoint_error)?),
            };
            (
                proxy.endpoint(label).map_err(endpoint_error)?,
                proxy.tcp_endpoint(label).map_err(endpoint_error)?,
                environment,
            )
        };
        let Some(socket) = unix.unix_path().map(ToOwned::to_owned) else { return Ok(None) };
        let mut policy = sandbox.policy().clone();
        policy.network_proxy = Some(NetworkProxy { socket, tcp: tcp.tcp_address() });
        let proxied = Sandbox::new(policy, sandbox.backend().clone(), sandbox.stage_exe().into());
        self.askers.lock().insert(
            label.to_owned(),
            Asker {
                command: command.to_owned(),
                approver,
                may_ask,
                covered_by_call_approval: false,
                denials: Vec::new(),
            },
        );
        Ok(Some(CommandNetwork {
            confinement: Confinement::Sandboxed(Arc::new(proxied)),
            label: label.to_owned(),
            askers: Arc::clone(&self.askers),
            environment,
            _unix: unix,
            _tcp: tcp,
        }))
    }
}

/// The managed network of one command of the call `env` runs, when the session has one and
/// the command is sandboxed with the network off (see [`ManagedNetwork::confine`]).
pub(crate) fn for_command(
    config: &ToolsConfig,
    env: &dyn CallEnv,
    command: &str,
) -> Result<Option<CommandNetwork>, ToolError> {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let Some(network) = &config.network else { return Ok(None) };
    let approver = env.approver();
    let number = NEXT.fetch_add(1, Ordering::Relaxed);
    let label = match &approver {
        Some(approver) => format!("{} #{number}", approver.call_id()),
        None => format!("command #{number}"),
    };
    let may_ask = config.escalation.get() == Escalation::Ask;
    network.confine(&config.confinement, &label, command, approver, may_ask)
}

/// `config` for a command that outlives its call (an `exec_command` session, a background
/// job): with `network`, a copy running under its proxied confinement and holding its
/// endpoints (the lease its owner thread keeps); without, `config` itself.
pub(crate) fn leased(
    config: &ToolsConfig,
    network: Option<CommandNetwork>,
) -> std::borrow::Cow<'_, ToolsConfig> {
    match network {
        Some(network) => {
            let mut leased = config.clone();
            leased.confinement = network.confinement.clone();
            leased.network_lease = Some(Arc::new(network));
            std::borrow::Cow::Owned(leased)
        }
        None => std::borrow::Cow::Borrowed(config),
    }
}

/// The proxy address `web_fetch` goes through for the call `env` runs, fetching `url`, when the
/// session has a managed network (its commands are sandboxed with the network off): a loopback
/// endpoint of the session's proxy, whose lease keeps it open. The call's approval covers the
/// URL's host: the person saw it.
pub(crate) fn for_fetch(
    config: &ToolsConfig,
    env: &dyn CallEnv,
    url: &str,
) -> Result<Option<FetchNetwork>, ToolError> {
    let Some(network) = &config.network else { return Ok(None) };
    let Confinement::Sandboxed(sandbox) = &config.confinement else { return Ok(None) };
    if sandbox.policy().network {
        return Ok(None);
    }
    let approver = env.approver();
    let label = match &approver {
        Some(approver) => format!("{} web_fetch", approver.call_id()),
        None => "web_fetch".to_owned(),
    };
    let (endpoint, ca_bundle) = {
        let mut proxy = network.proxy.lock().unwrap_or_else(PoisonError::into_inner);
        let proxy = network.started(&mut proxy)?;
        let proxy_error =
            |err: codecoder_netproxy::Error| failed(format!("the managed network: {err}"));
        // A proxy inspecting TLS answers for the hosts it inspects with the session CA's
        // certificates: the fetch trusts the CA besides the system's roots, as commands do.
        let ca_bundle = match proxy.ca_files() {
            None => None,
            Some(files) => Some(files.map_err(proxy_error)?.bundle),
        };
        (proxy.tcp_endpoint(&label).map_err(proxy_error)?, ca_bundle)
    };
    let Some(address) = endpoint.tcp_address() else { return Ok(None) };
    network.askers.lock().insert(
        label.clone(),
        Asker {
            command: format!("web_fetch {url}"),
            approver,
            may_ask: config.escalation.get() == Escalation::Ask,
            covered_by_call_approval: true,
            denials: Vec::new(),
        },
    );
    Ok(Some(FetchNetwork {
        address,
        label,
        askers: Arc::clone(&network.askers),
        ca_bundle,
        _tcp: endpoint,
    }))
}

/// `web_fetch`'s way out through the session's proxy: the endpoint's address; dropping it closes
/// the endpoint and forgets the call's asker.
pub(crate) struct FetchNetwork {
    address: std::net::SocketAddr,
    label: String,
    askers: Arc<Askers>,
    ca_bundle: Option<std::path::PathBuf>,
    _tcp: Endpoint,
}

impl FetchNetwork {
    /// The proxy's `http://ADDRESS`.
    pub(crate) fn proxy_url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// The system's CA bundle followed by the session CA (PEM), when the proxy inspects TLS.
    pub(crate) fn ca_bundle(&self) -> Option<&std::path::Path> {
        self.ca_bundle.as_deref()
    }

    /// What the model should read about a refused host, if the proxy refused one.
    pub(crate) fn note(&self) -> Option<String> {
        let askers = self.askers.lock();
        let asker = askers.get(&self.label)?;
        denial_note(&asker.denials, asker.may_ask && asker.approver.is_some())
    }
}

impl Drop for FetchNetwork {
    fn drop(&mut self) {
        self.askers.lock().remove(&self.label);
    }
}

/// One command's way out: its proxied confinement and its two endpoints. Dropping it closes the
/// endpoints (and every connection made through them) and forgets the command's asker.
pub(crate) struct CommandNetwork {
    confinement: Confinement,
    label: String,
    askers: Arc<Askers>,
    environment: Vec<(OsString, OsString)>,
    _unix: Endpoint,
    _tcp: Endpoint,
}

impl fmt::Debug for CommandNetwork {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CommandNetwork").field("label", &self.label).finish_non_exhaustive()
    }
}

impl CommandNetwork {
    /// The sandbox the command runs in.
    pub(crate) fn confinement(&self) -> &Confinement {
        &self.confinement
    }

    /// The variables pointing the command's TLS clients at the session CA, when the proxy
    /// inspects TLS; empty otherwise.
    pub(crate) fn environment(&self) -> &[(OsString, OsString)] {
        &self.environment
    }

    /// What the model should read about the command's refused hosts, if any were refused.
    pub(crate) fn note(&self) -> Option<String> {
        let askers = self.askers.lock();
        let asker = askers.get(&self.label)?;
        denial_note(&asker.denials, asker.may_ask && asker.approver.is_some())
    }
}

impl Drop for CommandNetwork {
    fn drop(&mut self) {
        self.askers.lock().remove(&self.label);
    }
}

/// The CA variables of a command whose proxy inspects TLS: the bundle (the system's roots and
/// the session CA) for the clients whose variable replaces their roots, the CA alone for node,
/// which adds it to its own.
fn ca_environment(files: &codecoder_netproxy::CaFiles) -> Vec<(OsString, OsString)> {
    use codecoder_protocol::env;
    let mut out: Vec<(OsString, OsString)> =
        [env::SSL_CERT_FILE, env::REQUESTS_CA_BUNDLE, env::CARGO_HTTP_CAINFO, env::GIT_SSL_CAINFO]
            .into_iter()
            .map(|name| (name.into(), files.bundle.clone().into_os_string()))
            .collect();
    out.push((env::NODE_EXTRA_CA_CERTS.into(), files.certificate.clone().into_os_string()));
    out
}

/// The note on a command's refusals: each `host:port` with its reason, and what to do next.
/// A host a `denied_domains` rule names (its reason reads `… is denied (denied_domains: RULE)`,
/// `DenyReason::Denied`'s words) gets advice of its own: the user's deny wins over any allowance
/// and approval, so asking to allow it cannot help.
fn denial_note(denials: &[(String, String)], asked: bool) -> Option<String> {
    if denials.is_empty() {
        return None;
    }
    let list = denials
        .iter()
        .map(|(target, reason)| format!("{target} ({reason})"))
        .collect::<Vec<_>>()
        .join("; ");
    let (by_rule, others): (Vec<_>, Vec<_>) =
        denials.iter().partition(|(_, reason)| reason.contains(" is denied (denied_domains: "));
    let mut next = Vec::new();
    if !by_rule.is_empty() {
        let targets: Vec<&str> = by_rule.iter().map(|(target, _)| target.as_str()).collect();
        next.push(format!(
            "{} {} denied by the user's config (the `[network] denied_domains` rule named \
             above), which no allowance or approval overrides: do not retry, and do not ask to \
             allow it; if the task cannot be done without it, tell the user.",
            targets.join(", "),
            if targets.len() == 1 { "is" } else { "are" }
        ));
    }
    if !others.is_empty() {
        next.push(if asked {
            "Do not retry these hosts in this session unless the user says so.".to_owned()
        } else {
            "Nobody is asked in this approval mode: if the task needs a host, ask the user to \
             add it to `allowed_domains` under `[network]` in their config.toml (or a preset to \
             `allow_presets`), or to approve it in an interactive session."
                .to_owned()
        });
    }
    Some(format!("[network] The managed network refused: {list}. {}", next.join(" ")))
}

/// The `Decide` of the session's proxy: asks the person through the call that started the
/// command (an approval request with the key `network:HOST`).
struct AskCall(Arc<Askers>);

impl Decide for AskCall {
    fn decide(&self, ask: &Ask<'_>) -> Decision {
        let (command, approver, may_ask, covered_by_call_approval) = {
            let askers = self.0.lock();
            let Some(asker) = askers.get(ask.endpoint) else { return Decision::Deny };
            let Asker { command, approver, may_ask, covered_by_call_approval, .. } = asker;
            (command.clone(), approver.clone(), *may_ask, *covered_by_call_approval)
        };
        let Some(approver) = approver else { return Decision::Deny };
        let host = ask.host;
        let request = EscalationRequest {
            summary: format!("`{}` wants to reach {host}:{}", short(&command), ask.port),
            permission_keys: vec![format!("network:{host}")],
            reason: Some(format!(
                "the command wants to reach {host}:{}, which the managed network's \
                 allowed_domains do not list (to allow it always, add it to `[network] \
                 allowed_domains` in config.toml)",
                ask.port
            )),
            may_ask,
            covered_by_call_approval,
        };
        match approver.request_approval(request, ask.stopped()) {
            ApprovalDecision::AllowOnce => Decision::AllowOnce,
            ApprovalDecision::AllowForSession => Decision::AllowSession,
            ApprovalDecision::Deny
            | ApprovalDecision::DenyWithFeedback { .. }
            | ApprovalDecision::Cancelled => Decision::Deny,
        }
    }
}

/// The first line of `command`, at most 80 characters.
fn short(command: &str) -> String {
    let line = command.lines().next().unwrap_or_default();
    match line.char_indices().nth(80) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None if line.len() < command.len() => format!("{line}…"),
        None => line.to_owned(),
    }
}

/// The `Observe` of the session's proxy: keeps each command's refusals for its result.
struct RecordDenials(Arc<Askers>);

impl Observe for RecordDenials {
    fn observe(&self, event: &NetworkEvent) {
        let Outcome::Denied { reason, .. } = &event.outcome else { return };
        let target = format!("{}:{}", event.host, event.port);
        let mut askers = self.0.lock();
        let Some(asker) = askers.get_mut(&event.endpoint) else { return };
        if !asker.denials.iter().any(|(seen, _)| *seen == target) {
            asker.denials.push((target, reason.to_string()));
        }
    }
}

#[cfg(test)]
mod tests;
