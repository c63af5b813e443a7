//! OpenAI's Batch API through async-openai's files and batches calls (`llm::batch::BatchEndpoint`).
//!
//! Bodies are read as `serde_json::Value` (`*_byot`), not async-openai's types: compatible servers
//! (vLLM, mock-llm) leave out fields OpenAI's types require, and sleuth reads only a few.

use std::collections::BTreeMap;
use std::time::Duration;

use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use async_openai::traits::RequestOptionsBuilder;
use async_openai::types::files::{CreateFileRequest, FileInput, FilePurpose};
use async_openai::Client;
use futures::future::BoxFuture;
use serde_json::{json, Value};

use super::failure_of;
use crate::provider::ProviderError;
use crate::provider::{BatchEndpoint, RemoteBatch};

/// Pages of 100 batches read when looking for one a killed run created: the newest 1,000.
const LIST_PAGES: usize = 10;

/// The batch interface of one endpoint.
pub struct OpenAiBatch {
    pub(super) client: Client<OpenAIConfig>,
    pub(super) timeout: Duration,
}

impl OpenAiBatch {
    fn error(&self, e: OpenAIError) -> ProviderError {
        failure_of(e, self.timeout).into_error()
    }
}

fn batch_of(v: Value) -> Result<RemoteBatch, ProviderError> {
    RemoteBatch::from_json(&v)
        .ok_or_else(|| ProviderError::Decode(format!("not a batch object: {v}")))
}

impl BatchEndpoint for OpenAiBatch {
    fn upload<'a>(
        &'a self,
        name: String,
        jsonl: Vec<u8>,
    ) -> BoxFuture<'a, Result<String, ProviderError>> {
        Box::pin(async move {
            let req = CreateFileRequest {
                file: FileInput::from_vec_u8(name, jsonl),
                purpose: FilePurpose::Batch,
                expires_after: None,
            };
            let v: Value = self
                .client
                .files()
                .create_byot(req)
                .await
                .map_err(|e| self.error(e))?;
            v.get("id")
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| ProviderError::Decode(format!("file upload without an id: {v}")))
        })
    }

    fn create<'a>(
        &'a self,
        input_file: &'a str,
        metadata: BTreeMap<String, String>,
    ) -> BoxFuture<'a, Result<RemoteBatch, ProviderError>> {
        Box::pin(async move {
            let body = json!({
                "input_file_id": input_file,
                "endpoint": crate::provider::batch::CHAT_URL,
                "completion_window": "24h",
                "metadata": metadata,
            });
            let v: Value = self
                .client
                .batches()
                .create_byot(body)
                .await
                .map_err(|e| self.error(e))?;
            batch_of(v)
        })
    }

    fn retrieve<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<RemoteBatch, ProviderError>> {
        Box::pin(async move {
            let v: Value = self
                .client
                .batches()
                .retrieve_byot(id)
                .await
                .map_err(|e| self.error(e))?;
            batch_of(v)
        })
    }

    fn list(&self) -> BoxFuture<'_, Result<Vec<RemoteBatch>, ProviderError>> {
        Box::pin(async move {
            let mut out = Vec::new();
            let mut after: Option<String> = None;
            for _ in 0..LIST_PAGES {
                let mut query = vec![("limit".to_string(), "100".to_string())];
                if let Some(a) = &after {
                    query.push(("after".to_string(), a.clone()));
                }
                let v: Value = self
                    .client
                    .batches()
                    .query(&query)
                    .map_err(|e| self.error(e))?
                    .list_byot()
                    .await
                    .map_err(|e| self.error(e))?;
                let page: Vec<RemoteBatch> = v
                    .get("data")
                    .and_then(Value::as_array)
                    .map(|d| d.iter().filter_map(RemoteBatch::from_json).collect())
                    .unwrap_or_default();
                after = page.last().map(|b| b.id.clone());
                out.extend(page);
                let more = v.get("has_more").and_then(Value::as_bool).unwrap_or(false);
                if !more || after.is_none() {
                    break;
                }
            }
            Ok(out)
        })
    }

    fn content<'a>(&'a self, file_id: &'a str) -> BoxFuture<'a, Result<Vec<u8>, ProviderError>> {
        Box::pin(async move {
            self.client
                .files()
                .content(file_id)
                .await
                .map(|b| b.to_vec())
                .map_err(|e| self.error(e))
        })
    }
}
