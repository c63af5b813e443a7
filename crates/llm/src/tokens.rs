//! Local token counting, for providers that report no usage and for the simulated model's honest usage.
//!
//! Uses the cl100k BPE that tiktoken-rs ships inside the crate, so nothing is downloaded at run time.

use super::types::Message;

/// Tokens in a piece of text under cl100k.
pub fn count(text: &str) -> u64 {
    tiktoken_rs::cl100k_base_singleton()
        .encode_ordinary(text)
        .len() as u64
}

/// Prompt tokens of a chat, with OpenAI's per-message framing overhead (3 per message, 3 to prime the reply).
pub fn count_messages(messages: &[Message]) -> u64 {
    messages
        .iter()
        .map(|m| 3 + count(&m.content) + 1)
        .sum::<u64>()
        + 3
}

/// The token ids of a chat as a provider's prompt cache sees them: the messages in the order sent, each
/// a marker of its role (an id outside cl100k's vocabulary, standing for the chat template's role
/// tokens) followed by its content's tokens. Two requests share a cacheable prefix exactly as far as
/// these sequences agree (`llm::gateway`'s prefix tracker hashes them in blocks).
pub fn encode_messages(messages: &[Message]) -> Vec<u32> {
    let bpe = tiktoken_rs::cl100k_base_singleton();
    let mut out = Vec::new();
    for m in messages {
        out.push(ROLE_MARKER + m.role as u32);
        out.extend(bpe.encode_ordinary(&m.content));
    }
    out
}

/// The first of the role markers of [`encode_messages`]: above every cl100k id (~100k).
const ROLE_MARKER: u32 = 1 << 30;

/// The longest prefix of `text` that fits in `budget` tokens, cut at a token boundary.
pub fn truncate(text: &str, budget: u64) -> String {
    let bpe = tiktoken_rs::cl100k_base_singleton();
    let toks = bpe.encode_ordinary(text);
    if toks.len() as u64 <= budget {
        return text.to_string();
    }
    // Decoding a cut in the middle of a multi-byte character fails; back off until it decodes.
    let mut n = budget as usize;
    while n > 0 {
        if let Ok(s) = bpe.decode(&toks[..n]) {
            return s;
        }
        n -= 1;
    }
    String::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_truncates() {
        assert_eq!(count("hello world"), 2);
        let t = truncate("one two three four five", 2);
        assert_eq!(count(&t), 2);
        assert!("one two three four five".starts_with(&t));
        assert_eq!(
            count_messages(&[Message::user("hello world")]),
            3 + 2 + 1 + 3
        );
    }

    #[test]
    fn encoded_messages_mark_roles_and_keep_order() {
        let a = encode_messages(&[Message::system("rules"), Message::user("hello world")]);
        let b = encode_messages(&[Message::user("rules"), Message::user("hello world")]);
        assert_eq!(a.len(), 1 + count("rules") as usize + 1 + 2);
        assert_ne!(a[0], b[0], "the role is part of the prefix");
        assert_eq!(a[1..], b[1..]);
    }

    #[test]
    fn truncation_keeps_whole_chinese_characters() {
        let t = truncate("他在晚上九点离开了图书馆。", 3);
        assert!("他在晚上九点离开了图书馆。".starts_with(&t));
    }
}
