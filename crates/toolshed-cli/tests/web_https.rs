//! webfetch over real HTTPS: a local TLS server (Python's `ssl`) with a certificate from a test
//! CA made by `openssl`. Trusted through `SSL_CERT_FILE`, the page is fetched and converted; not
//! trusted, the call fails with a reason the model and the user can act on.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write as _};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

const SERVER: &str = r#"
import http.server, ssl, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"<html><body><nav>menu</nav><h1>Secure</h1><p>Served over TLS.</p></body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
srv = http.server.HTTPServer(("127.0.0.1", 0), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(sys.argv[1], sys.argv[2])
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
print(srv.server_address[1], flush=True)
srv.serve_forever()
"#;

/// Runs `openssl` with `args` in `dir`; false when it is missing or fails.
fn openssl(dir: &Path, args: &[&str]) -> bool {
    Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A test CA (`ca.pem`) and a certificate for 127.0.0.1 signed by it (`srv.pem`, `srv.key`).
fn make_certificates(dir: &Path) -> bool {
    std::fs::write(
        dir.join("ext.cnf"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    let rsa = "rsa:2048";
    let ca = ["-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=toolshed-test-ca"];
    openssl(dir, &[&["req", "-x509", "-newkey", rsa, "-nodes"][..], &ca].concat())
        && openssl(
            dir,
            &["req", "-newkey", rsa, "-nodes", "-keyout", "srv.key", "-out", "srv.csr", "-subj", "/CN=127.0.0.1"],
        )
        && openssl(
            dir,
            &[
                "x509",
                "-req",
                "-in",
                "srv.csr",
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-out",
                "srv.pem",
                "-days",
                "2",
                "-extfile",
                "ext.cnf",
            ],
        )
}

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the TLS server; its port.
fn serve(dir: &Path) -> (Server, u16) {
    let mut child = Command::new("python3")
        .args(["-c", SERVER, "srv.pem", "srv.key"])
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let port = line.trim().parse().unwrap_or_else(|e| panic!("{e}: {line:?}"));
    (Server(child), port)
}

fn webfetch(root: &Path, url: &str, ca: Option<&Path>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolshed"));
    cmd.env("TOOLSHED_TRUST_PROJECT", "1");
    cmd.args(["--root", root.to_str().unwrap(), "call", "webfetch", &format!(r#"{{"url": "{url}"}}"#)])
        .current_dir(root)
        .env("XDG_CONFIG_HOME", root.join(".xdg-config"))
        .env("TOOLSHED_DATA_DIR", root.join(".data"))
        .env_remove("SSL_CERT_DIR");
    match ca {
        Some(ca) => cmd.env("SSL_CERT_FILE", ca),
        None => cmd.env_remove("SSL_CERT_FILE"),
    };
    cmd.output().unwrap()
}

#[test]
fn https_pages_are_fetched_from_a_trusted_server_and_an_untrusted_one_is_explained() {
    let certs = tempfile::tempdir().unwrap();
    if !make_certificates(certs.path()) {
        let _ =
            writeln!(std::io::stderr(), "SKIP https_pages_...: openssl is not available to make a test certificate");
        return;
    }
    let (_server, port) = serve(certs.path());
    let root = tempfile::tempdir().unwrap();
    let url = format!("https://127.0.0.1:{port}/");

    let ok = webfetch(root.path(), &url, Some(&certs.path().join("ca.pem")));
    let stdout = String::from_utf8_lossy(&ok.stdout);
    assert!(ok.status.success(), "{stdout}{}", String::from_utf8_lossy(&ok.stderr));
    assert!(stdout.contains("# Secure") && stdout.contains("Served over TLS."), "{stdout}");
    assert!(!stdout.contains("menu"), "navigation is dropped: {stdout}");

    let refused = webfetch(root.path(), &url, None);
    assert_eq!(refused.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("certificate"), "{stderr}");
    assert!(stderr.contains("SSL_CERT_FILE"), "the way to trust a private CA is named: {stderr}");
}
