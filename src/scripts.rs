//! Every Lua script, embedded from the Python package (the one copy), with its SHA1 for EVALSHA. Each
//! script is sent as the blocks of the shared prelude (`lua/prelude.lua`) that it uses, followed by its own
//! file (see [`with_helpers`]).

use std::sync::LazyLock;

use redis::Cmd;

/// The one table of scripts: each role (an [`Id`], so call sites cannot misspell a name) with its file,
/// `<protocol>/<op>-<numkeys>.lua`, embedded with the shared prelude, which [`with_helpers`] cuts to the blocks
/// the file uses.
macro_rules! scripts {
    ($($id:ident => ($proto:literal, $op:literal),)*) => {
        /// Scripts by role.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Id {
            $($id,)*
        }

        /// The scripts' files, by `<protocol>/<op>-<numkeys>` name, in [`Id`] order.
        const SOURCES: &[(&str, &str)] = &[$((
            concat!($proto, "/", $op),
            include_str!(concat!("../python/ferroq/protocol/lua/", $proto, "/", $op, ".lua")),
        ),)*];
    };
}

scripts! {
    Claim => ("rfq", "claim-8n"),
    Commit => ("rfq", "commit-6n"),
    DeadLetter => ("rfq", "dead_letter-8n"),
    Extend => ("rfq", "extend-5"),
    Harvest => ("rfq", "harvest-8"),
    HarvestAll => ("rfq", "harvest_all-7"),
    Inspect => ("rfq", "inspect-5"),
    Publish => ("rfq", "publish-2n"),
    PublishOne => ("rfq", "publish_one-3"),
    Purge => ("rfq", "purge-6"),
    Release => ("rfq", "release-8"),
    Resume => ("rfq", "resume-6"),
    Stats => ("rfq", "stats-8"),
    RsmqAttributes => ("rsmq", "attributes-2"),
    RsmqCreate => ("rsmq", "create-3"),
    RsmqDelete => ("rsmq", "delete-2"),
    RsmqDeleteQueue => ("rsmq", "delete_queue-3"),
    RsmqReceive => ("rsmq", "receive-4"),
    RsmqSend => ("rsmq", "send-3"),
    RsmqSetAttributes => ("rsmq", "set_attributes-2"),
    RsmqVisibility => ("rsmq", "visibility-2"),
    StreamAck => ("streams", "ack-1"),
    StreamAutoclaim => ("streams", "autoclaim-2"),
    StreamDeadLetter => ("streams", "dead_letter-2"),
    StreamPublish => ("streams", "publish-2"),
}

/// The shared prelude: helpers, each script sent with those it uses.
const PRELUDE: &str = include_str!("../python/ferroq/protocol/lua/prelude.lua");

/// One embedded script, as sent.
#[derive(Debug)]
pub struct Script {
    pub name: &'static str,
    pub source: String,
    pub sha: String,
}

static SCRIPTS: LazyLock<Vec<Script>> = LazyLock::new(|| {
    SOURCES
        .iter()
        .map(|&(name, file)| {
            let source = with_helpers(PRELUDE, file);
            let sha = sha1_smol::Sha1::from(&source).digest().to_string();
            Script { name, source, sha }
        })
        .collect()
});

/// `script` after the blocks of `prelude` that it uses, directly or through another block, in the prelude's
/// order. Redis runs a script's whole text at every call, and each function defined there is a closure made
/// anew: the whole prelude before every script cost redis-server 12,000-14,000 instructions per call (a
/// single publish's script call made 69,000 in all), counted with callgrind.
///
/// A block starts, after an empty line (or at the file's first line), at a line that begins with `--` or
/// `local `, and runs to the next; it is used when its code (comments left out) or the script's names one of
/// its definitions (`local function name(` or `local name =`). Blocks of comments only (the prelude's notes)
/// are never sent. The Python twin is `ferroq.protocol.with_helpers`: both must give the same text, since the
/// SHA is the script's name on the server.
pub fn with_helpers(prelude: &str, script: &str) -> String {
    let lines: Vec<&str> = prelude.split_inclusive('\n').collect();
    let blank = |line: &str| line.trim().is_empty();
    let starts: Vec<usize> = (0..lines.len())
        .filter(|&i| (lines[i].starts_with("--") || lines[i].starts_with("local ")) && (i == 0 || blank(lines[i - 1])))
        .collect();
    let blocks: Vec<String> = starts
        .iter()
        .zip(starts.iter().skip(1).chain(std::iter::once(&lines.len())))
        .map(|(&a, &b)| lines[a..b].concat())
        .collect();
    let defined: Vec<Vec<&str>> = blocks.iter().map(|b| definitions(b)).collect();
    let mut used = vec![false; blocks.len()];
    let mut code = vec![without_comments(script)];
    let mut found = true;
    while found {
        found = false;
        for (k, names) in defined.iter().enumerate() {
            if !used[k]
                && names
                    .iter()
                    .any(|name| code.iter().any(|text| names_identifier(text, name)))
            {
                used[k] = true;
                found = true;
                code.push(without_comments(&blocks[k]));
            }
        }
    }
    let mut out: String = blocks
        .iter()
        .zip(&used)
        .filter(|(_, &u)| u)
        .map(|(b, _)| b.as_str())
        .collect();
    out.push_str(script);
    out
}

