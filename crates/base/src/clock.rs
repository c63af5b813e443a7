//! The one way sleuth writes the time and names the machine in what it records (the store's rows,
//! runs, the viewer's mirror): UTC, RFC 3339 with milliseconds, so records sort as text.

/// Now, as `2026-11-28T04:10:00.123Z`.
pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// This machine's name, for the runs a store records.
pub fn hostname() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .or_else(|| {
            std::fs::read_to_string("/etc/hostname")
                .ok()
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| "localhost".into())
}
