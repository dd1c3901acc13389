//! Connection set-up rate through a relay (bench/proxy.py):
//!
//! - `connrate serve ADDR`: answers every connection with one byte, then closes.
//! - `connrate client ADDR SECONDS CONCURRENCY`: that many workers, each
//!   connecting, reading to the end and closing, again and again; prints
//!   `{"connections": N, "errors": E, "seconds": T}`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("serve") => serve(&args[2]).await,
        Some("client") => {
            let secs: f64 = args[3].parse().expect("SECONDS");
            let workers: usize = args[4].parse().expect("CONCURRENCY");
            client(&args[2], Duration::from_secs_f64(secs), workers).await
        }
        _ => {
            eprintln!("usage: connrate serve ADDR | connrate client ADDR SECONDS CONCURRENCY");
            std::process::exit(2);
        }
    }
}

async fn serve(addr: &str) {
    let listener = TcpListener::bind(addr).await.expect("bind");
    println!("ready");
    loop {
        if let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let _ = s.write_all(b"y").await;
                let _ = s.shutdown().await;
                let mut sink = [0u8; 16];
                let _ = s.read(&mut sink).await; // the client's FIN
            });
        }
    }
}

async fn client(addr: &str, span: Duration, workers: usize) {
    let ok = Arc::new(AtomicU64::new(0));
    let bad = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let tasks: Vec<_> = (0..workers)
        .map(|_| {
            let (ok, bad, addr) = (ok.clone(), bad.clone(), addr.to_string());
            tokio::spawn(async move {
                while start.elapsed() < span {
                    let one = async {
                        let mut s = TcpStream::connect(&addr).await?;
                        let mut buf = Vec::new();
                        s.read_to_end(&mut buf).await?;
                        Ok::<_, std::io::Error>(buf == b"y")
                    };
                    match tokio::time::timeout(Duration::from_secs(5), one).await {
                        Ok(Ok(true)) => ok.fetch_add(1, Ordering::Relaxed),
                        _ => bad.fetch_add(1, Ordering::Relaxed),
                    };
                }
            })
        })
        .collect();
    for t in tasks {
        let _ = t.await;
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{{\"connections\": {}, \"errors\": {}, \"seconds\": {secs:.3}}}",
        ok.load(Ordering::Relaxed),
        bad.load(Ordering::Relaxed)
    );
}
