//! Which conversation a request belongs to, and who may continue it.
//!
//! The key is, in order: the `x-hookwire-session` header; for a request
//! that continues an earlier answer (Responses `previous_response_id`),
//! the conversation that answer was returned in; otherwise a digest of
//! the client credential and the conversation's first entry, so that
//! every request of one conversation (each replays its history from the
//! same start) maps to the same session. A continued answer the gateway
//! no longer remembers opens a conversation of its own, derived from the
//! credential and that id. The owner is the SHA-256 of the client's
//! credential, or of the listed client (`crate::principal`): only it may continue or end the
//! conversation, or continue an answer returned in it — checked before a
//! named session is used (the core asks the table first).

use axum::http::HeaderMap;
use sha2::{Digest, Sha256};

use super::transcript::digest;
use crate::api::TurnRequest;
use crate::error::Error;
use crate::headers::{MAX_SESSION_ID, SESSION_HEADER};

/// The session id the client named in `x-hookwire-session`, checked.
pub(crate) fn named(headers: &HeaderMap) -> Result<Option<String>, Error> {
    let Some(v) = headers.get(SESSION_HEADER) else {
        return Ok(None);
    };
    let id = v.to_str().unwrap_or_default();
    let ok = !id.is_empty()
        && id.len() <= MAX_SESSION_ID
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._:-".contains(&b));
    if !ok {
        return Err(Error::BadRequest(format!(
            "{SESSION_HEADER} must be 1-{MAX_SESSION_ID} characters of [A-Za-z0-9._:-]"
        )));
    }
    Ok(Some(id.to_owned()))
}

/// The key of a request's conversation (see the module docs);
/// `continued` is the conversation of the earlier answer the request
/// continues, when the gateway remembers it (its owner checked).
pub(crate) fn key(
    headers: &HeaderMap,
    owner: &[u8; 32],
    view: &TurnRequest,
    continued: Option<String>,
) -> Result<String, Error> {
    if let Some(id) = named(headers)? {
        return Ok(id);
    }
    if let Some(key) = continued {
        return Ok(key);
    }
    let mut h = Sha256::new();
    h.update(owner);
    match &view.continues {
        Some(previous) => {
            h.update(b"continues:");
            h.update(previous.as_bytes());
        }
        None => {
            if let Some(first) = view.entries.first() {
                h.update(digest(first));
            }
        }
    }
    let digest = h.finalize();
    Ok(format!("derived-{}", hex::encode(&digest[..16])))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{Entry, Text};
    use crate::principal::owner_of_credential as owner_of;
    use axum::http::HeaderValue;

    fn view(first: &str, continues: Option<&str>) -> TurnRequest {
        TurnRequest {
            model: "m".into(),
            stream: false,
            tools: Vec::new(),
            entries: vec![
                Entry::User(Text {
                    text: first.into(),
                    other_parts: Vec::new(),
                }),
                Entry::User(Text {
                    text: "later".into(),
                    other_parts: Vec::new(),
                }),
            ],
            continues: continues.map(str::to_owned),
        }
    }

    #[test]
    fn a_conversation_keeps_its_key_as_it_grows_and_owners_differ() {
        let h = HeaderMap::new();
        let a = owner_of(Some(b"Bearer a"));
        let b = owner_of(Some(b"Bearer b"));
        let k1 = key(&h, &a, &view("hi", None), None).unwrap();
        let mut longer = view("hi", None);
        longer.entries.truncate(1);
        assert_eq!(k1, key(&h, &a, &longer, None).unwrap());
        assert!(k1.starts_with("derived-") && k1.len() == "derived-".len() + 32);
        assert_ne!(k1, key(&h, &b, &view("hi", None), None).unwrap());
        assert_ne!(k1, key(&h, &a, &view("other", None), None).unwrap());
        assert_ne!(owner_of(None), a);
    }

    #[test]
    fn the_header_wins_and_is_checked() {
        let mut h = HeaderMap::new();
        h.insert(SESSION_HEADER, HeaderValue::from_static("conv-1:a.b_c"));
        let k = key(
            &h,
            &owner_of(None),
            &view("hi", Some("r")),
            Some("other".into()),
        );
        assert_eq!(k.unwrap(), "conv-1:a.b_c");
        for bad in ["a b", "x/y", ""] {
            h.insert(SESSION_HEADER, HeaderValue::from_str(bad).unwrap());
            assert!(matches!(named(&h), Err(Error::BadRequest(_))), "{bad:?}");
        }
        h.insert(
            SESSION_HEADER,
            HeaderValue::from_str(&"a".repeat(MAX_SESSION_ID + 1)).unwrap(),
        );
        assert!(named(&h).is_err());
    }

    #[test]
    fn a_continued_answer_maps_to_its_conversation_or_to_one_of_its_own() {
        let h = HeaderMap::new();
        let o = owner_of(Some(b"k"));
        let known = key(
            &h,
            &o,
            &view("x", Some("resp_1")),
            Some("derived-abc".to_owned()),
        );
        assert_eq!(known.unwrap(), "derived-abc");
        let unknown = key(&h, &o, &view("x", Some("resp_2")), None).unwrap();
        assert_ne!(unknown, key(&h, &o, &view("x", None), None).unwrap());
        assert_eq!(
            unknown,
            key(&h, &o, &view("y", Some("resp_2")), None).unwrap()
        );
    }
}
