//! Names of the environment variables this crate sets in confined children. (Kept here rather
//! than in `protocol::env` because this crate depends on none of ours but `stdx`; the integrator
//! may re-export them there.)

/// Set in every confined child: `bwrap`, `landlock` or `seatbelt`.
pub const CODECODER_SANDBOX: &str = "CODECODER_SANDBOX";
/// Set to `1` in a confined child when the network is off.
pub const CODECODER_SANDBOX_NETWORK_DISABLED: &str = "CODECODER_SANDBOX_NETWORK_DISABLED";
