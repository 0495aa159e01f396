//! Unit tests of the relay's bridging, on loopback with a stand-in unix-socket server.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, Shutdown, TcpListener, TcpStream};
use std::os::unix::net::UnixListener;

#[test]
fn bridges_each_connection_to_the_socket_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("proxy.sock");
    let unix = UnixListener::bind(&socket).unwrap();
    // The stand-in answers each connection with what it read, upper-cased, once the client has
    // half-closed: the bridge must carry the half-close through.
    let server = std::thread::spawn(move || {
        for _ in 0..2 {
            let (mut stream, _) = unix.accept().unwrap();
            let mut request = String::new();
            stream.read_to_string(&mut request).unwrap();
            stream.write_all(request.to_uppercase().as_bytes()).unwrap();
        }
    });
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let address = listener.local_addr().unwrap();
    let socket_for_relay = socket.clone();
    // Never joined: `serve` runs until the test process ends, as the relay does until its
    // command does.
    std::thread::spawn(move || crate::relay::serve(&listener, &socket_for_relay));
    for word in ["hello", "again"] {
        let mut client = TcpStream::connect(address).unwrap();
        client.write_all(word.as_bytes()).unwrap();
        client.shutdown(Shutdown::Write).unwrap();
        let mut reply = String::new();
        client.read_to_string(&mut reply).unwrap();
        assert_eq!(reply, word.to_uppercase());
    }
    server.join().unwrap();
}

#[test]
fn an_unreachable_proxy_closes_the_connection() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("missing.sock");
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let address = listener.local_addr().unwrap();
    std::thread::spawn(move || crate::relay::serve(&listener, &socket));
    let mut client = TcpStream::connect(address).unwrap();
    let mut reply = Vec::new();
    // Closed without a byte (or reset): either way nothing comes back.
    let read = client.read_to_end(&mut reply);
    assert!(read.is_err() || reply.is_empty(), "{read:?} {reply:?}");
}
