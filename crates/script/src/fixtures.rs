//! A small but complete script, for the tests of this crate and of the crates above it (a `cfg(test)`
//! module is not visible to another crate's tests), and for trying the library out.

use std::path::Path;

use crate::Script;

/// [`TINY`], parsed.
pub fn tiny() -> Script {
    Script::parse(TINY, Path::new("tiny.toml")).expect("tiny script is valid")
}

/// Three characters, one clue, one factual and one inferential question.
pub const TINY: &str = r#"
format = 1
title = "Tiny"
language = "en"
premise = "Lord Ash was found dead in the library."
[[victims]]
name = "Lord Ash"
description = "Found in the library at dawn."
[host]
opening = "Welcome."
clue_announcement = "Here are the clues."
vote_call = "Vote now."
[[characters]]
name = "Ada"
role = "murderer"
public = "The niece."
story = "Ada owed Lord Ash money."
timeline = "At 9 pm Ada read in the garden."
secrets = ["At 10 pm Ada poisoned the brandy."]
[[characters]]
name = "Ben"
role = "civilian"
public = "The butler."
story = "Ben served Lord Ash for twenty years."
timeline = "At 10 pm Ben saw Ada near the brandy decanter."
[[characters]]
name = "Cy"
role = "civilian"
public = "The cook."
story = "Cy cooked the supper."
timeline = "At 8 pm Cy served fish soup to Lord Ash."
[[clues]]
id = "c1"
title = "Decanter"
text = "The brandy smelled of almonds."
about = "Ada"
key = true
[truth]
murderer = "Ada"
narrative = "Ada poisoned the brandy."
[[factual]]
character = "Ben"
question = "Whom did Ben see near the brandy decanter?"
answer = "Ada"
source = "At 10 pm Ben saw Ada near the brandy decanter."
[[inferential]]
question = "Who killed Lord Ash?"
options = ["Ada", "Ben", "Cy"]
answer = "A"
rationale = "Ben saw Ada near the brandy; the brandy smelled of almonds."
"#;
