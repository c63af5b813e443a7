//! What the benchmarks share.
#![allow(dead_code)] // each bench uses a different part

use std::time::Duration;

use criterion::Criterion;
use futures::future::BoxFuture;
use sleuth::llm::{ChatRequest, ChatResponse, EmbedResponse, Provider, ProviderError, TokenUsage};

/// Criterion draws its plots with plotters, which — built with the text backend `sleuth report` uses —
/// needs a registered font: the report's font lookup registers one; without any, plots are skipped
/// rather than the run failing.
pub fn criterion_config() -> Criterion {
    match sleuth::report::plots::font() {
        Ok(_) => Criterion::default(),
        Err(why) => {
            eprintln!("criterion plots off: {why}");
            Criterion::default().without_plots()
        }
    }
}

/// CPU time used so far by the whole process (all threads), where the platform can tell.
#[cfg(target_os = "linux")]
pub fn process_cpu_time() -> Option<Duration> {
    #[repr(C)]
    struct Timespec {
        tv_sec: i64,
        tv_nsec: i64,
    }
    extern "C" {
        fn clock_gettime(clock: i32, tp: *mut Timespec) -> i32;
    }
    const CLOCK_PROCESS_CPUTIME_ID: i32 = 2;
    let mut ts = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec (two 64-bit fields on 64-bit Linux) to a valid pointer.
    let rc = unsafe { clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    (rc == 0 && cfg!(target_pointer_width = "64"))
        .then(|| Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}

#[cfg(not(target_os = "linux"))]
pub fn process_cpu_time() -> Option<Duration> {
    None
}

/// Answers every request at once with a fixed reply and its usage (120 prompt tokens), so the only
/// cost left is sleuth's own.
pub struct InstantProvider {
    pub reply: &'static str,
    pub completion_tokens: u64,
}

impl Provider for InstantProvider {
    fn name(&self) -> &'static str {
        "instant"
    }

    fn chat<'a>(
        &'a self,
        _req: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(async move {
            Ok(ChatResponse {
                content: self.reply.into(),
                usage: Some(TokenUsage {
                    prompt_tokens: 120,
                    completion_tokens: self.completion_tokens,
                    cached_tokens: 0,
                }),
                logprobs: None,
                notes: Default::default(),
            })
        })
    }

    fn embed<'a>(
        &'a self,
        _model: &'a str,
        inputs: &'a [String],
    ) -> BoxFuture<'a, Result<EmbedResponse, ProviderError>> {
        Box::pin(async move {
            Ok(EmbedResponse {
                vectors: vec![vec![0.0; 8]; inputs.len()],
                prompt_tokens: Some(inputs.len() as u64),
            })
        })
    }
}
