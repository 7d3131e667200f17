//! DEBUG DIGEST and DEBUG DIGEST-VALUE: Redis's dataset digest (debug.c), computed the same
//! way so the two servers can be compared. Independent of insertion order: keys, set members,
//! hash fields and sorted-set members are combined with XOR; list elements in order.

use sha1::{Digest, Sha1};

use super::{Entry, Keyspace, Value};

type D = [u8; 20];

fn xor_digest(digest: &mut D, data: &[u8]) {
    let hash = Sha1::digest(data);
    for (d, h) in digest.iter_mut().zip(hash.iter()) {
        *d ^= h;
    }
}

fn mix_digest(digest: &mut D, data: &[u8]) {
    xor_digest(digest, data);
    let hash = Sha1::digest(&digest[..]);
    digest.copy_from_slice(&hash);
}

/// Redis's `xorObjectDigest`: the value's type, content and whether it expires.
fn object_digest(digest: &mut D, entry: &Entry) {
    let type_id: u32 = match entry.value {
        Value::Str(_) => 0,
        Value::List(_) => 1,
        Value::Set(_) => 2,
        Value::ZSet(_) => 3,
        Value::Hash(_) => 4,
        Value::Stream(_) => 6,
    };
    mix_digest(digest, &type_id.to_be_bytes());
    match &entry.value {
        Value::Str(s) => mix_digest(digest, s.bytes()),
        Value::List(l) => {
            for item in l.iter() {
                mix_digest(digest, item);
            }
        }
        Value::Set(s) => {
            for m in s.iter() {
                xor_digest(digest, m);
            }
        }
        Value::ZSet(z) => {
            for (m, score) in z.iter() {
                let mut ele = [0u8; 20];
                mix_digest(&mut ele, m);
                mix_digest(&mut ele, crate::util::format_g(score, 17).as_bytes());
                xor_digest(digest, &ele);
            }
        }
        Value::Hash(h) => {
            for (f, v) in h.iter() {
                let mut ele = [0u8; 20];
                mix_digest(&mut ele, f);
                mix_digest(&mut ele, v);
                xor_digest(digest, &ele);
            }
        }
        // Entries only, as Redis's debug.c: `ms.seq`, then each field and value.
        Value::Stream(s) => {
            for (id, fields) in s.all() {
                mix_digest(digest, format!("{}.{}", id.ms, id.seq).as_bytes());
                for (f, v) in fields {
                    mix_digest(digest, &f);
                    mix_digest(digest, &v);
                }
            }
        }
    }
    if entry.has_expire() {
        xor_digest(digest, b"!!expire!!");
    }
}

/// The digest of every database (all zeros when empty).
pub fn dataset_digest(ks: &Keyspace) -> String {
    let mut fin = [0u8; 20];
    for (i, db) in ks.dbs.iter().enumerate() {
        if db.is_empty() {
            continue;
        }
        mix_digest(&mut fin, &(i as u32).to_be_bytes());
        for (key, entry) in db.iter() {
            let mut d = [0u8; 20];
            mix_digest(&mut d, key);
            object_digest(&mut d, entry);
            xor_digest(&mut fin, &d);
        }
    }
    crate::util::hex(&fin)
}

/// The digest of one key's value (all zeros when absent).
pub fn value_digest(entry: Option<&Entry>) -> String {
    let mut d = [0u8; 20];
    if let Some(e) = entry {
        object_digest(&mut d, e);
    }
    crate::util::hex(&d)
}