fn is_identifier_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The names a block defines at its top level: `local function name(` or `local name =`.
fn definitions(block: &str) -> Vec<&str> {
    block
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("local ")?;
            let rest = rest.strip_prefix("function ").unwrap_or(rest);
            let end = rest.find(|c: char| !is_identifier_char(c)).unwrap_or(rest.len());
            let name = &rest[..end];
            name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                .then_some(name)
        })
        .collect()
}

/// Lua source without its comments (`--[[ ... ]]` and `-- ...` to the end of the line).
fn without_comments(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    let mut rest = source;
    while let Some(at) = rest.find("--") {
        out.push_str(&rest[..at]);
        let comment = &rest[at..];
        let long_end = comment.starts_with("--[[").then(|| comment.find("]]")).flatten();
        rest = match long_end {
            Some(end) => &comment[end + 2..],
            // A line comment, as is an unclosed `--[[`.
            None => comment.find('\n').map_or("", |end| &comment[end..]),
        };
    }
    out.push_str(rest);
    out
}

/// Whether `code` has the identifier `name` (not as part of a longer one).
fn names_identifier(code: &str, name: &str) -> bool {
    code.match_indices(name).any(|(at, _)| {
        let before = code[..at].chars().next_back().is_none_or(|c| !is_identifier_char(c));
        let after = code[at + name.len()..]
            .chars()
            .next()
            .is_none_or(|c| !is_identifier_char(c));
        before && after
    })
}

impl Id {
    pub fn script(self) -> &'static Script {
        &SCRIPTS[self as usize]
    }
}

/// Every script, in name order.
pub fn all() -> &'static [Script] {
    &SCRIPTS
}

/// `EVALSHA <sha> <nkeys>`; the caller appends keys then arguments.
pub fn evalsha(id: Id, nkeys: usize) -> Cmd {
    evalsha_sized(id, nkeys, 0, 0)
}

/// [`evalsha`] with room for `args` more arguments of `bytes` bytes in all, so a call of many keys does not
/// grow its buffers argument by argument.
pub fn evalsha_sized(id: Id, nkeys: usize, args: usize, bytes: usize) -> Cmd {
    let sha = &id.script().sha;
    // "EVALSHA", the SHA and nkeys (at most 20 digits).
    let mut cmd = Cmd::with_capacity(3 + args, "EVALSHA".len() + sha.len() + 20 + bytes);
    cmd.arg("EVALSHA").arg(sha).arg(nkeys);
    cmd
}

/// `SCRIPT LOAD` of one script (after NOSCRIPT).
pub fn load_cmd(script: &Script) -> Cmd {
    let mut cmd = redis::cmd("SCRIPT");
    cmd.arg("LOAD").arg(&script.source);
    cmd
}

