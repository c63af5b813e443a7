//! A coordinator served in process for the API tests, until the returned sender fires or is dropped.

use std::net::{SocketAddr, TcpListener};
use std::time::Duration;

use sleuth::cluster::coordinator::{self, CoordinatorConfig};
use tokio::sync::oneshot;

/// A free address of loopback for a coordinator to listen on.
pub fn free_addr() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
}

/// Serves `cfg` on its listen address and returns once it accepts connections.
pub async fn serve(cfg: CoordinatorConfig) -> oneshot::Sender<()> {
    let addr = cfg.listen;
    let (tx, rx) = oneshot::channel::<()>();
    let shutdown = sleuth::shutdown::Shutdown::new();
    let stop = shutdown.clone();
    tokio::spawn(async move {
        let _ = rx.await;
        stop.drain();
    });
    tokio::spawn(async move {
        let served = coordinator::serve(cfg, shutdown).await;
        if let Err(e) = served {
            eprintln!("coordinator stopped: {e}");
        }
    });
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(addr).await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tx
}
