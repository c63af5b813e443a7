//! The process's one TLS crypto provider: rustls with *ring*.
//!
//! Every TLS connection sleuth makes or serves goes through rustls: reqwest to an OpenAI-compatible
//! endpoint (system roots), tonic for the cluster's gRPC (a private CA or the system roots), and redis
//! for `rediss://`. rustls needs a crypto provider, and the crates' default features would each bring
//! aws-lc (a large C build that needs cmake, most of a cold build's time). sleuth compiles *ring* only, and
//! this installs it as the process default, which reqwest requires: built with `rustls-no-provider`, it
//! panics when it builds a client and no default is installed. tonic and redis find ring on their own,
//! and use the default when one is installed.
//!
//! Call [`install_crypto_provider`] before building an HTTP client; the binary calls it first thing, and
//! The OpenAI provider's constructor (`llm/openai/`) calls it too, for library users and tests.

use std::sync::Once;

/// Installs rustls' *ring* provider as the process default, once; later calls do nothing.
///
/// When the embedding program has already installed a provider of its own, that one stays: rustls
/// allows one default per process, and it is the program's choice.
pub fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Err means a default is already installed (by the program); keeping it is right.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn installs_a_default_provider_that_reqwest_can_use() {
        install_crypto_provider();
        install_crypto_provider();
        let provider = rustls::crypto::CryptoProvider::get_default().expect("a default provider");
        // ring's suites; aws-lc would also offer them, so check the provider has the usual TLS 1.3 ones.
        assert!(provider
            .cipher_suites
            .iter()
            .any(|s| s.suite() == rustls::CipherSuite::TLS13_AES_128_GCM_SHA256));
        reqwest::Client::builder()
            .build()
            .expect("reqwest builds its TLS configuration from the installed provider");
    }
}
