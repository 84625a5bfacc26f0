//! Every Lua script, embedded from the Python package (the one copy), with its SHA1 for EVALSHA. Each
//! script is sent as the shared prelude (`lua/prelude.lua`) followed by its own file.

use std::sync::LazyLock;

use redis::Cmd;

/// The one table of scripts: each role (an [`Id`], so call sites cannot misspell a name) with its file,
/// `<protocol>/<op>-<numkeys>.lua`, embedded as the shared prelude followed by the file.
macro_rules! scripts {
    ($($id:ident => ($proto:literal, $op:literal),)*) => {
        /// Scripts by role.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Id {
            $($id,)*
        }

        /// The scripts, by `<protocol>/<op>-<numkeys>` name, in [`Id`] order.
        const SOURCES: &[(&str, &str)] = &[$((
            concat!($proto, "/", $op),
            concat!(
                include_str!("../python/ferroq/protocol/lua/prelude.lua"),
                include_str!(concat!("../python/ferroq/protocol/lua/", $proto, "/", $op, ".lua"))
            ),
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

/// One embedded script.
#[derive(Debug)]
pub struct Script {
    pub name: &'static str,
    pub source: &'static str,
    pub sha: String,
}

static SCRIPTS: LazyLock<Vec<Script>> = LazyLock::new(|| {
    SOURCES
        .iter()
        .map(|&(name, source)| Script {
            name,
            source,
            sha: sha1_smol::Sha1::from(source).digest().to_string(),
        })
        .collect()
});

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
    cmd.arg("LOAD").arg(script.source);
    cmd
}

/// `EVAL` with the script's source in place of the `EVALSHA` call `cmd` of script `id` (its other arguments
/// unchanged): the last resort when the cache keeps being flushed, since EVAL cannot meet NOSCRIPT.
pub fn eval_with_source(id: Id, cmd: &Cmd) -> Cmd {
    let mut eval = redis::cmd("EVAL");
    eval.arg(id.script().source);
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
