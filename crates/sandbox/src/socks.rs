//! The stage binary's SOCKS5 connect mode, ssh's `ProxyCommand` for a proxied sandbox:
//! `EXE __codecoder-socks-connect HOST PORT` opens a SOCKS5 `CONNECT HOST:PORT` (the name
//! resolved by the proxy) through the proxy `ALL_PROXY` names (`socks5h://ADDRESS`), then copies
//! its stdin to the connection and the connection to its stdout. `ALL_PROXY` does not reach ssh,
//! and `nc` may be absent, so a proxied command's `GIT_SSH_COMMAND` names this mode
//! ([`git_ssh_command`]).
//!
//! Invariants: only the proxy's address is connected to; the process ends when the connection's
//! read side ends (the stdin copier, which may be blocked in a read, ends with the process).

use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};

use codecoder_protocol::env;

/// The hidden first argument that turns the product's executable into the connect mode.
pub const SOCKS_CONNECT_MARKER: &str = "__codecoder-socks-connect";

/// The `GIT_SSH_COMMAND` that runs ssh through the proxy, `exe` being the product's executable
/// (visible inside the sandbox, as the stage is): `ssh -o ProxyCommand='EXE MARKER %h %p'`,
/// quoted for the shell git and ssh each run it with.
pub fn git_ssh_command(exe: &std::path::Path) -> String {
    let proxy_command =
        format!("{} {SOCKS_CONNECT_MARKER} %h %p", shell_quote(&exe.to_string_lossy()));
    format!("ssh -o {}", shell_quote(&format!("ProxyCommand={proxy_command}")))
}

/// `text` in single quotes for a POSIX shell.
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// Runs the connect mode with `args` (`HOST PORT`); returns the exit code.
pub(crate) fn run(args: &[OsString]) -> Result<i32, String> {
    let [host, port] = args else {
        return Err(format!("usage: {SOCKS_CONNECT_MARKER} HOST PORT"));
    };
    let host = host.to_str().ok_or("the host is not UTF-8")?;
    let port: u16 = port
        .to_str()
        .and_then(|port| port.parse().ok())
        .ok_or_else(|| format!("bad port {}", port.to_string_lossy()))?;
    let proxy = [env::ALL_PROXY, env::ALL_PROXY_LOWER]
        .iter()
        .find_map(|name| std::env::var(name).ok().filter(|value| !value.is_empty()))
        .ok_or("no ALL_PROXY to connect through")?;
    let address = proxy
        .strip_prefix("socks5h://")
        .or_else(|| proxy.strip_prefix("socks5://"))
        .ok_or_else(|| format!("ALL_PROXY {proxy:?} is not socks5h://ADDRESS"))?
        .trim_end_matches('/');
    let stream = connect(address, host, port)
        .map_err(|err| format!("connecting to {host}:{port} through {address}: {err}"))?;
    let mut upstream = stream.try_clone().map_err(|err| err.to_string())?;
    // Not joined: a read of stdin cannot be interrupted, and the process ends when the
    // connection does, ending the thread with it.
    let _detached = std::thread::Builder::new().name("socks-stdin".to_owned()).spawn(move || {
        let _ = io::copy(&mut io::stdin().lock(), &mut upstream);
        let _ = upstream.shutdown(Shutdown::Write);
    });
    let mut downstream = stream;
    let mut stdout = io::stdout().lock();
    io::copy(&mut downstream, &mut stdout).map_err(|err| err.to_string())?;
    stdout.flush().map_err(|err| err.to_string())?;
    Ok(0)
}

/// A TCP connection to `host:port` through the SOCKS5 proxy at `address` (no authentication,
/// the name sent for the proxy to resolve).
fn connect(address: &str, host: &str, port: u16) -> io::Result<TcpStream> {
    let invalid = |message: &str| io::Error::new(io::ErrorKind::InvalidData, message.to_owned());
    let mut stream = TcpStream::connect(address)?;
    stream.write_all(&[5, 1, 0])?;
    let mut choice = [0_u8; 2];
    stream.read_exact(&mut choice)?;
    if choice != [5, 0] {
        return Err(invalid("the proxy refused SOCKS5 without authentication"));
    }
    let name = u8::try_from(host.len()).map_err(|_| invalid("the host name is too long"))?;
    let mut request = vec![5, 1, 0, 3, name];
    request.extend_from_slice(host.as_bytes());
    request.extend_from_slice(&port.to_be_bytes());
    stream.write_all(&request)?;
    let mut reply = [0_u8; 4];
    stream.read_exact(&mut reply)?;
    if reply[1] != 0 {
        return Err(io::Error::new(
            io::ErrorKind::ConnectionRefused,
            format!("the proxy refused the connection (SOCKS5 reply {})", reply[1]),
        ));
    }
    let bound = match reply[3] {
        1 => 4,
        4 => 16,
        3 => {
            let mut length = [0_u8; 1];
            stream.read_exact(&mut length)?;
            usize::from(length[0])
        }
        _ => return Err(invalid("a bad SOCKS5 reply")),
    };
    let mut rest = vec![0_u8; bound + 2];
    stream.read_exact(&mut rest)?;
    Ok(stream)
}