/// `EVAL` with the script's source in place of the `EVALSHA` call `cmd` of script `id` (its other arguments
/// unchanged): the last resort when the cache keeps being flushed, since EVAL cannot meet NOSCRIPT.
pub fn eval_with_source(id: Id, cmd: &Cmd) -> Cmd {
    let mut eval = redis::cmd("EVAL");
    eval.arg(&id.script().source);
    for arg in cmd.args_iter().skip(2) {
        if let redis::Arg::Simple(bytes) = arg {
            eval.arg(bytes);
        }
    }
    eval
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_match_names() {
        let expected = [
            (Id::Claim, "rfq/claim-8n"),
            (Id::Commit, "rfq/commit-6n"),
            (Id::DeadLetter, "rfq/dead_letter-8n"),
            (Id::Extend, "rfq/extend-5"),
            (Id::Harvest, "rfq/harvest-8"),
            (Id::HarvestAll, "rfq/harvest_all-7"),
            (Id::Inspect, "rfq/inspect-5"),
            (Id::Publish, "rfq/publish-2n"),
            (Id::PublishOne, "rfq/publish_one-3"),
            (Id::Purge, "rfq/purge-6"),
            (Id::Release, "rfq/release-8"),
            (Id::Resume, "rfq/resume-6"),
            (Id::Stats, "rfq/stats-8"),
            (Id::RsmqAttributes, "rsmq/attributes-2"),
            (Id::RsmqCreate, "rsmq/create-3"),
            (Id::RsmqDelete, "rsmq/delete-2"),
            (Id::RsmqDeleteQueue, "rsmq/delete_queue-3"),
            (Id::RsmqReceive, "rsmq/receive-4"),
            (Id::RsmqSend, "rsmq/send-3"),
            (Id::RsmqSetAttributes, "rsmq/set_attributes-2"),
            (Id::RsmqVisibility, "rsmq/visibility-2"),
            (Id::StreamAck, "streams/ack-1"),
            (Id::StreamAutoclaim, "streams/autoclaim-2"),
            (Id::StreamDeadLetter, "streams/dead_letter-2"),
            (Id::StreamPublish, "streams/publish-2"),
        ];
        for (id, name) in expected {
            assert_eq!(id.script().name, name);
        }
        assert_eq!(all().len(), expected.len());
    }

    #[test]
    fn eval_with_source_keeps_the_arguments() {
        let mut sha = evalsha(Id::Extend, 2);
        sha.arg("k1").arg("k2").arg(5000).arg("id");
        let eval = eval_with_source(Id::Extend, &sha);
        let args: Vec<Vec<u8>> = eval
            .args_iter()
            .map(|a| match a {
                redis::Arg::Simple(b) => b.to_vec(),
                _ => panic!("only plain arguments"),
            })
            .collect();
        let source = Id::Extend.script().source.as_bytes().to_vec();
        let expected: Vec<Vec<u8>> = vec![
            b"EVAL".to_vec(),
            source,
            b"2".to_vec(),
            b"k1".to_vec(),
            b"k2".to_vec(),
            b"5000".to_vec(),
            b"id".to_vec(),
        ];
        assert_eq!(args, expected);
    }

    #[test]
    fn sha_is_sha1_of_the_file_bytes() {
        let s = Id::Publish.script();
        assert_eq!(s.sha.len(), 40);
        assert_eq!(s.sha, sha1_smol::Sha1::from(s.source.as_bytes()).digest().to_string());
        // Known vector, so the hashing itself is what Python's hashlib.sha1 computes.
        assert_eq!(
            sha1_smol::Sha1::from("abc").digest().to_string(),
            "a9993e364706816aba3e25717850c26c9cd0d89d"
        );
    }

    /// The same prelude and texts as the Python test `test_scripts_are_sent_with_the_prelude_blocks_they_use`.
    const PRELUDE: &str = include_str!("../python/ferroq/protocol/lua/fixtures/prelude_blocks.lua");

    #[test]
    fn with_helpers_takes_the_blocks_used() {
        let a = "-- the first helper\nlocal function helper_a(x)\n  return x\n\nend\n\n";
        let b = "-- the second: uses the third\nlocal function helper_b(x)\n  return helper_c(x) -- not helper_a: a comment\nend\n\n";
        let c = "--[[ a long comment naming helper_a ]]\nlocal shared = {}\nlocal function helper_c(x)\n  shared[x] = true\nend\n\n";
        let cases = [
            ("return 1\n", String::new()),
            ("-- helper_a in a comment only\nreturn 1\n", String::new()),
            ("--[[ helper_b ]] return helper_a(1)\n", a.to_string()),
            ("return helper_b(1)\n", format!("{b}{c}")),
            ("shared[1] = helper_a(2)\n", format!("{a}{c}")),
            (
                "return helper_a_longer()\n",
                "local function helper_a_longer()\nend\n".to_string(),
            ),
            ("return xhelper_a(1) or helper_a_(2)\n", String::new()),
        ];
        for (script, blocks) in cases {
            assert_eq!(with_helpers(PRELUDE, script), format!("{blocks}{script}"), "{script}");
        }
    }

    #[test]
    fn comments_are_left_out_of_the_names_looked_for() {
        assert_eq!(without_comments("a -- b\nc --[[ d\n e ]] f --[[ g"), "a \nc  f ");
        assert!(names_identifier("x = f(1)", "f"));
        assert!(!names_identifier("x = ff(1) + f_(2)", "f"));
    }

    #[test]
    fn every_lua_file_is_embedded() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/python/ferroq/protocol/lua");
        let mut files: Vec<String> = Vec::new();
        for proto in ["rfq", "rsmq", "streams"] {
            files.extend(
                std::fs::read_dir(format!("{root}/{proto}"))
                    .unwrap()
                    .filter_map(|e| e.ok()?.file_name().into_string().ok())
                    .filter_map(|n| n.strip_suffix(".lua").map(|n| format!("{proto}/{n}"))),
            );
        }
        files.sort();
        let names: Vec<&str> = all().iter().map(|s| s.name).collect();
        assert_eq!(files, names);
    }
}
